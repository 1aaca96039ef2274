#!/usr/bin/env python3
"""Prints how many tests the last ctest run skipped, grouped by reason.

Reads ctest's Testing/Temporary/LastTest.log: each test's output is a block that starts at
"N/M Testing: NAME". A test skipped when GoogleTest said "[  SKIPPED ]" (its reason is the text
GTEST_SKIP() printed after "<file>:<line>: Skipped") or when ctest marked it skipped (the
suites' SKIP_REGULAR_EXPRESSION markers "SKIPPED:" and "RLX_TEST_SKIPPED", whose reason is the
rest of that line). Plain Python 3 of the system: it runs before any venv exists. It never fails
the run: any problem is a line on stderr and exit status 0.
"""
import re
import sys
from collections import OrderedDict

BLOCK_START = re.compile(r"^\d+/\d+ Testing: (.*)$")
GTEST_REASON = re.compile(r"^.*:\d+: Skipped$")
MARKER = re.compile(r"(?:RLX_TEST_SKIPPED|SKIPPED:)\s*:?\s*(.*)$")


def blocks(lines):
    name, body = None, []
    for line in lines:
        m = BLOCK_START.match(line)
        if m:
            if name is not None:
                yield name, body
            name, body = m.group(1).split("  #")[0].strip(), []
        elif name is not None:
            body.append(line)
    if name is not None:
        yield name, body


def skip_reason(body):
    """The reason the block's test skipped, or None when it did not."""
    status_skipped = any(l.strip() in ("Test Skipped.", "Test Skipped") for l in body)
    for i, line in enumerate(body):
        if GTEST_REASON.match(line):
            reason = []
            # The message runs to GoogleTest's next "[...]" line (a skip in a global
            # environment's SetUp has no "[  SKIPPED ]" line and may print it twice).
            for follow in body[i + 1:]:
                if follow.startswith("[") or follow.startswith("<end of output>"):
                    break
                if follow.strip() and follow.strip() not in reason:
                    reason.append(follow.strip())
            return " ".join(reason) or "(no reason given)"
    if any(l.startswith("[  SKIPPED ]") for l in body):
        return "(no reason given)"
    for line in body:
        m = MARKER.search(line)
        if m and not line.startswith("Command:"):
            return m.group(1).strip() or "(no reason given)"
    return "(no reason given)" if status_skipped else None


def main(argv):
    path = argv[1] if len(argv) > 1 else "Testing/Temporary/LastTest.log"
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            lines = f.read().splitlines()
    except OSError as e:
        print(f"skip_summary: cannot read {path}: {e.strerror}", file=sys.stderr)
        return 0
    by_reason = OrderedDict()
    for name, body in blocks(lines):
        reason = skip_reason(body)
        if reason is not None:
            by_reason.setdefault(reason, []).append(name)
    total = sum(len(v) for v in by_reason.values())
    if total == 0:
        print("skipped tests: none")
        return 0
    print(f"skipped tests: {total}, by reason:")
    for reason, names in sorted(by_reason.items(), key=lambda kv: -len(kv[1])):
        shown = ", ".join(names[:3]) + (f", and {len(names) - 3} more" if len(names) > 3 else "")
        print(f"  {len(names):4d}  {reason}")
        print(f"        {shown}")
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv))
    except Exception as e:  # the summary is a courtesy; the suite's result is ctest's
        print(f"skip_summary: could not summarise the skips: {e}", file=sys.stderr)
        sys.exit(0)

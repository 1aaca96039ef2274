"""The ``rlx`` console script: runs the rlx binary the wheel carries, with the same arguments."""

import os
import sys


def main():
    binary = os.path.join(os.path.dirname(os.path.abspath(__file__)), "bin", "rlx")
    if not os.access(binary, os.X_OK):
        sys.stderr.write(f"rlx: error: the rlx binary is missing from this install ({binary})\n"
                         "hint: reinstall the rlx package\n")
        return 2
    os.execv(binary, [binary] + sys.argv[1:])


if __name__ == "__main__":
    sys.exit(main())

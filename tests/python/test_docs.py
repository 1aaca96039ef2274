# docs/python.md's examples, run as doctests from the repository root (where their paths lead).
import doctest
import os

from reference_files import ROOT


def test_python_guide_examples(monkeypatch):
    monkeypatch.chdir(ROOT)
    result = doctest.testfile(os.path.join(ROOT, "docs", "python.md"), module_relative=False,
                              optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert result.attempted > 0
    assert result.failed == 0

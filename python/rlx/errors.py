"""rlx's errors as exception classes.

Each kind of error the ``rlx`` CLI reports has a class here, raised with the message the CLI
prints after ``rlx: error:``. ``hint`` is its ``hint:`` line ("" when none), ``node`` the graph
node the message names (a CompileError's refused node; None when it names none) and ``kind`` the
``kind`` of ``rlx ... --json``'s error record. A CompileError's message lists each path's refusal.
"""


class Error(Exception):
    """Base class of every error rlx raises."""

    def __init__(self, message, kind="user", hint="", node=None, where=""):
        super().__init__(message)
        self.message = message
        self.kind = kind
        self.hint = hint
        self.node = node
        self.where = where  # file:line where rlx raised it, for bug reports


class UsageError(Error, ValueError):
    """A malformed request (the CLI's usage errors)."""


class UserError(Error, ValueError):
    """Something the caller can fix: a missing file, a wrong input, an unknown target."""


class CompileError(Error):
    """No lowering path is legal for a node on the chosen target."""


class UnsupportedError(Error):
    """The target or its device cannot do what was asked."""


class DeviceError(Error):
    """The device or its driver failed while running."""


class PluginError(Error):
    """A plugin failed in a way it did not classify (a bug or a broken install)."""


class InternalError(Error):
    """A bug in rlx."""


class OutOfMemoryError(Error, MemoryError):
    """rlx ran out of host memory."""


_BY_KIND = {
    "usage": UsageError,
    "user": UserError,
    "compile": CompileError,
    "unsupported": UnsupportedError,
    "device": DeviceError,
    "plugin": PluginError,
    "internal": InternalError,
    "out_of_memory": OutOfMemoryError,
}


def class_for(kind):
    """The exception class for an error record's kind (the C++ module raises through this)."""
    return _BY_KIND.get(kind, InternalError)

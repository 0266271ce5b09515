"""The workbench's error family: every error raised on purpose names what failed, where, and the fix.

``WorkbenchError`` is the one base class. ``workbench.run`` prints any of them as one line
(``<kind> error: <what> (<where>). Fix: <fix>``), marks the MLflow run FAILED with the message as
a tag and exits 2; any other exception is a bug and keeps its traceback. Each subclass is one kind
of input a user controls: a config value, a corpus file, audio, model weights, a device profile,
a phone, the runner protocol, the on-device runner.

This module imports nothing from the workbench, so every layer may raise these errors.
"""

from __future__ import annotations


class WorkbenchError(Exception):
    """An error a user can fix: ``what`` failed, at ``where`` (a config key, a file, a device), and
    ``fix`` says how. ``kept`` (optional) says what partial results survived and how to continue."""

    kind = "workbench"

    def __init__(self, what: str, where: str = "", fix: str = "", kept: str = "") -> None:
        self.what, self.where, self.fix, self.kept = what, where, fix, kept
        super().__init__(self.line())

    def line(self) -> str:
        """The one line a user reads: what, where, and the fix."""
        text = f"{self.where}: {self.what}" if self.where else self.what
        if self.fix and "Fix:" not in text:
            text = f"{text}. Fix: {self.fix}"
        return text

    def headline(self) -> str:
        """``<kind> error: <line>``, and a second ``kept:`` line when partial results survived."""
        text = f"{self.kind} error: {self.line()}"
        return f"{text}\nkept: {self.kept}" if self.kept else text

    def __reduce__(self):  # picklable across process pools (joblib, Ray): all four fields and any extra
        return (_rebuild, (type(self), self.what, self.where, self.fix, self.kept), dict(self.__dict__))


def _rebuild(cls: type[WorkbenchError], what: str, where: str, fix: str, kept: str) -> WorkbenchError:
    # A subclass may also derive from an OS error (MissingWeightsError is a FileNotFoundError): only
    # its most specific builtin base may allocate it, so try them in MRO order.
    for base in cls.__mro__:
        if base.__module__ == "builtins":
            try:
                err = base.__new__(cls)
                break
            except TypeError:
                continue
    WorkbenchError.__init__(err, what, where, fix, kept)
    return err


class ConfigError(WorkbenchError, ValueError):
    """A bad config value; the message starts with the dotted key to fix."""

    kind = "config"

    def __init__(self, key: str, problem: str, fix: str = "") -> None:
        super().__init__(problem, where=key, fix=fix)
        self.key = key


class DataError(WorkbenchError, ValueError):
    """A corpus, transcript or window that cannot be used as it is."""

    kind = "data"


class AudioError(DataError):
    """An audio file that is empty, corrupt, too long, at the wrong rate, or holds NaN/Inf."""

    kind = "audio"


class ModelError(WorkbenchError, RuntimeError):
    """Model weights that are missing, unreadable, or do not fit the configured pair."""

    kind = "model"


class ProfileError(WorkbenchError, ValueError):
    """A device cost profile that is missing, malformed, or does not price what a run needs."""

    kind = "profile"


class PhoneError(WorkbenchError, RuntimeError):
    """A phone that is unplugged, unauthorized, full, or gone mid-run."""

    kind = "phone"


class ProtocolError(WorkbenchError, ValueError):
    """A runner request or reply that breaks PROTOCOL.md."""

    kind = "protocol"


class MismatchError(WorkbenchError, AssertionError):
    """A scheme of ours committed output that differs from the target's greedy output (a bug, never
    a user's input): the run is FAILED, with what it measured kept."""

    kind = "exactness"


class RunnerError(WorkbenchError, RuntimeError):
    """The on-device runner failed to build, start, or finish."""

    kind = "runner"

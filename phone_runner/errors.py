"""phone_runner's errors, in the workbench's one error family (``workbench.errors``).

``ProtocolError`` keeps the protocol's (where, problem) order: ``where`` names the request field or
the output line (``runner output line 7``). ``PhoneError`` and ``RunnerError`` are the family's own.
"""

from __future__ import annotations

from workbench import errors as _family
from workbench.errors import PhoneError, RunnerError


class ProtocolError(_family.ProtocolError):
    """A request or output line that breaks protocol version 1 (``PROTOCOL.md``)."""

    def __init__(self, where: str, problem: str, fix: str = "") -> None:
        super().__init__(problem, where=where, fix=fix)

    def __reduce__(self):
        return (type(self), (self.where, self.what, self.fix))


__all__ = ["PhoneError", "ProtocolError", "RunnerError"]

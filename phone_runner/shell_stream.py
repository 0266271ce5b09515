"""One shell command on a phone, read as it runs: stdout lines, stderr and the exit status.

adb's ``shell:`` service takes one command string: adbutils quotes each argument of the argv list
(``shlex.quote``), so no config value is ever parsed by the phone's shell (PROTOCOL.md, Invocation).
With shell protocol v2 (adb's ``shell_v2`` feature) stdout, stderr and the exit status arrive as
packets (1 byte id, 4 byte little-endian length, payload); without it the stream is stdout alone
and ends when the command does.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator

import adbutils

STDOUT, STDERR, EXIT = 1, 2, 3  # shell protocol v2 packet ids


class ShellStream:
    """stdout lines (and stderr, exit code) of a shell command, v2 packets or a v1 byte stream."""

    def __init__(self, dev: adbutils.AdbDevice, argv: list[str], v2: bool) -> None:
        from adbutils._utils import list2cmdline  # shlex.quote per argument

        self.cmd = list2cmdline(argv)
        self.v2 = v2
        if v2:
            self.conn = dev.open_transport()
            self.conn.send_command(f"shell,v2,raw:{self.cmd}")
            self.conn.check_okay()
        else:
            self.conn = dev.open_shell(self.cmd)
        self.exit_code: int | None = None
        self.stderr = bytearray()
        self.buf = bytearray()  # stdout after its last newline: a line still arriving

    def _read(self, n: int) -> bytes:
        data = bytearray()
        while len(data) < n:
            chunk = self.conn.conn.recv(n - len(data))
            if not chunk:
                raise EOFError
            data += chunk
        return bytes(data)

    def chunks(self, idle_timeout: float) -> Iterator[bytes]:
        """stdout as it arrives; a silence of ``idle_timeout`` seconds raises ``TimeoutError``."""
        self.conn.conn.settimeout(idle_timeout)
        while True:
            if self.v2:
                head = self._read(5)
                kind, n = head[0], struct.unpack("<I", head[1:])[0]
                data = self._read(n) if n else b""
                if kind == STDOUT:
                    yield data
                elif kind == STDERR:
                    self.stderr += data
                elif kind == EXIT:
                    self.exit_code = data[0] if data else 255
                    return
            else:
                data = self.conn.conn.recv(65536)
                if not data:
                    return
                yield data

    def lines(self, idle_timeout: float) -> Iterator[list[bytes]]:
        """The complete stdout lines of each chunk (none when the chunk ended no line); a partial
        last line waits in ``buf``."""
        for data in self.chunks(idle_timeout):
            self.buf += data
            *complete, rest = bytes(self.buf).split(b"\n")
            self.buf = bytearray(rest)
            yield complete

    def stderr_tail(self) -> str:
        """The last three stderr lines, for an error message ("none" when there was none)."""
        tail = bytes(self.stderr).decode(errors="replace").strip().splitlines()[-3:]
        return " | ".join(tail) or "none"

    def close(self) -> None:
        try:
            self.conn.close()  # the phone's adbd kills the command when its stream closes
        except OSError:
            pass

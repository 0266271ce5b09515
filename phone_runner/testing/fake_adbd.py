"""A device-side adb daemon on loopback TCP: the real adb server treats it as a phone.

``adb connect 127.0.0.1:<port>`` makes the server open a TCP transport and speak the device
protocol (ADB messages: CNXN / AUTH / OPEN / OKAY / WRTE / CLSE, 24-byte little-endian headers).
This module implements the device side of it:

* ``shell:<cmd>`` (v1: raw output stream) and ``shell,v2,...:<cmd>`` (v2: packets with stdout,
  stderr and the exit code), run by :class:`~phone_runner.testing.minishell.Shell` in the
  sandbox that stands in for ``/data/local/tmp``;
* ``sync:`` with STAT, LIST, SEND and RECV (what adbutils uses);
* an unauthorized device (answers CNXN with AUTH and never accepts) and a full disk.

Stopping the daemon closes every transport: the adb server sees the phone unplugged.
"""

from __future__ import annotations

import socket
import struct
import threading
from collections.abc import Callable
from dataclasses import dataclass, field

from .minishell import Sandbox, Shell

A_CNXN, A_AUTH, A_OPEN, A_OKAY, A_CLSE, A_WRTE = (struct.unpack("<I", c)[0] for c in
                                                  (b"CNXN", b"AUTH", b"OPEN", b"OKAY", b"CLSE", b"WRTE"))
A_VERSION = 0x01000001  # no checksums (adb >= 1.0.36 skips them for this version)
MAX_PAYLOAD = 256 * 1024
CHUNK = 64 * 1024
FEATURES = "shell_v2,cmd"  # no stat_v2/ls_v2: sync stays on the v1 requests adbutils sends
AUTH_TOKEN = 1


def pack(cmd: int, arg0: int, arg1: int, data: bytes = b"") -> bytes:
    return struct.pack("<6I", cmd, arg0, arg1, len(data), sum(data) & 0xFFFFFFFF, cmd ^ 0xFFFFFFFF) + data


def _recv_exact(sock: socket.socket, n: int) -> bytes:
    buf = bytearray()
    while len(buf) < n:
        chunk = sock.recv(n - len(buf))
        if not chunk:
            raise ConnectionError("transport closed")
        buf += chunk
    return bytes(buf)


@dataclass
class Stream:
    local: int
    remote: int
    conn: Transport
    inbox: bytearray = field(default_factory=bytearray)
    cond: threading.Condition = field(default_factory=threading.Condition)
    acked: bool = True
    closed: bool = False
    shell: Shell | None = None

    def write(self, data: bytes) -> None:
        """Send WRTE packets, each after the host acknowledged the previous one (flow control)."""
        for i in range(0, len(data), CHUNK):
            with self.cond:
                while not self.acked and not self.closed:
                    self.cond.wait(0.5)
                if self.closed:
                    raise ConnectionError("stream closed by the host")
                self.acked = False
            self.conn.send(A_WRTE, self.local, self.remote, data[i : i + CHUNK])

    def read(self, n: int) -> bytes:
        with self.cond:
            while len(self.inbox) < n and not self.closed:
                self.cond.wait(0.5)
            if len(self.inbox) < n:
                raise ConnectionError("stream closed by the host")
            out = bytes(self.inbox[:n])
            del self.inbox[:n]
            return out

    def close(self) -> None:
        with self.cond:
            was = self.closed
            self.closed = True
            self.cond.notify_all()
        if not was:
            self.conn.send(A_CLSE, self.local, self.remote)


class Transport:
    """One TCP connection from the adb server."""

    def __init__(self, sock: socket.socket, daemon: FakeAdbd) -> None:
        self.sock = sock
        self.daemon = daemon
        self.lock = threading.Lock()
        self.streams: dict[int, Stream] = {}
        self.next_id = 1
        self.online = False

    def send(self, cmd: int, a0: int, a1: int, data: bytes = b"") -> None:
        with self.lock:
            self.sock.sendall(pack(cmd, a0, a1, data))

    def serve(self) -> None:
        try:
            while True:
                cmd, a0, a1, n, _crc, _magic = struct.unpack("<6I", _recv_exact(self.sock, 24))
                data = _recv_exact(self.sock, n) if n else b""
                self.handle(cmd, a0, a1, data)
        except (ConnectionError, OSError):
            pass
        finally:
            self.shutdown()

    def shutdown(self) -> None:
        for s in list(self.streams.values()):
            with s.cond:
                s.closed = True
                s.cond.notify_all()
            if s.shell is not None:
                s.shell.kill()
        self.streams.clear()
        try:
            self.sock.close()
        except OSError:
            pass

    def handle(self, cmd: int, a0: int, a1: int, data: bytes) -> None:
        d = self.daemon
        if cmd == A_CNXN:
            if d.authorized:
                self.online = True
                self.send(A_CNXN, A_VERSION, MAX_PAYLOAD, d.banner())
            else:
                self.send(A_AUTH, AUTH_TOKEN, 0, b"\x00" * 20)  # a token to sign; never accepted
        elif cmd == A_AUTH:
            # The server first offers signatures (type 2): refuse each with a new token. Then it
            # sends its public key (type 3): a phone shows its RSA dialog, and nobody presses it.
            if not d.authorized and a0 == 2:
                self.send(A_AUTH, AUTH_TOKEN, 0, b"\x01" * 20)
        elif cmd == A_OPEN and self.online:
            service = data.rstrip(b"\x00").decode(errors="replace")
            local = self.next_id
            self.next_id += 1
            opened = Stream(local, a0, self)
            self.streams[local] = opened
            self.send(A_OKAY, local, a0)
            threading.Thread(target=self.daemon.service, args=(opened, service), daemon=True,
                             name=f"fake-adbd-{service[:20]}").start()
        elif cmd == A_OKAY:
            s = self.streams.get(a1)
            if s is not None:
                with s.cond:
                    s.acked = True
                    s.cond.notify_all()
        elif cmd == A_WRTE:
            s = self.streams.get(a1)
            if s is not None:
                with s.cond:
                    s.inbox += data
                    s.cond.notify_all()
                self.send(A_OKAY, a1, a0)
        elif cmd == A_CLSE:
            s = self.streams.pop(a1, None)
            if s is not None:
                with s.cond:
                    s.closed = True
                    s.cond.notify_all()
                if s.shell is not None:
                    s.shell.kill()  # the host hung up (timeout, Ctrl-C): stop the command


class FakeAdbd:
    """Listens on ``127.0.0.1:port`` until :meth:`stop`; serves the sandbox's shell and files."""

    def __init__(self, box: Sandbox, *, port: int = 0, serial: str = "LOOPBACK", authorized: bool = True,
                 product: str = "loopback", model: str = "Loopback", device: str = "loopback") -> None:
        self.box = box
        self.authorized = authorized
        self.serial = serial
        self.names = (product, model, device)
        self._sock = _listen_socket(port)
        self.port = self._sock.getsockname()[1]
        self._transports: list[Transport] = []
        self._thread: threading.Thread | None = None
        self.on_service: Callable[[str], None] | None = None  # test hook: every service opened

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    def banner(self) -> bytes:
        p, m, d = self.names
        return f"device::ro.product.name={p};ro.product.model={m};ro.product.device={d};features={FEATURES}".encode()

    def start(self) -> FakeAdbd:
        self._sock.listen(8)
        self._thread = threading.Thread(target=self._accept, daemon=True, name="fake-adbd")
        self._thread.start()
        return self

    def _accept(self) -> None:
        while True:
            try:
                sock, _ = self._sock.accept()
            except OSError:
                return
            t = Transport(sock, self)
            self._transports.append(t)
            threading.Thread(target=t.serve, daemon=True, name="fake-adbd-transport").start()

    def stop(self) -> None:
        """Unplug: stop listening, drop every transport, kill running commands."""
        for how in (lambda: self._sock.shutdown(socket.SHUT_RDWR), self._sock.close):
            try:
                how()  # shutdown wakes the accept() in progress; close alone would not
            except OSError:
                pass
        if self._thread is not None:
            self._thread.join(5)
        for t in self._transports:
            try:
                t.sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            t.shutdown()
        self._transports.clear()

    # services ----------------------------------------------------------------------------
    def service(self, s: Stream, name: str) -> None:
        if self.on_service is not None:
            self.on_service(name)
        try:
            if name.startswith("shell"):
                self._shell(s, name)
            elif name == "sync:":
                from .sync_service import serve_sync

                serve_sync(s, self.box)
            else:
                s.write(f"fake adbd: service {name.split(':')[0]!r} not supported\n".encode())
        except (ConnectionError, OSError):
            pass
        finally:
            try:
                s.close()
            except OSError:
                pass

    def _shell(self, s: Stream, name: str) -> None:
        head, _, cmd = name.partition(":")
        v2 = "v2" in head.split(",")
        if v2:
            def emit(sid: int, data: bytes) -> None:
                s.write(bytes([sid]) + struct.pack("<I", len(data)) + data)
        else:
            def emit(sid: int, data: bytes) -> None:
                s.write(data)  # v1: one stream, like a pty-less phone shell
        sh = Shell(self.box, emit)
        s.shell = sh
        rc = sh.run(cmd) if cmd.strip() else 0
        if v2:
            s.write(bytes([3]) + struct.pack("<I", 1) + bytes([rc & 0xFF]))


def _listen_socket(port: int) -> socket.socket:
    """Bound to ``port``, or to a free loopback port outside 5555-5585 (the adb server probes
    those for emulators and would attach to the daemon on its own)."""
    if 5555 <= port <= 5585:
        raise ValueError(f"port {port} is in 5555-5585, which the adb server scans for emulators; pick another")
    while True:
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(("127.0.0.1", port))
        if port or not 5555 <= sock.getsockname()[1] <= 5585:
            return sock
        sock.close()

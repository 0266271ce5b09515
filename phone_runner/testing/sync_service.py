"""The ``sync:`` service of the loopback device: STAT, LIST, SEND, RECV, QUIT (adb file sync v1).

Requests are ``ID(4) + u32 length + payload``. A missing file stats as all zeros (that is what
makes adbutils' ``sync.pull`` of a missing file create an empty folder -- the host checks first).
A SEND larger than the sandbox's free space fails with "No space left on device", like a phone.
"""

from __future__ import annotations

import os
import stat
import struct
import time
import uuid
from typing import Protocol

from .minishell import Sandbox


class Stream(Protocol):
    """What the sync service needs of one adb stream (``fake_adbd.Stream`` is one)."""

    def write(self, data: bytes) -> None: ...

    def read(self, n: int) -> bytes: ...

CHUNK = 64 * 1024


def _fail(s: Stream, msg: str) -> None:
    data = msg.encode()
    s.write(b"FAIL" + struct.pack("<I", len(data)) + data)


def serve_sync(s: Stream, box: Sandbox) -> None:
    while True:
        head = s.read(8)
        req, n = head[:4], struct.unpack("<I", head[4:])[0]
        if req == b"QUIT":
            return
        arg = s.read(n).decode(errors="replace")
        if req == b"STAT":
            _stat(s, box, arg)
        elif req == b"LIST":
            _list(s, box, arg)
        elif req == b"SEND":
            _send(s, box, arg)
        elif req == b"RECV":
            _recv(s, box, arg)
        else:
            _fail(s, f"unknown sync request {req!r}")
            return


def _host(box: Sandbox, path: str):
    try:
        return box.host(path)
    except PermissionError:
        return None


def _stat(s: Stream, box: Sandbox, path: str) -> None:
    p = _host(box, path)
    if p is None or not p.exists():
        s.write(b"STAT" + struct.pack("<III", 0, 0, 0))
        return
    st = p.stat()
    s.write(b"STAT" + struct.pack("<III", st.st_mode & 0xFFFFFFFF, st.st_size & 0xFFFFFFFF, int(st.st_mtime)))


def _list(s: Stream, box: Sandbox, path: str) -> None:
    p = _host(box, path)
    if p is not None and p.is_dir():
        for name in [".", "..", *sorted(c.name for c in p.iterdir())]:
            st = (p / name).stat()
            raw = name.encode()
            s.write(b"DENT" + struct.pack("<IIII", st.st_mode, st.st_size & 0xFFFFFFFF, int(st.st_mtime), len(raw))
                    + raw)
    s.write(b"DONE" + struct.pack("<IIII", 0, 0, 0, 0))


def _send(s: Stream, box: Sandbox, arg: str) -> None:
    path, _, mode_s = arg.rpartition(",")
    if not path:
        path, mode_s = arg, str(stat.S_IFREG | 0o644)
    dest = _host(box, path)
    tmp = None
    received = 0
    failure = None if dest is not None else f"{path}: outside the device sandbox (Permission denied)"
    if dest is not None and box.is_read_only(path):
        failure, dest = f"{path}: Read-only file system", None
    if dest is not None:
        dest.parent.mkdir(parents=True, exist_ok=True)
        tmp = dest.with_name(f".{dest.name}.{uuid.uuid4().hex}.part")
    fh = open(tmp, "wb") if tmp is not None else None  # noqa: SIM115
    try:
        while True:
            head = s.read(8)
            req, n = head[:4], struct.unpack("<I", head[4:])[0]
            if req == b"DONE":
                mtime = n
                break
            if req != b"DATA":
                failure = f"unexpected sync request {req!r} during SEND"
                break
            data = s.read(n)
            received += n
            if failure is None and received > box.free_kb() * 1024:
                failure = f"{path}: No space left on device"
            if failure is None and fh is not None:
                fh.write(data)
    finally:
        if fh is not None:
            fh.close()
    if failure is not None:
        if tmp is not None and tmp.exists():
            tmp.unlink()
        _fail(s, failure)
        return
    assert tmp is not None and dest is not None
    os.chmod(tmp, int(mode_s) & 0o7777)
    os.utime(tmp, (time.time(), mtime or time.time()))
    os.replace(tmp, dest)
    s.write(b"OKAY" + struct.pack("<I", 0))


def _recv(s: Stream, box: Sandbox, path: str) -> None:
    p = _host(box, path)
    if p is None or not p.is_file():
        _fail(s, f"remote object '{path}' does not exist")
        return
    with open(p, "rb") as fh:
        for block in iter(lambda: fh.read(CHUNK), b""):
            s.write(b"DATA" + struct.pack("<I", len(block)) + block)
    s.write(b"DONE" + struct.pack("<I", 0))

"""The loopback device's shell: a small POSIX-like interpreter confined to a sandbox root.

An adb ``shell:`` request is one command string that the phone's ``sh`` parses. This interpreter
parses it the same way (quotes, backslashes, ``;``, ``&&``, ``||``, ``>``/``>>``, ``$?``, ``$VAR``
and ``$(...)`` command substitution; ``shell_syntax``), so a host that builds shell strings badly is
caught here exactly as on a phone: an injected ``; touch x`` or ``$(touch x)`` really runs. What it
can run is confined: builtins act on device paths mapped under the sandbox root (``sandbox``), and
the only programs it starts are files inside the sandbox (pushed runners) and ``python3`` (a device
that has Python, like Termux), with the working directory inside the sandbox.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

from .sandbox import Sandbox
from .shell_syntax import ShellSyntaxError, Word, cut_command, tokenize

DEVICE_PREFIXES = ("/data/", "/sdcard/", "/sys/", "/proc/")
REDIRECTIONS = (">", ">>", "1>", "1>>", "2>", "2>>")
Emit = Callable[[int, bytes], None]


@dataclass
class Command:
    """A simple command's arguments and where its output goes."""

    args: list[str] = field(default_factory=list)
    out_file: tuple[str, str] | None = None  # (device path, open mode) of a ``>`` / ``>>`` redirection
    err_to_out: bool = False  # ``2>&1``
    err_to_file: bool = False  # ``2>&1`` after ``>``: stderr joins stdout in the file (sh reads left to right)


def parse_command(toks: list[Word | str]) -> Command:
    """Words become arguments; a redirection takes the word after it. The loopback shell has no
    pipes, background jobs or input redirection: those operators are a ``ShellSyntaxError``."""
    cmd = Command()
    i = 0
    while i < len(toks):
        t = toks[i]
        if isinstance(t, Word):
            cmd.args.append(t.text)
            i += 1
            continue
        if t in ("|", "&", "<"):
            raise ShellSyntaxError(f"operator {t!r} is not supported by the loopback shell")
        if t in REDIRECTIONS:
            if i + 1 == len(toks):
                raise ShellSyntaxError(f"syntax error: {t!r} at the end of the command names no file")
            _redirect(cmd, t, toks[i + 1])
        i += 2
    return cmd


def _redirect(cmd: Command, op: str, target: Word | str) -> None:
    if op in ("2>", "2>>"):
        if isinstance(target, str):
            raise ShellSyntaxError("bad redirection")
        if target.text == "&1" and not target.quoted:
            cmd.err_to_out = True
            cmd.err_to_file = cmd.out_file is not None
        return  # stderr to a file: dropped (no caller reads it back)
    if not isinstance(target, Word):
        raise ShellSyntaxError("redirection without a file")
    if target.text.startswith("&") and not target.quoted:
        raise ShellSyntaxError(f"{op}{target.text} is not supported by the loopback shell")
    cmd.out_file = (target.text, "ab" if op.endswith(">>") else "wb")


def routed(emit: Emit, out_file: IO[bytes] | None, err_to_out: bool, err_to_file: bool = False) -> Emit:
    """``emit`` with stdout sent to ``out_file``; for ``2>&1``, stderr sent where stdout went at that point
    of the command: into the file when ``2>&1`` follows ``>`` (``err_to_file``), to the stdout stream
    when it precedes it (``2>&1 >f``)."""
    terminal = emit
    if out_file is not None:
        def to_file(s: int, b: bytes, _e: Emit = emit) -> None:
            out_file.write(b) if s == 1 else _e(s, b)

        emit = to_file
    if err_to_out:
        err = emit if err_to_file else terminal

        def joined(s: int, b: bytes, _e: Emit = emit, _err: Emit = err) -> None:
            (_err if s == 2 else _e)(1, b)

        emit = joined
    return emit


class Shell:
    """Runs one command line; ``emit(stream, bytes)`` receives stdout (1) and stderr (2)."""

    def __init__(self, box: Sandbox, emit: Callable[[int, bytes], None]) -> None:
        self.box = box
        self.emit = emit
        self.status = 0
        self.cwd = "/data/local/tmp"
        self.env = {"HOME": "/data/local/tmp", "PATH": "/system/bin", "TMPDIR": "/data/local/tmp"}
        self.procs: list[subprocess.Popen] = []
        self.killed = False

    def kill(self) -> None:
        self.killed = True
        for p in self.procs:
            if p.poll() is None:
                p.kill()

    # ------------------------------------------------------------------------------------
    def run(self, cmd: str) -> int:
        try:
            for pipeline, joiner in self._split(cmd):
                if joiner == "&&" and self.status != 0 or joiner == "||" and self.status == 0:
                    continue
                if self.killed:
                    break
                self.status = self._simple(pipeline)
        except (ShellSyntaxError, ValueError) as err:
            self.emit(2, f"sh: {err}\n".encode())
            self.status = 2
        return self.status

    def _expand(self, inner: str) -> str:
        buf: list[bytes] = []
        sub = Shell(self.box, lambda s, b: buf.append(b) if s == 1 else self.emit(s, b))
        sub.cwd, sub.env = self.cwd, self.env
        sub.run(inner)
        return b"".join(buf).decode(errors="replace")

    def _split(self, cmd: str) -> Iterator[tuple[list[Word | str], str]]:
        # Expansion happens while tokenizing, left to right, so ``a; echo $?`` sees a's status:
        # tokenize lazily one command at a time.
        rest, joiner = cmd, ";"
        while rest.strip():
            piece, sep, rest = cut_command(rest)
            yield tokenize(piece, self._expand, lambda: self.status, self.env), joiner
            joiner = sep if sep in ("&&", "||") else ";"

    def _simple(self, toks: list[Word | str]) -> int:
        cmd = parse_command(toks)
        if not cmd.args:
            return self.status
        fh = None
        if cmd.out_file is not None:
            fh = open(self.box.host(cmd.out_file[0], self.cwd), cmd.out_file[1])  # noqa: SIM115
        emit = routed(self.emit, fh, cmd.err_to_out, cmd.err_to_file)
        try:
            return self._exec(cmd.args, emit)
        except (OSError, PermissionError) as err:
            emit(2, f"{cmd.args[0]}: {err}\n".encode())
            return 1
        finally:
            if fh is not None:
                fh.close()

    # ------------------------------------------------------------------------------------
    def _exec(self, args: list[str], emit: Callable[[int, bytes], None]) -> int:
        name, rest = ("test" if args[0] == "[" else args[0]), args[1:]
        builtin = getattr(self, f"_b_{name.replace('-', '_')}", None) if name.isidentifier() or "-" in name else None
        if builtin is not None:
            return builtin(rest, emit)
        if name in ("python3", "python"):
            return self._spawn([self.box.python, *rest], emit)
        if "/" in name:
            exe = self.box.host(name, self.cwd)
            if exe.is_file() and os.access(exe, os.X_OK):
                return self._spawn([str(exe), *rest], emit)
        emit(2, f"sh: {name}: not found\n".encode())
        return 127

    def _spawn(self, argv: list[str], emit: Callable[[int, bytes], None]) -> int:
        # A program on the host sees host paths: device paths in its arguments map into the sandbox.
        argv = [argv[0], *(str(self.box.host(a)) if a.startswith(DEVICE_PREFIXES) else a for a in argv[1:])]
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(self.box.host("/data/local/tmp")),
               "PYTHONPATH": os.environ.get("PYTHONPATH", ""), **self.box.extra_env}
        cwd = self.box.host(self.cwd)
        proc = subprocess.Popen(argv, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                stdin=subprocess.DEVNULL)
        self.procs.append(proc)
        import threading

        def pump(stream: object, sid: int) -> None:
            for chunk in iter(lambda: os.read(stream.fileno(), 65536), b""):  # type: ignore[attr-defined]
                emit(sid, chunk)

        t = threading.Thread(target=pump, args=(proc.stderr, 2), daemon=True)
        t.start()
        pump(proc.stdout, 1)
        t.join()
        return proc.wait()

    # builtins: the commands phone_runner and adbutils send -------------------------------
    def _b_true(self, a: list[str], emit: Callable) -> int:
        return 0

    def _b_false(self, a: list[str], emit: Callable) -> int:
        return 1

    def _b_echo(self, a: list[str], emit: Callable) -> int:
        nl = not (a and a[0] == "-n")
        emit(1, (" ".join(a[1:] if not nl else a) + ("\n" if nl else "")).encode())
        return 0

    def _b_cd(self, a: list[str], emit: Callable) -> int:
        target = a[0] if a else "/data/local/tmp"
        if not self.box.host(target, self.cwd).is_dir():
            emit(2, f"cd: {target}: No such file or directory\n".encode())
            return 1
        self.cwd = target if target.startswith("/") else f"{self.cwd}/{target}"
        return 0

    def _b_getprop(self, a: list[str], emit: Callable) -> int:
        if a:
            emit(1, (self.box.props.get(a[0], a[1] if len(a) > 1 else "") + "\n").encode())
        else:
            emit(1, "".join(f"[{k}]: [{v}]\n" for k, v in sorted(self.box.props.items())).encode())
        return 0

    def _own_process(self, pid: str) -> Path | None:
        """``/proc/<pid>`` of a process this sandbox's device started (its argv names the sandbox root),
        else None: like a phone's shell user, the loopback shell sees and signals only its own."""
        if not pid.isdigit():
            return None
        proc = Path(f"/proc/{pid}")
        try:
            cmdline = (proc / "cmdline").read_bytes()
        except OSError:
            return None
        return proc if str(self.box.root).encode() in cmdline else None

    def _b_kill(self, a: list[str], emit: Callable) -> int:
        import signal

        sig = signal.SIGTERM
        rc = 0
        for x in a:
            if x.startswith("-"):
                sig = signal.Signals(int(x[1:])) if x[1:].isdigit() else getattr(signal, "SIG" + x[1:])
                continue
            if self._own_process(x) is None:
                emit(2, f"kill: {x}: No such process\n".encode())
                rc = 1
            elif sig != 0:
                os.kill(int(x), sig)
        return rc

    def _b_cat(self, a: list[str], emit: Callable) -> int:
        rc = 0
        for f in a:
            parts = f.split("/")
            if len(parts) == 4 and parts[1] == "proc" and parts[3] == "cmdline":
                proc = self._own_process(parts[2])
                if proc is not None:
                    emit(1, (proc / "cmdline").read_bytes())
                else:
                    emit(2, f"cat: {f}: No such file or directory\n".encode())
                    rc = 1
                continue
            p = self.box.host(f, self.cwd)
            if p.is_file():
                emit(1, p.read_bytes())
            else:
                emit(2, f"cat: {f}: No such file or directory\n".encode())
                rc = 1
        return rc

    def _b_ls(self, a: list[str], emit: Callable) -> int:
        paths = [x for x in a if not x.startswith("-")] or [self.cwd]
        rc = 0
        for f in paths:
            p = self.box.host(f, self.cwd)
            if p.is_dir():
                emit(1, "".join(f"{c.name}\n" for c in sorted(p.iterdir())).encode())
            elif p.exists():
                emit(1, f"{f}\n".encode())
            else:
                emit(2, f"ls: {f}: No such file or directory\n".encode())
                rc = 1
        return rc

    def _b_mkdir(self, a: list[str], emit: Callable) -> int:
        for f in (x for x in a if not x.startswith("-")):
            self.box.host(f, self.cwd).mkdir(parents="-p" in a, exist_ok="-p" in a)
        return 0

    def _b_rm(self, a: list[str], emit: Callable) -> int:
        for f in (x for x in a if not x.startswith("-")):
            p = self.box.host(f, self.cwd)
            if p.is_dir() and any(o in a for o in ("-r", "-rf", "-fr")):
                shutil.rmtree(p)
            elif p.exists():
                p.unlink()
            elif not any("f" in o for o in a if o.startswith("-")):
                emit(2, f"rm: {f}: No such file or directory\n".encode())
                return 1
        return 0

    def _b_mv(self, a: list[str], emit: Callable) -> int:
        os.replace(self.box.host(a[0], self.cwd), self.box.host(a[1], self.cwd))
        return 0

    def _b_chmod(self, a: list[str], emit: Callable) -> int:
        mode = int(a[0], 8)
        for f in a[1:]:
            os.chmod(self.box.host(f, self.cwd), mode)
        return 0

    def _b_touch(self, a: list[str], emit: Callable) -> int:
        for f in a:
            full = f if f.startswith("/") else f"{self.cwd}/{f}"
            if self.box.is_read_only(full):
                emit(2, f"touch: '{f}': Read-only file system\n".encode())
                return 1
            self.box.host(f, self.cwd).touch()
        return 0

    def _b_grep(self, a: list[str], emit: Callable) -> int:
        """``grep [-H] PATTERN FILE...`` (what the host uses to read many sysfs files at once)."""
        import re

        flags = [x for x in a if x.startswith("-")]
        rest = [x for x in a if not x.startswith("-")]
        pattern, files = re.compile(rest[0]), rest[1:]
        found, rc = False, 0
        for f in files:
            p = self.box.host(f, self.cwd)
            if not p.is_file():
                emit(2, f"grep: {f}: No such file or directory\n".encode())
                rc = 2
                continue
            for ln in p.read_text(errors="replace").splitlines():
                if pattern.search(ln):
                    found = True
                    emit(1, (f"{f}:{ln}\n" if "-H" in flags or len(files) > 1 else f"{ln}\n").encode())
        return rc or (0 if found else 1)

    def _b_sha256sum(self, a: list[str], emit: Callable) -> int:
        rc = 0
        for f in a:
            p = self.box.host(f, self.cwd)
            if not p.is_file():
                emit(2, f"sha256sum: {f}: No such file or directory\n".encode())
                rc = 1
                continue
            h = hashlib.sha256()
            with open(p, "rb") as fh:
                for block in iter(lambda: fh.read(1 << 20), b""):
                    h.update(block)
            emit(1, f"{h.hexdigest()}  {f}\n".encode())
        return rc

    def _b_test(self, a: list[str], emit: Callable) -> int:
        a = a[:-1] if a and a[-1] == "]" else a
        if len(a) == 2 and a[0] in ("-e", "-f", "-d"):
            p = self.box.host(a[1], self.cwd)
            return 0 if {"-e": p.exists, "-f": p.is_file, "-d": p.is_dir}[a[0]]() else 1
        raise ShellSyntaxError(f"test {' '.join(a)}: unsupported by the loopback shell")

    def _b_df(self, a: list[str], emit: Callable) -> int:
        free = self.box.free_kb()
        emit(1, f"Filesystem 1K-blocks Used Available Use% Mounted on\n/dev/block/dm-5 {free * 4} "
                f"{free * 3} {free} 75% /data\n".encode())
        return 0

    def _b_nproc(self, a: list[str], emit: Callable) -> int:
        cpus = [p for p in self.box.host("/sys/devices/system/cpu").glob("cpu[0-9]*") if p.is_dir()]
        emit(1, f"{len(cpus)}\n".encode())
        return 0

    def _b_sleep(self, a: list[str], emit: Callable) -> int:
        import time

        time.sleep(float(a[0]))
        return 0

    def _b_exit(self, a: list[str], emit: Callable) -> int:
        return int(a[0]) if a else self.status

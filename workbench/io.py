"""Atomic writes for every result file: a unique temp file beside the target, then ``os.replace``.

A reader (or a second job) sees either the old file or the new one, never half of one. Temp names
come from ``tempfile.mkstemp`` (unique per call, not per PID: two threads of one job, or a PID
reused after a crash, never share one) and start with ``.`` so globbing ``*.parquet`` skips them.
A killed writer can leave a temp behind; ``clean_temps`` removes old ones.

Directories (converted weights, exports) are published with ``versioned_dir``: built in a temp
dir, renamed to a new versioned dir, then the stable name -- a symlink -- is swapped onto it with
one ``os.replace``. A process loading the previous version keeps a complete directory: live
weights are never deleted. Hold ``dir_lock(final)`` around check-and-build so two jobs do not
build the same thing at once.

Every cache (converted weights, corpora, traces, calibrations) lives under ``cache_root()``:
``$AS2D_CACHE`` if set, else the platform's user cache dir for ``as2d``.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import re
import shutil
import tempfile
import time
import uuid
from collections.abc import Callable, Collection, Iterable, Iterator
from pathlib import Path
from typing import Any

import platformdirs

from workbench.errors import DataError

TEMP_MARK = ".as2d-tmp"
CACHE_ENV = "AS2D_CACHE"


def cache_root() -> Path:
    """``$AS2D_CACHE`` if set, else the platform's user cache dir for ``as2d``."""
    env = os.environ.get(CACHE_ENV)
    return Path(env) if env else Path(platformdirs.user_cache_dir("as2d"))


_HASHES = "hashes.json"  # the memo of file hashes under the cache root
_CHUNK = 1 << 20


def file_sha256(path: str | Path) -> str:
    """sha256 of a file, memoized by (real path, size, mtime_ns, inode, ctime_ns): a file replaced
    or edited in place has a new inode or change time even when it keeps its size and mtime."""
    p = Path(path).resolve()
    st = p.stat()
    memo_key = f"{p}:{st.st_size}:{st.st_mtime_ns}:{st.st_ino}:{st.st_ctime_ns}"
    memo_file = cache_root() / _HASHES
    try:
        memo = json.loads(memo_file.read_text())
    except (OSError, ValueError):
        memo = {}
    if memo_key in memo:
        return memo[memo_key]
    h = hashlib.sha256()
    with open(p, "rb") as f:
        while chunk := f.read(_CHUNK):
            h.update(chunk)
    memo[memo_key] = h.hexdigest()
    try:
        atomic_write_json(memo_file, memo)
    except OSError:
        pass  # a read-only cache only costs re-hashing next time
    return memo[memo_key]


def dir_sha256(directory: str | Path, patterns: Iterable[str] = ("*.json", "*.safetensors", "*.bin", "*.model",
                                                                  "*.txt"), skip: Collection[str] = ()) -> str:
    """sha256 over the sorted (name, file sha256) pairs of a weights directory's files (names in
    ``skip`` left out)."""
    d = Path(directory)
    files = sorted({p for pat in patterns for p in d.glob(pat) if p.is_file() and p.name not in skip})
    h = hashlib.sha256()
    for p in files:
        h.update(f"{p.name}\0{file_sha256(p)}\n".encode())
    return h.hexdigest()


def _temp_beside(path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=TEMP_MARK, dir=path.parent)
    os.close(fd)
    return Path(tmp)


def atomic_write_with(path: str | Path, write: Callable[[Path], Any]) -> Path:
    """Call ``write(temp_path)`` and move the result onto ``path``; the temp never survives a failure."""
    path = Path(path)
    tmp = _temp_beside(path)
    try:
        write(tmp)
        os.chmod(tmp, 0o644)  # mkstemp makes it private; results are read by notebooks and other users
        os.replace(tmp, path)
    finally:
        if tmp.exists():
            tmp.unlink()
    return path


def atomic_write_bytes(path: str | Path, data: bytes) -> Path:
    def write(tmp: Path) -> None:
        with open(tmp, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())

    return atomic_write_with(path, write)


def atomic_write_text(path: str | Path, text: str) -> Path:
    return atomic_write_bytes(path, text.encode())


def atomic_write_json(path: str | Path, obj: Any, **kw: Any) -> Path:
    kw.setdefault("indent", 1)
    return atomic_write_text(path, json.dumps(obj, **kw))


def atomic_write_parquet(path: str | Path, frame: Any) -> Path:
    """``frame.write_parquet`` (polars) via a temp file."""
    return atomic_write_with(path, lambda tmp: frame.write_parquet(tmp))


def clean_temps(directory: str | Path, older_than_s: float = 3600.0) -> list[Path]:
    """Remove temps left by killed writers (older than ``older_than_s``, so live writers keep theirs)."""
    directory = Path(directory)
    if not directory.is_dir():
        return []
    removed, now = [], time.time()
    for p in directory.glob(f".*{TEMP_MARK}"):
        try:
            if now - p.stat().st_mtime > older_than_s:
                p.unlink()
                removed.append(p)
        except FileNotFoundError:
            pass
    return removed


@contextlib.contextmanager
def dir_lock(final: str | Path) -> Iterator[None]:
    """Exclusive ``flock`` on ``.<name>.lock`` beside ``final`` (released when the process dies)."""
    final = Path(final)
    final.parent.mkdir(parents=True, exist_ok=True)
    with open(final.parent / f".{final.name}.lock", "a") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def clean_stale_builds(final: str | Path) -> list[Path]:
    """Remove temp build dirs of ``final`` left by killed jobs. Call it holding ``dir_lock(final)``:
    then no live build exists, so every temp dir is a leftover."""
    final = Path(final)
    removed = []
    for p in final.parent.glob(f".{final.name}.*"):
        if p.is_dir() and not p.is_symlink():
            shutil.rmtree(p, ignore_errors=True)
            removed.append(p)
    return removed


def swap_link(final: str | Path, target: str | Path) -> None:
    """Point the symlink ``final`` at ``target`` atomically; a real dir there is renamed aside, not deleted."""
    final, target = Path(final), Path(target)
    if final.exists() and not final.is_symlink():
        os.rename(final, final.with_name(f"{final.name}.legacy-{time.strftime('%Y%m%dT%H%M%S')}"))
    tmp = final.with_name(f".{final.name}.link-{uuid.uuid4().hex}")
    os.symlink(target.name if target.parent == final.parent else target, tmp)
    os.replace(tmp, final)


@contextlib.contextmanager
def versioned_dir(final: str | Path, label: str = "v") -> Iterator[Path]:
    """Yield a temp dir; if the block succeeds it becomes ``<final>.<label>-<stamp>`` and ``final`` points to it.

    Hold ``dir_lock(final)`` around the check that decided to build and around this block.
    """
    final = Path(final)
    final.parent.mkdir(parents=True, exist_ok=True)
    clean_stale_builds(final)
    tmp = Path(tempfile.mkdtemp(prefix=f".{final.name}.tmp-", dir=final.parent))
    try:
        yield tmp
        tmp.chmod(0o755)  # mkdtemp makes it private; a cache should be readable like any other
        version = final.with_name(f"{final.name}.{label}-{time.strftime('%Y%m%dT%H%M%S')}-{uuid.uuid4().hex[:8]}")
        os.rename(tmp, version)
        swap_link(final, version)
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)


SECTION_NAME = re.compile(r"[a-z0-9_-]+")


def section_markers(name: str) -> tuple[str, str]:
    """``<!-- name -->`` and ``<!-- /name -->``: the markers around a section a command writes."""
    if not SECTION_NAME.fullmatch(name):
        raise DataError(f"section name {name!r} has characters other than a-z, 0-9, _ and -",
                        where="results section", fix="name sections like native-bench-test or d3-agreement")
    return f"<!-- {name} -->", f"<!-- /{name} -->"


def replace_section(doc: str, name: str, body: str) -> str:
    """``doc`` with the text between ``name``'s markers replaced by ``body`` (a new section at the end
    when the markers are absent); every other byte is left alone."""
    start, end = section_markers(name)
    i, j = doc.find(start), doc.find(end)
    block = f"{start}\n{body.strip(chr(10))}\n{end}"
    if i < 0 or j < i:
        return (doc.rstrip() + "\n\n" if doc.strip() else "") + block + "\n"
    return doc[:i] + block + doc[j + len(end):]


def write_section(path: str | Path, name: str, body: str) -> Path:
    """Replace section ``name`` of the markdown document at ``path`` with ``body``, atomically."""
    path = Path(path)
    if not path.parent.is_dir():
        raise DataError("no such folder for the results document", where=str(path), fix="pass docs/results.md")
    return atomic_write_text(path, replace_section(path.read_text() if path.is_file() else "", name, body))

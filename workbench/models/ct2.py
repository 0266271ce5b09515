"""Reader for CTranslate2 ``model.bin`` files (binary format version 6).

Layout: u32 version, string spec name, u32 revision, u32 count, then per variable: string name,
u8 rank, u32 dims, u8 dtype code, u32 nbytes, raw bytes; then u32 alias count and
(alias, target) string pairs. Strings are u16 length (incl. NUL) + UTF-8 bytes + NUL.
Written from the format, not from the ctranslate2 package, so no native runtime is needed.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO

import numpy as np

_DTYPES: dict[int, np.dtype] = {
    0: np.dtype("<f4"),
    1: np.dtype("i1"),
    2: np.dtype("<i2"),
    3: np.dtype("<i4"),
    4: np.dtype("<f2"),
}
_BF16 = 5
SUPPORTED_VERSION = 6


@dataclass
class Ct2Model:
    spec: str
    revision: int
    variables: dict[str, np.ndarray] = field(default_factory=dict)
    aliases: dict[str, str] = field(default_factory=dict)

    def get(self, name: str) -> np.ndarray:
        return self.variables[self.aliases.get(name, name)]


def _u32(f: BinaryIO) -> int:
    return struct.unpack("<I", _read(f, 4))[0]


def _read(f: BinaryIO, n: int) -> bytes:
    data = f.read(n)
    if len(data) != n:
        raise ValueError(f"truncated CTranslate2 file: wanted {n} bytes, got {len(data)}")
    return data


def _string(f: BinaryIO) -> str:
    (n,) = struct.unpack("<H", _read(f, 2))
    return _read(f, n)[:-1].decode("utf-8")


def _decode(raw: bytes, code: int, dims: tuple[int, ...]) -> np.ndarray:
    if code == _BF16:
        # numpy has no bfloat16: widen the 16 stored bits into the top half of a float32
        u16 = np.frombuffer(raw, dtype="<u2").astype(np.uint32) << 16
        return u16.view(np.float32).reshape(dims)
    if code not in _DTYPES:
        raise ValueError(f"unknown CTranslate2 dtype code {code}")
    return np.frombuffer(raw, dtype=_DTYPES[code]).reshape(dims)


def read_ct2(path: str | Path) -> Ct2Model:
    """Read every variable of a CTranslate2 binary v6 ``model.bin`` into numpy arrays."""
    with open(path, "rb") as f:
        return read_ct2_stream(f, name=str(path))


def read_ct2_stream(f: BinaryIO, name: str = "model.bin") -> Ct2Model:
    """Like :func:`read_ct2` on an open binary stream (e.g. a checkpoint split into parts)."""
    version = _u32(f)
    if version != SUPPORTED_VERSION:
        raise ValueError(f"{name}: CTranslate2 binary version {version}, expected {SUPPORTED_VERSION}")
    model = Ct2Model(spec=_string(f), revision=_u32(f))
    for _ in range(_u32(f)):
        var = _string(f)
        rank = _read(f, 1)[0]
        dims = struct.unpack(f"<{rank}I", _read(f, 4 * rank)) if rank else ()
        code = _read(f, 1)[0]
        nbytes = _u32(f)
        model.variables[var] = _decode(_read(f, nbytes), code, dims)
    for _ in range(_u32(f)):
        alias = _string(f)
        model.aliases[alias] = _string(f)
    return model

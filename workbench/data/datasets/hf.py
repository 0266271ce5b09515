"""Hugging Face ``datasets`` copies on disk: a ``save_to_disk`` folder or parquet files.

Read with pyarrow alone (the ``datasets`` library is not needed at run time). ``save_to_disk``
writes Arrow *stream* files (``data-00000-of-000NN.arrow``) next to ``state.json``; a
``DatasetDict`` adds ``dataset_dict.json`` and one such folder per split. Hub parquet exports put
the split in a folder name (``test/``) or a file prefix (``test-00000-of-00001.parquet``). An audio
column is a struct ``{bytes, path}``: bytes win; a bare path is resolved against the folder.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from .base import Segment, bytes_seconds, file_seconds

PARQUET_GLOBS = ("*.parquet", "*/*.parquet", "*/*/*.parquet")  # hub exports nest at most <config>/<split>/


def _parquet(root: Path) -> list[Path]:
    # bounded depth: a native layout can hold a million audio files, never walk all of them
    return sorted({p for g in PARQUET_GLOBS for p in root.glob(g)})


def is_hf_dir(root: Path) -> bool:
    """True when ``root`` looks like a ``save_to_disk`` folder or holds parquet files."""
    if (root / "dataset_dict.json").is_file() or (root / "state.json").is_file():
        return True
    return any(next(root.glob(g), None) is not None for g in PARQUET_GLOBS)


def _split_dirs(root: Path, split: str | None) -> list[Path]:
    if (root / "state.json").is_file():
        return [root]
    names = json.loads((root / "dataset_dict.json").read_text())["splits"]
    if split is None:
        return [root / n for n in names]
    if split not in names:
        raise ValueError(f"dataset.root={root}: HF dataset has splits {names}, not {split!r} (set dataset.hf_split)")
    return [root / split]


def _parquet_files(root: Path, split: str | None) -> list[Path]:
    files = _parquet(root)
    if split is None:
        return files
    picked = [f for f in files if split in f.relative_to(root).parts[:-1]
              or f.name.startswith((f"{split}-", f"{split}.", f"{split}_"))]
    if not picked:
        raise ValueError(f"dataset.root={root}: no parquet file of split {split!r} "
                         f"(found {[str(f.relative_to(root)) for f in files[:5]]}); set dataset.hf_split")
    return picked


def hf_rows(root: Path, split: str | None = None) -> Iterator[dict[str, Any]]:
    """Rows of the dataset in file order, as plain Python dicts."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    if (root / "dataset_dict.json").is_file() or (root / "state.json").is_file():
        for d in _split_dirs(root, split):
            state = json.loads((d / "state.json").read_text())
            for f in state["_data_files"]:
                with pa.memory_map(str(d / f["filename"])) as src:
                    yield from pa.ipc.open_stream(src).read_all().to_pylist()
        return
    for f in _parquet_files(root, split):
        yield from pq.read_table(f).to_pylist()


def hf_segment(value: Any, root: Path, source: str) -> Segment:
    """An audio-column value (``{bytes, path}`` struct, or a path string) as a :class:`Segment`."""
    if isinstance(value, str):
        value = {"bytes": None, "path": value}
    if not isinstance(value, dict):
        raise ValueError(f"{source}: audio column holds {type(value).__name__}, expected a {{bytes, path}} struct")
    data, path = value.get("bytes"), value.get("path")
    if data:
        return Segment(Path(path) if path else None, bytes_seconds(data, source), data=data)
    if path:
        p = Path(path) if Path(path).is_absolute() else root / path
        if p.is_file():
            return Segment(p, file_seconds(p))
    raise ValueError(f"{source}: audio has no bytes and its path {path!r} is not a file under {root}")

"""Versioned on-disk trace schema: one long-format parquet table per window + a JSON manifest.

Row kinds: ``reference`` (target greedy tokens through EOS or the cap), ``producer`` (a source's
trajectory: token, publication batch, measured generation time, cumulative forwards),
``rank`` (drafter rank of each reference token, 1 = top-1, top+1 = worse) and ``asp`` (greedy
drafts with top-1 confidences after each committed prefix ``prefix_len``). The manifest records
schema version, machine, thread count and timings; it is written last, so its presence marks a
finished window. Files are written atomically (tmp + os.replace); no pickle anywhere.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any

import polars as pl

SCHEMA_VERSION = 1
KINDS = ("reference", "producer", "rank", "asp")
SCHEMA: dict[str, pl.DataType] = {
    "schema_version": pl.Int32(),
    "window_id": pl.String(),
    "kind": pl.String(),
    "source_id": pl.String(),  # producer/drafter id; "target" for the reference
    "prefix_len": pl.Int32(),  # asp: committed prefix length the draft continues; else null
    "position": pl.Int32(),  # index within the reference / trajectory / draft
    "token": pl.Int64(),
    "confidence": pl.Float64(),  # null where the source has none (never invented)
    "t_generated": pl.Float64(),  # seconds since the source started; null if not timed
    "batch": pl.Int32(),  # publication batch index (producer); else null
    "forwards": pl.Int32(),  # cumulative forwards when the token became available
    "rank": pl.Int32(),
}


class TraceSchemaError(ValueError):
    pass


def empty_frame() -> pl.DataFrame:
    return pl.DataFrame(schema=SCHEMA)


def rows_to_frame(rows: list[dict[str, Any]]) -> pl.DataFrame:
    full = [{k: r.get(k) for k in SCHEMA} | {"schema_version": SCHEMA_VERSION} for r in rows]
    return pl.DataFrame(full, schema=SCHEMA) if full else empty_frame()


def validate_frame(df: pl.DataFrame, where: str = "trace") -> pl.DataFrame:
    if dict(df.schema) != SCHEMA:
        raise TraceSchemaError(f"{where}: schema {dict(df.schema)} != expected {SCHEMA}")
    versions = set(df["schema_version"].unique().to_list())
    if versions - {SCHEMA_VERSION}:
        raise TraceSchemaError(f"{where}: schema_version {versions}, this code reads {SCHEMA_VERSION}")
    bad = set(df["kind"].unique().to_list()) - set(KINDS)
    if bad:
        raise TraceSchemaError(f"{where}: unknown row kinds {bad}")
    return df


def _atomic_write(path: Path, write) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    os.close(fd)
    try:
        write(tmp)
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def write_window(out_dir: Path, window_id: str, df: pl.DataFrame, manifest: dict[str, Any]) -> Path:
    """Write ``<window>.parquet`` then ``<window>.json`` (the completion marker)."""
    validate_frame(df, window_id)
    out_dir = Path(out_dir)
    _atomic_write(out_dir / f"{window_id}.parquet", lambda p: df.write_parquet(p))
    meta = {"schema_version": SCHEMA_VERSION, "window_id": window_id, **manifest}
    _atomic_write(out_dir / f"{window_id}.json", lambda p: Path(p).write_text(json.dumps(meta, indent=1)))
    return out_dir / f"{window_id}.parquet"


def is_done(out_dir: Path, window_id: str) -> bool:
    return (Path(out_dir) / f"{window_id}.json").is_file() and (Path(out_dir) / f"{window_id}.parquet").is_file()


def read_window(out_dir: Path, window_id: str) -> tuple[pl.DataFrame, dict[str, Any]]:
    meta = json.loads((Path(out_dir) / f"{window_id}.json").read_text())
    if meta.get("schema_version") != SCHEMA_VERSION:
        raise TraceSchemaError(f"{window_id}: manifest schema_version {meta.get('schema_version')}")
    df = pl.read_parquet(Path(out_dir) / f"{window_id}.parquet")
    return validate_frame(df, window_id), meta

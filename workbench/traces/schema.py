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
from pathlib import Path
from typing import Any

import polars as pl

from workbench.errors import DataError

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


class TraceSchemaError(DataError):
    """A trace file or frame that does not follow this schema; the message names the file."""


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


def check_content(df: pl.DataFrame, where: str, vocab_size: int | None = None) -> pl.DataFrame:
    """Content checks beyond the schema: a reference exists, positions are unique, ids fit the vocab."""
    ref = df.filter(pl.col("kind") == "reference")
    if ref.height == 0:
        raise TraceSchemaError(f"{where}: no reference rows (the target's output is missing)")
    dup = (df.group_by(["kind", "source_id", "prefix_len", "position"]).len().filter(pl.col("len") > 1))
    if dup.height:
        r = dup.row(0, named=True)
        raise TraceSchemaError(f"{where}: duplicate position {r['position']} in {r['kind']} rows of "
                               f"{r['source_id']!r} ({dup.height} duplicated positions)")
    expect = list(range(ref.height))
    if sorted(ref["position"].to_list()) != expect:
        raise TraceSchemaError(f"{where}: reference positions are not 0..{ref.height - 1}")
    if df["token"].null_count():
        raise TraceSchemaError(f"{where}: {df['token'].null_count()} rows have no token id")
    if vocab_size is not None and df.height:
        lo, hi = df["token"].min(), df["token"].max()
        if lo < 0 or hi >= vocab_size:
            bad = df.filter((pl.col("token") < 0) | (pl.col("token") >= vocab_size))
            raise TraceSchemaError(f"{where}: {bad.height} token ids outside the vocabulary [0, {vocab_size}), "
                                   f"e.g. {bad['token'][0]} in {bad['kind'][0]} rows")
    return df


def _atomic_write(path: Path, write) -> None:
    from workbench.io import atomic_write_with

    atomic_write_with(path, lambda tmp: write(str(tmp)))


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


def read_manifest(out_dir: Path, window_id: str) -> dict[str, Any]:
    """The window's manifest; a broken one raises ``TraceSchemaError`` naming the file."""
    path = Path(out_dir) / f"{window_id}.json"
    try:
        meta = json.loads(path.read_text())
    except FileNotFoundError as err:
        raise TraceSchemaError(f"{path}: manifest missing") from err
    except (OSError, UnicodeDecodeError, ValueError) as err:
        raise TraceSchemaError(f"{path}: manifest is not valid JSON ({type(err).__name__}: {err})") from err
    if not isinstance(meta, dict):
        raise TraceSchemaError(f"{path}: manifest is not a JSON object")
    if meta.get("schema_version") != SCHEMA_VERSION:
        raise TraceSchemaError(f"{path}: manifest schema_version {meta.get('schema_version')}, "
                               f"this code reads {SCHEMA_VERSION}")
    return meta


def read_window(out_dir: Path, window_id: str, vocab_size: int | None = None) -> tuple[pl.DataFrame, dict[str, Any]]:
    """Read and check one window; any damage raises ``TraceSchemaError`` naming the file."""
    meta = read_manifest(out_dir, window_id)
    path = Path(out_dir) / f"{window_id}.parquet"
    try:
        df = pl.read_parquet(path)
    except FileNotFoundError as err:
        raise TraceSchemaError(f"{path}: trace table missing") from err
    except Exception as err:  # polars raises ComputeError/OSError/... for a truncated or foreign file
        raise TraceSchemaError(f"{path}: unreadable parquet ({type(err).__name__}: {str(err)[:200]})") from err
    validate_frame(df, str(path))
    return check_content(df, str(path), vocab_size), meta

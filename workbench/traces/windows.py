"""From collected traces to replay windows, and the live streams that make them countable.

Replay prices a producer by its *operations* (one forward of an autoregressive drafter, one
chunk of an external source), so a trace must say which operation emitted each published token.
``CountedStream`` exposes the producer's running forward count through any wrapper (Tok_T
conversion emits zero or several target tokens per drafter forward); ``chunk_stream`` does the
same for chunk sources, one operation per chunk.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

import polars as pl

from workbench.models.drafting import ProducedToken
from workbench.replay.trajectory import SourceTrack, Window, _draft_table, operations_of
from workbench.traces.schema import read_window


class CountedStream:
    """Iterate ``stream`` while reporting ``counter.forwards`` (the inner producer's count)."""

    def __init__(self, stream: Iterable[ProducedToken], counter: Any) -> None:
        self._stream = stream
        self._counter = counter

    @property
    def forwards(self) -> int:
        return int(getattr(self._counter, "forwards", 0))

    def __iter__(self) -> Iterator[ProducedToken]:
        return iter(self._stream)


class chunk_stream:  # noqa: N801 - reads as a function at call sites
    """Chunk publications as produced tokens, one operation per chunk (atomic publication)."""

    def __init__(self, chunks: Iterable[Any]) -> None:
        self._chunks = chunks
        self.forwards = 0

    def __iter__(self) -> Iterator[ProducedToken]:
        for ch in self._chunks:
            self.forwards += 1
            for tok in ch.tokens:
                yield ProducedToken(int(tok), None, float(ch.publish_time))


def _op_tokens(forwards: list[int | None]) -> tuple[int, ...]:
    if not forwards or any(f is None for f in forwards):
        return (1,) * len(forwards)  # no counts recorded: one operation per token
    return operations_of([int(f) for f in forwards if f is not None])


def trace_to_window(
    df: pl.DataFrame,
    window_id: str,
    *,
    dataset: str,
    eos_id: int | None,
    vocab_size: int,
    max_output: int,
    rename: Mapping[str, str] | None = None,
) -> Window:
    """Build a replay ``Window`` from one window's trace table (see ``traces.schema``)."""
    rename = dict(rename or {})
    ref = df.filter(pl.col("kind") == "reference").sort("position")["token"].to_list()
    sources: dict[str, SourceTrack] = {}
    prod = df.filter(pl.col("kind") == "producer")
    for sid in prod["source_id"].unique(maintain_order=True).to_list():
        rows = prod.filter(pl.col("source_id") == sid).sort("position")
        confs = rows["confidence"].to_list()
        name = rename.get(sid, sid)
        sources[name] = SourceTrack(
            source=name,
            tokens=tuple(rows["token"].to_list()),
            confidences=None if not confs or any(c is None for c in confs) else tuple(confs),
            op_tokens=_op_tokens(rows["forwards"].to_list()),
        )
    asp = df.filter(pl.col("kind") == "asp")
    drafts = None
    if asp.height:
        tokens, confs = [], []
        for c in range(1, len(ref)):
            d = asp.filter(pl.col("prefix_len") == c).sort("position")
            tokens.append(d["token"].to_list())
            confs.append(d["confidence"].to_list())
        has_conf = all(x is not None for cs in confs for x in cs)  # never invent a confidence
        drafts = _draft_table(tokens, confs if has_conf else None)
    return Window(window_id, dataset, tuple(ref), eos_id, vocab_size, max_output, drafts, sources).validate(
        window_id)


def load_trace_windows(out_dir: str | Path, window_ids: Iterable[str], **kw: Any) -> list[Window]:
    """Read collected traces as replay windows (same keyword arguments as ``trace_to_window``)."""
    windows = []
    for wid in window_ids:
        df, manifest = read_window(Path(out_dir), wid)
        windows.append(trace_to_window(df, wid, **kw))
    return windows

"""Saved operation trajectories: what replay prices (paper D.1.3, D.4.3, D.5.1).

A ``Window`` holds one window's

* **reference** -- the target's greedy output ``y_1 .. y_N`` (EOS last, or capped);
* **drafts** -- prefix-conditioned drafter proposals with confidences for SD/ASP:
  ``drafts[c]`` continues the committed prefix ``reference[:c]``;
* **sources** -- target-decoupled producer streams in generation order, one ``SourceTrack`` per
  candidate source, grouped into producer operations (one token per forward for an
  autoregressive drafter, a chunk per operation for an external source), optionally with
  measured operation times instead of profile prices.

Storage is two parquet files (``windows.parquet``, ``sources.parquet``) -- no pickle.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import polars as pl

from workbench.decoding.cumulative import BATCHES, PUBLICATIONS
from workbench.errors import DataError


class TrajectoryError(DataError):
    """A malformed trajectory; the message names the file, window and field."""

    def __init__(self, file: str, window: str, field_name: str, problem: str) -> None:
        super().__init__(f"window {window!r}: field '{field_name}': {problem}", where=file)
        self.file = file
        self.field_name = field_name


class DraftTable(Mapping[int, tuple[tuple[int, ...], tuple[float, ...] | None]]):
    """``drafts[c]`` for committed prefix lengths ``c = 1 .. N-1``, stored as two 2-D arrays.

    Row ``c - 1`` holds the drafter's greedy continuation (``-1`` pads a shorter draft) and its
    top-1 confidences; this keeps a 688-window catalog in a few MB instead of Python tuples.
    """

    def __init__(self, tokens: np.ndarray, confidences: np.ndarray | None, lengths: np.ndarray) -> None:
        self.tokens = tokens
        self.confidences = confidences
        self.lengths = lengths

    def __getitem__(self, c: int) -> tuple[tuple[int, ...], tuple[float, ...] | None]:
        if not 1 <= c <= len(self.lengths):
            raise KeyError(c)
        n = int(self.lengths[c - 1])
        toks = tuple(self.tokens[c - 1, :n].tolist())
        conf = None if self.confidences is None else tuple(self.confidences[c - 1, :n].tolist())
        return toks, conf

    def __contains__(self, c: object) -> bool:
        return isinstance(c, int) and 1 <= c <= len(self.lengths)

    def __iter__(self) -> Iterator[int]:
        return iter(range(1, len(self.lengths) + 1))

    def __len__(self) -> int:
        return len(self.lengths)


def operations_of(forwards: Sequence[int]) -> tuple[int, ...]:
    """Tokens released by each producer operation, from each token's cumulative drafter forwards
    (``ProducedToken.forwards``, non-decreasing).

    Operation 0 is the producer's prompt prefill: every forward run by the time the first token was
    available, which a native producer runs before the clock (A.3); replay charges it unless the
    source is ``prefilled``. Each later forward is one operation, releasing none, one or several tokens: a
    cross-vocabulary producer (Tok_T) holds a word back until it is complete."""
    if not forwards:
        return ()
    if any(b < a for a, b in zip(forwards, forwards[1:], strict=False)):
        raise ValueError(f"forward counts must not decrease: {list(forwards)[:16]}")
    first = forwards[0]
    counts = [0] * (forwards[-1] - first + 1)
    for f in forwards:
        counts[f - first] += 1
    return tuple(counts)


@dataclass(frozen=True, slots=True)
class SourceTrack:
    """One candidate source's own token stream, in generation order."""

    source: str
    tokens: tuple[int, ...]
    confidences: tuple[float, ...] | None
    op_tokens: tuple[int, ...]  # tokens emitted by each producer operation, in order
    op_ms: tuple[float, ...] | None = None  # measured operation times; None: priced by the profile
    eligible: bool = True  # language eligibility (D.4.3): ineligible sources are masked
    # How the buffer is fed (decoding.cumulative): "batches" (ASR, translation) or "cumulative_prefix"
    # (spoken QA, D.1.2: every token readable at its own arrival time)
    publication: str = BATCHES

    def validate(self, file: str, window: str) -> None:
        where = f"sources.{self.source}"
        if sum(self.op_tokens) != len(self.tokens):
            raise TrajectoryError(file, window, f"{where}.op_tokens",
                                  f"operations emit {sum(self.op_tokens)} tokens, stream has {len(self.tokens)}")
        if any(n < 0 for n in self.op_tokens):
            raise TrajectoryError(file, window, f"{where}.op_tokens", "negative token count")
        if self.confidences is not None and len(self.confidences) != len(self.tokens):
            raise TrajectoryError(file, window, f"{where}.confidences",
                                  f"{len(self.confidences)} values for {len(self.tokens)} tokens")
        if self.publication not in PUBLICATIONS:
            raise TrajectoryError(file, window, f"{where}.publication",
                                  f"{self.publication!r} is not one of {list(PUBLICATIONS)}")
        if self.op_ms is not None:
            if len(self.op_ms) != len(self.op_tokens):
                raise TrajectoryError(file, window, f"{where}.op_ms",
                                      f"{len(self.op_ms)} times for {len(self.op_tokens)} operations")
            if any(t < 0 for t in self.op_ms):
                raise TrajectoryError(file, window, f"{where}.op_ms", "negative measured time")


@dataclass(frozen=True, slots=True)
class Window:
    window_id: str
    dataset: str
    reference: tuple[int, ...]
    eos_id: int | None
    vocab_size: int
    max_output: int
    drafts: DraftTable | None
    sources: Mapping[str, SourceTrack] = field(default_factory=dict)
    synthetic: bool = False

    @property
    def n_tokens(self) -> int:
        return len(self.reference)

    def validate(self, file: str = "<memory>", n_tokens: int | None = None) -> Window:
        w = self.window_id
        if n_tokens is not None and n_tokens != len(self.reference):
            raise TrajectoryError(file, w, "n_tokens",
                                  f"declares {n_tokens} tokens but the reference holds {len(self.reference)}")
        if not self.reference:
            raise TrajectoryError(file, w, "reference", "empty")
        if self.eos_id is not None and self.eos_id in self.reference[:-1]:
            raise TrajectoryError(file, w, "reference", f"EOS {self.eos_id} before the last position")
        ended = self.eos_id is not None and self.reference[-1] == self.eos_id
        if not ended and len(self.reference) != self.max_output:
            raise TrajectoryError(file, w, "reference",
                                  f"{len(self.reference)} tokens, no EOS, and not capped at {self.max_output}")
        if len(self.reference) > self.max_output:
            raise TrajectoryError(file, w, "max_output",
                                  f"{self.max_output} is below the reference length {len(self.reference)}")
        if self.drafts is not None and len(self.drafts) < len(self.reference) - 1:
            raise TrajectoryError(file, w, "drafts",
                                  f"{len(self.drafts)} prefixes drafted, need {len(self.reference) - 1}")
        for track in self.sources.values():
            track.validate(file, w)
        return self


# ---------------------------------------------------------------------------------------------
# parquet I/O


def save_windows(windows: Sequence[Window], directory: str | Path) -> Path:
    """Write ``windows.parquet`` and ``sources.parquet`` under ``directory``."""
    out = Path(directory)
    out.mkdir(parents=True, exist_ok=True)
    rows, srows = [], []
    for w in windows:
        d = w.drafts
        rows.append({
            "window_id": w.window_id, "dataset": w.dataset, "n_tokens": w.n_tokens,
            "reference": list(w.reference), "eos_id": w.eos_id, "vocab_size": w.vocab_size,
            "max_output": w.max_output, "synthetic": w.synthetic,
            "draft_tokens": None if d is None else [d[c][0] for c in d],
            "draft_confidences": None if d is None or d.confidences is None else [list(d[c][1] or ()) for c in d],
        })
        for s in w.sources.values():
            srows.append({
                "window_id": w.window_id, "source": s.source, "tokens": list(s.tokens),
                "confidences": None if s.confidences is None else list(s.confidences),
                "op_tokens": list(s.op_tokens), "op_ms": None if s.op_ms is None else list(s.op_ms),
                "eligible": s.eligible, "publication": s.publication,
            })
    from workbench.io import atomic_write_parquet

    # sources first, windows last: a crash in between leaves the old windows.parquet, never a new one
    # whose sources are missing (both atomic, unique temp names)
    atomic_write_parquet(out / "sources.parquet", pl.DataFrame(
        srows, schema_overrides={"confidences": pl.List(pl.Float64), "op_ms": pl.List(pl.Float64)}))
    atomic_write_parquet(out / "windows.parquet", pl.DataFrame(
        rows, schema_overrides={"draft_tokens": pl.List(pl.List(pl.Int64)),
                                "draft_confidences": pl.List(pl.List(pl.Float64)), "eos_id": pl.Int64}))
    return out


def _draft_table(tokens: list[list[int]] | None, confs: list[list[float]] | None) -> DraftTable | None:
    if tokens is None:
        return None
    width = max((len(t) for t in tokens), default=0)
    arr = np.full((len(tokens), width), -1, dtype=np.int64)
    carr = None if confs is None else np.zeros((len(tokens), width))
    for i, t in enumerate(tokens):
        arr[i, : len(t)] = t
        if carr is not None and confs is not None:  # carr exists exactly when confs do
            carr[i, : len(t)] = confs[i]
    return DraftTable(arr, carr, np.array([len(t) for t in tokens], dtype=np.int64))


def load_windows(directory: str | Path) -> list[Window]:
    """Read and validate a trajectory directory written by :func:`save_windows`."""
    base = Path(directory)
    wfile, sfile = base / "windows.parquet", base / "sources.parquet"
    tracks: dict[str, dict[str, SourceTrack]] = {}
    for f in (wfile, sfile):  # save_windows always writes both; one alone is an incomplete directory
        if not f.is_file():
            raise FileNotFoundError(f"{f}: missing -- {base} is not a complete trajectory directory "
                                    "(save_windows writes windows.parquet and sources.parquet); re-save it")
    for r in pl.read_parquet(sfile).iter_rows(named=True):
        tracks.setdefault(r["window_id"], {})[r["source"]] = SourceTrack(
            source=r["source"], tokens=tuple(r["tokens"]),
            confidences=None if r["confidences"] is None else tuple(r["confidences"]),
            op_tokens=tuple(r["op_tokens"]), op_ms=None if r["op_ms"] is None else tuple(r["op_ms"]),
            eligible=bool(r["eligible"]), publication=r.get("publication") or BATCHES,  # older files: batches
        )
    out = []
    for r in pl.read_parquet(wfile).iter_rows(named=True):
        w = Window(
            window_id=r["window_id"], dataset=r["dataset"], reference=tuple(r["reference"]),
            eos_id=r["eos_id"], vocab_size=r["vocab_size"], max_output=r["max_output"],
            drafts=_draft_table(r["draft_tokens"], r["draft_confidences"]),
            sources=tracks.get(r["window_id"], {}), synthetic=bool(r["synthetic"]),
        )
        out.append(w.validate(str(wfile), n_tokens=r["n_tokens"]))
    return out

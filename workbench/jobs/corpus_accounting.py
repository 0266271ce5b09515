"""Corpus accounting (D.1.2): requests, distinct audio inputs by hash, audio hours and output tokens.

The paper states its corpus this way -- "928 task requests over 913 distinct audio inputs of
1.6-75.2 s, totaling 12.2 hours of audio and 97,953 output tokens" -- because requests and audio
differ: spoken-QA questions share a passage. Every job on a dataset reports the same quantities
for its own windows, per dataset and for all of them: ``requests`` (windows), ``distinct_audio``
(distinct sha256 of the clip files), ``audio_hours`` and the shortest/longest clip (over distinct
audio), ``tokens`` (target output, EOS included) and ``useful_tokens`` (without EOS and the first
token chosen in prefill, D.1.2). Synthetic trajectories have no audio: those columns are null.
"""

from __future__ import annotations

from collections.abc import Sequence

import polars as pl
from omegaconf import DictConfig

from workbench.metrics import useful_tokens
from workbench.replay.trajectory import Window

SCHEMA = {"dataset": pl.Utf8, "requests": pl.Int64, "distinct_audio": pl.Int64, "audio_hours": pl.Float64,
          "min_seconds": pl.Float64, "max_seconds": pl.Float64, "tokens": pl.Int64, "useful_tokens": pl.Int64}


def _audio(cfg: DictConfig, windows: Sequence[Window]) -> dict[str, tuple[str, float]]:
    """window id -> (sha256 of its clip file, seconds); empty for synthetic trajectories."""
    if cfg.dataset.synthetic:
        return {}
    from workbench.traces.cache_key import file_sha256

    from .demo_traces import demo_corpus

    ids = {w.window_id for w in windows}
    return {c.window_id: (file_sha256(c.path), float(c.seconds)) for c in demo_corpus(cfg).clips if c.window_id in ids}


def _useful(w: Window) -> int:
    return useful_tokens(w.n_tokens, w.eos_id is not None and w.reference[-1] == w.eos_id)


def _row(dataset: str, ws: Sequence[Window], audio: dict[str, tuple[str, float]]) -> dict:
    clips = {audio[w.window_id][0]: audio[w.window_id][1] for w in ws if w.window_id in audio}
    have = bool(clips)
    return {"dataset": dataset, "requests": len(ws), "distinct_audio": len(clips) if have else None,
            "audio_hours": sum(clips.values()) / 3600 if have else None,
            "min_seconds": min(clips.values()) if have else None, "max_seconds": max(clips.values()) if have else None,
            "tokens": sum(w.n_tokens for w in ws), "useful_tokens": sum(_useful(w) for w in ws)}


def corpus_accounting(cfg: DictConfig, windows: Sequence[Window]) -> tuple[dict[str, float], pl.DataFrame]:
    """The table (one row per dataset, then ``all``) and its ``corpus.*`` metrics (the ``all`` row)."""
    audio = _audio(cfg, windows)
    by: dict[str, list[Window]] = {}
    for w in windows:
        by.setdefault(w.dataset, []).append(w)
    rows = [_row(d, ws, audio) for d, ws in sorted(by.items())] + [_row("all", list(windows), audio)]
    table = pl.DataFrame(rows, schema=SCHEMA)
    total = rows[-1]
    metrics = {f"corpus.{k}": float(v) for k, v in total.items() if k != "dataset" and v is not None}
    return metrics, table


__all__ = ["corpus_accounting"]

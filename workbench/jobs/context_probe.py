"""Job ``context_probe``: Fig. 3(b) (B.3.2) -- producer acceptance with and without the preceding
transcript, on paired blocks of the run's corpus (the demo corpus offline, or a paper dataset).

The Whisper pair runs offline; other families need their own context prompt and are refused with
one line naming the fix."""

from __future__ import annotations

from pathlib import Path

import polars as pl
from omegaconf import DictConfig, OmegaConf

from .base import ConfigError, JobResult
from .windows import check_dataset_root


def _probe_cfg(cfg: DictConfig) -> dict:
    p = OmegaConf.to_container(cfg.get("probe") or {}, resolve=True)
    for key in ("cap", "block_start", "block_seconds"):
        v = p.get(key)
        if isinstance(v, bool) or not isinstance(v, int | float) or v <= 0 or (key == "cap" and v != int(v)):
            raise ConfigError(f"probe.{key}", f"must be a positive number (cap: an integer), got {v!r}")
    return p


def validate(cfg: DictConfig) -> None:
    _probe_cfg(cfg)
    for role in ("target", "drafter"):
        family = cfg.model[role].get("family")
        if family != "whisper":
            raise ConfigError(f"model.{role}.family", f"the context probe runs Whisper pairs (<|startofprev|> "
                              f"context); {family!r} needs its own context prompt in diagnostics.context_probe")
    check_dataset_root(cfg)


def run(cfg: DictConfig, out: Path) -> JobResult:
    from workbench.diagnostics import context_probe as cp
    from workbench.models.pair import load_pair

    from .demo_traces import clip_audio, demo_corpus

    p = _probe_cfg(cfg)
    corpus = demo_corpus(cfg)
    # under the target's own audio limit (a paper dataset's windows were packed to it), not a fixed 30 s
    sources = [(c.window_id, str(c.origin), clip_audio(c, cfg.model), c.text) for c in corpus.clips]
    blocks = cp.make_blocks(sources, float(p["block_start"]), float(p["block_seconds"]))
    if p.get("max_blocks") is not None:
        blocks = blocks[: int(p["max_blocks"])]
    if not blocks:
        raise ConfigError("probe.block_start", f"no source is {p['block_start'] + p['block_seconds']:g} s long; "
                          "lower probe.block_start / probe.block_seconds")
    pair = load_pair(OmegaConf.to_container(cfg.model, resolve=True))
    frame = cp.probe(blocks, pair.target, pair.producer, cap=int(p["cap"]))
    metrics = {f"probe.{k}": v for k, v in cp.summary(frame, float(p.get("threshold", 0.05))).items()}
    summary = pl.DataFrame([{k.removeprefix("probe."): v for k, v in metrics.items()}])
    return JobResult(metrics, {"context_probe": frame, "summary": summary}, {}, summary,
                     {"probe": "context", "cap": str(p["cap"])})

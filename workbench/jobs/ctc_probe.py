"""Job ``ctc_probe``: B.1's per-corpus acceptance distribution with chunk (CTC) proposers.

Blocks of the run's corpus (the demo corpus offline, or a paper dataset) are proposed by each of
``probe.proposers`` -- ``pocketsphinx_en`` (offline) and/or ``parakeet_ctc`` (the release named by
``probe.parakeet_ctc``) -- and checked against the Whisper target's greedy continuation, up to
``probe.cap`` tokens (B.1: K = 32). One row per (block, proposer) in table ``ctc_probe``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import polars as pl
from omegaconf import DictConfig, OmegaConf

from .base import ConfigError, JobResult
from .windows import check_dataset_root

PROPOSERS = ("pocketsphinx_en", "parakeet_ctc")


def _probe(cfg: DictConfig) -> dict:
    p = OmegaConf.to_container(cfg.get("probe") or {}, resolve=True)
    for key in ("cap", "block_start", "block_seconds"):
        v = p.get(key)
        if isinstance(v, bool) or not isinstance(v, int | float) or v <= 0 or (key == "cap" and v != int(v)):
            raise ConfigError(f"probe.{key}", f"must be a positive number (cap: an integer), got {v!r}")
    names = p.get("proposers") or []
    bad = [n for n in names if n not in PROPOSERS]
    if not names or bad:
        raise ConfigError("probe.proposers", f"name one or more of {list(PROPOSERS)}, got {names!r}")
    return p


def validate(cfg: DictConfig) -> None:
    p = _probe(cfg)
    if cfg.model.target.get("family") != "whisper":
        raise ConfigError("model.target.family", "the CTC probe verifies with a Whisper target (its context "
                          f"prompt, diagnostics.context_probe); got {cfg.model.target.get('family')!r}")
    if "parakeet_ctc" in p["proposers"]:
        from workbench.models.registry import MissingWeightsError, ModelSpec, resolve_weights

        try:
            resolve_weights(ModelSpec.from_dict(p["parakeet_ctc"]))
        except MissingWeightsError as err:
            raise ConfigError("probe.parakeet_ctc", str(err)) from err
    check_dataset_root(cfg)


def run(cfg: DictConfig, out: Path) -> JobResult:
    from workbench.diagnostics import context_probe as cp
    from workbench.diagnostics.ctc_acceptance import ctc_probe, parakeet_proposer, pocketsphinx_proposer
    from workbench.models.pair import load_pair

    from .demo_traces import clip_audio, demo_corpus

    p = _probe(cfg)
    corpus = demo_corpus(cfg)
    sources = [(c.window_id, str(c.origin), clip_audio(c, cfg.model), c.text) for c in corpus.clips]
    blocks = cp.make_blocks(sources, float(p["block_start"]), float(p["block_seconds"]))
    if p.get("max_blocks") is not None:
        blocks = blocks[: int(p["max_blocks"])]
    if not blocks:
        raise ConfigError("probe.block_start", f"no source is {p['block_start'] + p['block_seconds']:g} s long; "
                          "lower probe.block_start / probe.block_seconds")
    target = load_pair(OmegaConf.to_container(cfg.model, resolve=True)).target
    makers = {"pocketsphinx_en": lambda: pocketsphinx_proposer(target.codec),
              "parakeet_ctc": lambda: parakeet_proposer(target.codec, p["parakeet_ctc"])}
    frame = ctc_probe(blocks, target, {n: makers[n]() for n in p["proposers"]}, cap=int(p["cap"]))
    summary = frame.group_by("proposer", "dataset", maintain_order=True).agg(
        pl.len().alias("blocks"), pl.col("acceptance").is_not_null().sum().alias("nonempty"),
        pl.col("acceptance").median().alias("median_acceptance"),
        (pl.col("acceptance") == 0).mean().alias("zero_share"))
    metrics = {f"b1.{r['proposer']}.{r['dataset']}.median_acceptance": r["median_acceptance"]
               for r in summary.iter_rows(named=True) if r["median_acceptance"] is not None}
    corpus_metrics, corpus_table = corpus_accounting_of_clips(cfg, corpus)
    metrics.update(corpus_metrics)
    return JobResult(metrics, {"ctc_probe": frame, "summary": summary, "corpus_accounting": corpus_table}, {},
                     summary, {"probe": "ctc", "cap": str(p["cap"]), "proposers": ",".join(p["proposers"])})


def corpus_accounting_of_clips(cfg: DictConfig, corpus: Any) -> tuple[dict[str, float], pl.DataFrame]:
    """D.1.2's accounting over the probed corpus's clips (no target references exist here: no tokens)."""
    from workbench.traces.cache_key import file_sha256

    rows = {}
    for c in corpus.clips:
        rows.setdefault(str(c.origin), []).append((file_sha256(c.path), float(c.seconds)))
    out = []
    for ds, items in [*sorted(rows.items()), ("all", [x for v in rows.values() for x in v])]:
        audio = dict(items)
        out.append({"dataset": ds, "requests": len(items), "distinct_audio": len(audio),
                    "audio_hours": sum(audio.values()) / 3600})
    table = pl.DataFrame(out)
    total = out[-1]
    return {f"corpus.{k}": float(v) for k, v in total.items() if k != "dataset"}, table

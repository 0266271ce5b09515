"""Traces of real speech for replay: corpus clips -> target references, producer streams, drafts.

Collected once per (model pair, corpus clip) into the user cache and reused; collection is
resumable, so an interrupted demo continues where it stopped. Sources are stored under their
role: ``producer`` (the target-decoupled drafter, Tok_T-converted when cross-vocabulary) and
``chunk`` (the pair's external chunked source: PocketSphinx or Parakeet CTC, atomic chunks, no
confidence). Any registered pair (Whisper, Qwen3-ASR, Qwen2-Audio, Qwen2.5-Omni) goes through
``models.pair``; audio loads under the target's own limit and every window is prompted with its
own instruction from the cohort manifest (translation target, spoken-QA question).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from omegaconf import DictConfig, OmegaConf

from workbench.data.corpus import Clip, Corpus, corpus_from_config
from workbench.models.cache import cache_root
from workbench.replay.trajectory import Window
from workbench.traces.collect import WindowJob, collect
from workbench.traces.windows import CountedStream, chunk_stream

from .base import ConfigError

if TYPE_CHECKING:
    from workbench.models.pair import ModelPair

ASP_CAP = 24  # drafts up to ASP's cap cover SD's K-1 and ASP's adaptive chains (D.1.3)


def load_model_pair(cfg: DictConfig) -> ModelPair:
    """The run's model pair (``workbench.models.pair``); a bad or missing model is one ``ConfigError``."""
    from workbench.models.pair import SESSION_FAMILIES, PairError, load_pair
    from workbench.models.registry import MissingWeightsError

    if cfg.model.target.family not in SESSION_FAMILIES:
        raise ConfigError("model.target.family", f"traces and native runs take a target of {list(SESSION_FAMILIES)}, "
                          f"not {cfg.model.target.family!r}")
    try:
        return load_pair(OmegaConf.to_container(cfg.model, resolve=True), engine=str(cfg.model.engine))
    except MissingWeightsError as err:
        raise ConfigError("model", str(err)) from err
    except PairError as err:
        raise ConfigError(err.key, err.problem) from err


def clip_audio(clip: Clip, model: Any) -> Any:
    """A clip's samples under the target's own audio limit (Whisper 30 s; Qwen3-ASR/Omni long audio)."""
    from workbench.data.audio import load_audio
    from workbench.data.datasets.windows import model_max_seconds

    m = model if isinstance(model, dict) else OmegaConf.to_container(model, resolve=True)
    return load_audio(clip.path, max_seconds=model_max_seconds(m))


def instructions(corpus: Corpus) -> dict[str, str]:
    """Each window's instruction from the cohort manifest beside the clips (paper datasets); the
    demo corpus has none (the pair's ``prompt:`` block applies)."""
    path = corpus.root / "cohort.parquet"
    if not path.is_file():
        return {}
    import polars as pl

    frame = pl.read_parquet(path, columns=["window_id", "instruction"])
    return {r["window_id"]: r["instruction"] for r in frame.iter_rows(named=True) if r["instruction"]}


def trace_job(pair: ModelPair, clip: Clip, corpus: Corpus, instruction: str | None = None) -> WindowJob:
    """What to collect for one clip: target reference, producer stream(s), serial drafts."""

    def audio() -> Any:
        return clip_audio(clip, pair.config)

    producers = {"producer": lambda: CountedStream(*pair.producer_stream(audio(), instruction))}
    for name in pair.external:  # at most one chunk role per trace (the profile prices one)
        producers["chunk"] = (lambda n=name: chunk_stream(pair.chunk_stream(n, audio())))
        break
    drafter = (lambda: pair.new_drafter(audio(), instruction)) if pair.serial_cfg is not None else None
    return WindowJob(clip.window_id, lambda: pair.new_target(audio(), instruction), producers, drafter)


class _CachedOnly:
    """What ``demo_windows`` needs of a model pair when all traces exist: ids and limits only."""

    def __init__(self, model: DictConfig) -> None:
        from workbench.models.lm_sessions import is_audio_lm, lm_meta
        from workbench.models.registry import ModelSpec, resolve_weights
        from workbench.models.whisper import load_whisper_meta

        path = resolve_weights(ModelSpec.from_dict(OmegaConf.to_container(model.target)))
        if is_audio_lm(str(model.target.family)):
            meta = lm_meta(path)
            self.eos_id, self.vocab_size = meta["eos_id"], meta["vocab_size"]
            self.max_output = min(int(model.max_new_tokens), int(meta["max_positions"]))
            return
        meta = load_whisper_meta(path)
        self.eos_id, self.vocab_size = meta["eos_id"], meta["vocab_size"]
        self.max_output = min(int(model.max_new_tokens), meta["max_target_positions"] - meta["prompt_len"])


def trace_cache(cfg: DictConfig, limits: Any) -> Any:
    """The keyed, validated trace cache of this model pair on this corpus (``traces.cache``)."""
    from workbench.data.corpus import VERSION
    from workbench.traces.cache import open_trace_cache

    return open_trace_cache(cache_root() / "traces", str(cfg.model.name),
                            OmegaConf.to_container(cfg.model, resolve=True),
                            OmegaConf.to_container(cfg.dataset, resolve=True), cap=limits.max_output,
                            asp_cap=ASP_CAP, corpus_version=VERSION)


def demo_corpus(cfg: DictConfig) -> Corpus:
    ds = OmegaConf.to_container(cfg.dataset, resolve=True)
    if ds["loader"]:  # a paper dataset on disk (conf/dataset/<name>.yaml, dataset.root=...): its cohort split
        from workbench.data.datasets.materialize import corpus_from_dataset

        return corpus_from_dataset(ds, OmegaConf.to_container(cfg.model, resolve=True))
    return corpus_from_config(ds)


def demo_windows(cfg: DictConfig, pair: ModelPair | None = None) -> list[Window]:
    """Collect (or reuse valid) traces for the corpus clips and return them as replay windows.

    Reuse needs a matching content key and a window that passes validation; anything else is
    quarantined and collected again, with a warning that says why (``traces.cache``)."""
    from workbench.traces.cache_key import file_sha256
    from workbench.traces.windows import trace_to_window

    corpus = demo_corpus(cfg)
    limits = pair or _CachedOnly(cfg.model)  # ids and limits without loading any model
    cache = trace_cache(cfg, limits)
    sha = {c.window_id: file_sha256(c.path) for c in corpus.clips}
    todo = [c for c in corpus.clips if not cache.ready(c.window_id, sha[c.window_id], limits.vocab_size)]
    if todo:
        pair = pair or load_model_pair(cfg)
        asks = instructions(corpus)
        jobs = [trace_job(pair, c, corpus, asks.get(c.window_id)) for c in todo]
        for job in jobs:
            job.manifest.update(cache.manifest_fields(sha[job.window_id]))
        collect(jobs, cache.dir, cap=limits.max_output, asp_cap=ASP_CAP)
    # the dataset field drives the balanced dev/test split: stratify by where the speech came from
    return [trace_to_window(cache.frame(c.window_id), c.window_id, dataset=c.origin, eos_id=limits.eos_id,
                            vocab_size=limits.vocab_size, max_output=limits.max_output) for c in corpus.clips]

"""Traces of real speech for replay: corpus clips -> target references, producer streams, drafts.

Collected once per (model pair, corpus clip) into the user cache and reused; collection is
resumable, so an interrupted demo continues where it stopped. Sources are stored under their
role: ``producer`` (the target-decoupled drafter, Tok_T-converted when cross-vocabulary) and
``chunk`` (the external chunked PocketSphinx source).
"""

from __future__ import annotations

from typing import Any

from omegaconf import DictConfig, OmegaConf

from workbench.data.corpus import Clip, Corpus, corpus_from_config
from workbench.models.cache import cache_root
from workbench.replay.trajectory import Window
from workbench.traces.collect import WindowJob, collect
from workbench.traces.windows import CountedStream, chunk_stream

from .base import ConfigError

ASP_CAP = 24  # drafts up to ASP's cap cover SD's K-1 and ASP's adaptive chains (D.1.3)


class Backends:
    """The real models of a model pair, loaded once per job."""

    def __init__(self, model: DictConfig) -> None:
        from workbench.models.registry import MissingWeightsError, ModelSpec, load_whisper_spec, resolve_weights

        m = OmegaConf.to_container(model, resolve=True)
        try:
            self.target_spec = ModelSpec.from_dict(m["target"])
            if self.target_spec.family != "whisper":
                raise ConfigError("model.target.family", "the offline demo runs Whisper pairs; use replay on "
                                  "collected traces for other families")
            self.target = load_whisper_spec(self.target_spec)
            self.target_dir = resolve_weights(self.target_spec)
            self.producer_cfg = m["drafter"]
            self.producer = load_whisper_spec(ModelSpec.from_dict(m["drafter"]))
            serial = m.get("serial_drafter") or (m["drafter"] if m["drafter"].get("vocabulary") == "shared" else None)
            self.serial_cfg = serial
            self.serial = load_whisper_spec(ModelSpec.from_dict(serial)) if serial else None
        except MissingWeightsError as err:
            raise ConfigError("model", str(err)) from err
        self.max_new_tokens = int(m.get("max_new_tokens", 224))
        self.external = list(m.get("external_sources") or [])

    @property
    def eos_id(self) -> int:
        return self.target.protocol.eos_id

    @property
    def vocab_size(self) -> int:
        return self.target.config.vocab_size

    @property
    def max_output(self) -> int:
        cap = self.target.config.max_target_positions - len(self.target.protocol.prompt_ids)
        return min(self.max_new_tokens, cap)

    def producer_stream(self, audio: Any) -> CountedStream:
        from workbench.models.vocab import VocabularyConverter, convert_stream
        from workbench.models.whisper import whisper_producer

        inner = whisper_producer(self.producer, audio, max_new_tokens=self.max_output)
        stream: Any = inner
        if self.producer_cfg.get("vocabulary") == "cross":
            conv = VocabularyConverter(self.producer.codec, self.target.codec, self.producer.protocol.eos_id,
                                       self.eos_id)
            stream = convert_stream(inner, conv)
        return CountedStream(stream, inner)

    def job(self, clip: Clip, corpus: Corpus) -> WindowJob:
        from workbench.models.external import pocketsphinx_chunks
        from workbench.models.whisper import WhisperTarget, whisper_drafter

        def audio() -> Any:
            return corpus.load_audio(clip)

        producers = {"producer": lambda: self.producer_stream(audio())}
        if "pocketsphinx_en" in self.external:
            producers["chunk"] = lambda: chunk_stream(pocketsphinx_chunks(audio(), self.target.codec))
        drafter = (lambda: whisper_drafter(self.serial, audio())) if self.serial is not None else None
        return WindowJob(clip.window_id, lambda: WhisperTarget(self.target, audio()), producers, drafter)


class _CachedOnly:
    """What ``demo_windows`` needs of a model pair when all traces exist: ids and limits only."""

    def __init__(self, model: DictConfig) -> None:
        from workbench.models.registry import ModelSpec, resolve_weights
        from workbench.models.whisper import load_whisper_meta

        meta = load_whisper_meta(resolve_weights(ModelSpec.from_dict(OmegaConf.to_container(model.target))))
        self.eos_id, self.vocab_size = meta["eos_id"], meta["vocab_size"]
        self.max_output = min(int(model.get("max_new_tokens", 224)), meta["max_target_positions"] - meta["prompt_len"])


def trace_cache(cfg: DictConfig, limits: Any) -> Any:
    """The keyed, validated trace cache of this model pair on this corpus (``traces.cache``)."""
    from workbench.data.corpus import VERSION
    from workbench.traces.cache import open_trace_cache

    return open_trace_cache(cache_root() / "traces", str(cfg.model.get("name", "model")),
                            OmegaConf.to_container(cfg.model, resolve=True),
                            OmegaConf.to_container(cfg.dataset, resolve=True), cap=limits.max_output,
                            asp_cap=ASP_CAP, corpus_version=VERSION)


def demo_corpus(cfg: DictConfig) -> Corpus:
    return corpus_from_config(OmegaConf.to_container(cfg.dataset, resolve=True))


def demo_windows(cfg: DictConfig, backends: Backends | None = None) -> list[Window]:
    """Collect (or reuse valid) traces for the corpus clips and return them as replay windows.

    Reuse needs a matching content key and a window that passes validation; anything else is
    quarantined and collected again, with a warning that says why (``traces.cache``)."""
    from workbench.traces.cache_key import file_sha256
    from workbench.traces.windows import trace_to_window

    corpus = demo_corpus(cfg)
    limits = backends or _CachedOnly(cfg.model)  # ids and limits without loading any model
    cache = trace_cache(cfg, limits)
    sha = {c.window_id: file_sha256(c.path) for c in corpus.clips}
    todo = [c for c in corpus.clips if not cache.ready(c.window_id, sha[c.window_id], limits.vocab_size)]
    if todo:
        backends = backends or Backends(cfg.model)
        jobs = [backends.job(c, corpus) for c in todo]
        for job in jobs:
            job.manifest.update(cache.manifest_fields(sha[job.window_id]))
        collect(jobs, cache.dir, cap=limits.max_output, asp_cap=ASP_CAP)
    # the dataset field drives the balanced dev/test split: stratify by where the speech came from
    return [trace_to_window(cache.frame(c.window_id), c.window_id, dataset=c.origin, eos_id=limits.eos_id,
                            vocab_size=limits.vocab_size, max_output=limits.max_output) for c in corpus.clips]

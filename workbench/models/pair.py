"""One model pair (a ``conf/model`` mapping): target, target-decoupled producer, serial drafter.

The one loader behind trace collection, native host runs, calibration and the benchmark. Every
number (budget, max_new_tokens, the producer's batch_tokens) comes from the mapping, i.e. from
``conf/model/*.yaml``: there are no defaults here, so code and YAML cannot disagree.

* ``engine`` names what runs the weights: ``"torch"`` today; another engine (MNN) adds a branch in
  ``_load`` and its name to ``ENGINES``.
* ``family`` picks the loader (Whisper, the Qwen audio LMs, CTC sources) through the registry.
  Per-window sessions (``new_target``, ``new_drafter``, ``producer_stream``) are wired for Whisper
  pairs so far; the other families load here and get their sessions in ``SESSION_FAMILIES`` later.

Heavy members load lazily: the producer's bundle only when a stream is built in this process (the
native producer process loads its own), the serial drafter only when SD/ASP need it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from functools import cached_property
from pathlib import Path
from typing import Any

ENGINES = ("torch", "mnn")  # mnn: workbench.models.mnn (Whisper exported to MNN, run by MNN's Python package)
SESSION_FAMILIES = ("whisper",)  # families whose per-window sessions are wired here


class PairError(ValueError):
    """A bad or missing model-pair setting; ``key`` is the dotted config key to fix."""

    def __init__(self, key: str, problem: str) -> None:
        super().__init__(f"{key}: {problem}")
        self.key, self.problem = key, problem


def _need(block: Mapping[str, Any], key: str, where: str) -> Any:
    if block.get(key) is None:
        raise PairError(f"{where}.{key}", "missing; set it in the pair's conf/model/<name>.yaml")
    return block[key]


def _load(spec: Any, engine: str, mnn: Mapping[str, Any] | None = None) -> Any:
    """Load one ``ModelSpec`` with ``engine``; weights resolve offline (MissingWeightsError otherwise)."""
    from .registry import AUDIO_LM_CLASSES, CTC_CLASSES, load_audio_lm_spec, load_ctc_spec, load_whisper_spec

    if engine == "mnn":  # families MNN cannot run were refused by check_engine in load_pair: no fallback
        from .mnn.runtime import MnnSettings
        from .mnn.whisper import load_mnn_spec

        return load_mnn_spec(spec, MnnSettings.from_dict(mnn))
    if engine != "torch":
        raise PairError("engine", f"unknown engine {engine!r}; choose one of {list(ENGINES)}")
    if spec.family == "whisper":
        return load_whisper_spec(spec)
    if spec.family in AUDIO_LM_CLASSES:
        return load_audio_lm_spec(spec)
    if spec.family in CTC_CLASSES:
        return load_ctc_spec(spec)
    raise PairError("model.target.family", f"unknown model family {spec.family!r}")


@dataclass
class ModelPair:
    """The loaded target plus the producer and serial-drafter blocks of one ``conf/model`` mapping."""

    config: dict[str, Any]
    engine: str
    target: Any  # the target's loaded bundle (WhisperBundle, AudioLMBundle)
    target_dir: Path
    producer_cfg: dict[str, Any]  # the ``drafter`` block: the target-decoupled producer
    serial_cfg: dict[str, Any] | None  # prefix-conditioned drafter of SD / ASP / w/o TD (target vocabulary)
    budget: int
    max_new_tokens: int
    external: tuple[str, ...] = ()
    _bundles: dict[str, Any] = field(default_factory=dict, repr=False)

    @property
    def family(self) -> str:
        return str(self.config["target"]["family"])

    @property
    def producer_name(self) -> str:
        return str(self.producer_cfg["name"])

    @property
    def serial_name(self) -> str | None:
        return None if self.serial_cfg is None else str(self.serial_cfg["name"])

    @property
    def cross_vocabulary(self) -> bool:
        return self.producer_cfg.get("vocabulary") == "cross"

    @property
    def batch_tokens(self) -> int:
        return int(_need(self.producer_cfg, "batch_tokens", "model.drafter"))

    @property
    def target_tokenizer(self) -> str | None:
        """The target's tokenizer.json, which a cross-vocabulary producer publishes through (Tok_T)."""
        return str(self.target_dir / "tokenizer.json") if self.cross_vocabulary else None

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

    @cached_property
    def producer(self) -> Any:
        """The producer's bundle, loaded in this process (trace collection)."""
        return self._bundle(self.producer_cfg)

    @cached_property
    def serial(self) -> Any:
        if self.serial_cfg is None:
            raise PairError("model.serial_drafter", f"SD, ASP and w/o TD need a prefix-conditioned drafter in the "
                            f"target's vocabulary; producer {self.producer_name} is cross-vocabulary. Add a "
                            "serial_drafter block")
        return self._bundle(self.serial_cfg)

    def _bundle(self, block: Mapping[str, Any]) -> Any:
        from .registry import ModelSpec

        name = str(block["name"])
        if name not in self._bundles:
            self._bundles[name] = _load(ModelSpec.from_dict(dict(block)), self.engine, self.config.get("mnn"))
        return self._bundles[name]

    def with_producer(self, block: Mapping[str, Any]) -> ModelPair:
        """The same loaded target with another producer (the benchmark's second As²d producer)."""
        return replace(self, producer_cfg=dict(block), _bundles=self._bundles)

    # ---- per-window sessions (Whisper pairs so far) ---------------------------------------------
    def _sessions(self) -> None:
        if self.family not in SESSION_FAMILIES:
            raise PairError("model.target.family", f"per-window sessions are wired for {list(SESSION_FAMILIES)} "
                            f"pairs so far, not {self.family!r}: collect traces with workbench.traces.collect "
                            "and replay them")

    def new_target(self, audio: Any) -> Any:
        """A fresh ``Target`` on ``audio`` (its prefill is the caller's, before the clock)."""
        from .whisper import WhisperTarget

        self._sessions()
        if self.engine == "mnn":
            from .mnn.whisper import MnnWhisperTarget as WhisperTarget
        return WhisperTarget(self.target, audio)

    def new_drafter(self, audio: Any) -> Any:
        """A fresh prefix-conditioned ``Drafter`` on ``audio`` (its audio prefill happens here)."""
        from .whisper import whisper_drafter

        self._sessions()
        if self.engine == "mnn":
            from .mnn.whisper import mnn_drafter as whisper_drafter
        return whisper_drafter(self.serial, audio)

    def producer_stream(self, audio: Any) -> Any:
        """(stream, inner): the producer's tokens in the target vocabulary, and its own-token iterator."""
        from .vocab import VocabularyConverter, convert_stream
        from .whisper import whisper_producer

        self._sessions()
        if self.engine == "mnn":
            from .mnn.whisper import mnn_producer as whisper_producer
        inner = whisper_producer(self.producer, audio, max_new_tokens=self.max_output)
        if not self.cross_vocabulary:
            return inner, inner
        conv = VocabularyConverter(self.producer.codec, self.target.codec, self.producer.protocol.eos_id, self.eos_id)
        return convert_stream(inner, conv), inner


def load_pair(model_cfg: Mapping[str, Any], *, engine: str | None = None) -> ModelPair:
    """Load the target of a ``conf/model`` mapping; producer and serial drafter load on first use.

    The serial drafter is ``serial_drafter``, else the producer when it shares the target's vocabulary.
    Missing weights raise the registry's ``MissingWeightsError`` (model name and three remedies)."""
    from .mnn.runtime import EngineConfigError, check_engine
    from .registry import ModelSpec, resolve_weights

    m = {k: (dict(v) if isinstance(v, Mapping) else v) for k, v in model_cfg.items()}
    engine = str(engine or m.get("engine") or "torch")  # ``engine`` argument, else the mapping's (model.engine)
    m["engine"] = engine
    try:  # the engine and its runtime settings are checked before any model loads
        check_engine(m)
    except EngineConfigError as err:
        raise PairError("model.engine" if "engine" in str(err).split(":")[1] else "model.mnn", str(err)) from None
    if engine not in ENGINES:
        raise PairError("engine", f"unknown engine {engine!r}; choose one of {list(ENGINES)}")
    producer = dict(_need(m, "drafter", "model"))
    if engine == "mnn":  # the producer process builds its model from this block alone
        producer.update(engine="mnn", mnn=dict(m.get("mnn") or {}))
    serial = m.get("serial_drafter") or (producer if producer.get("vocabulary") == "shared" else None)
    spec = ModelSpec.from_dict(dict(_need(m, "target", "model")))
    budget = _need(m, "budget", "model")
    return ModelPair(m, engine, _load(spec, engine, m.get("mnn")), resolve_weights(spec), producer, serial, int(budget),
                     int(_need(m, "max_new_tokens", "model")), tuple(m.get("external_sources") or ()))


__all__ = ["ENGINES", "ModelPair", "PairError", "load_pair"]

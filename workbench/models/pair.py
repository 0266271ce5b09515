"""One model pair (a ``conf/model`` mapping): target, target-decoupled producer, serial drafter.

The one loader behind trace collection, native host runs, calibration and the benchmark. Every
number (budget, max_new_tokens, the producer's batch_tokens) comes from the mapping, i.e. from
``conf/model/*.yaml``: there are no defaults here, so code and YAML cannot disagree.

* ``engine`` names what runs the weights: ``"torch"`` today; another engine (MNN) adds a branch in
  ``_load`` and its name to ``ENGINES``.
* ``family`` picks the loader (Whisper, the Qwen audio LMs, CTC sources) through the registry.
  Per-window sessions (``new_target``, ``new_drafter``, ``producer_stream``) exist for every family
  in ``SESSION_FAMILIES``; audio LMs build them from their own processor and chat template
  (``models.lm_sessions``) with the request's instruction (``instruction=``, the cohort manifest's).
* ``external`` names the chunked sources (``pocketsphinx_en``, ``parakeet_ctc``): ``chunk_stream``.

Heavy members load lazily: the producer's bundle only when a stream is built in this process (the
native producer process loads its own), the serial drafter only when SD/ASP need it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from functools import cached_property
from pathlib import Path
from typing import Any

from workbench.errors import ConfigError

ENGINES = ("torch", "mnn")  # mnn: workbench.models.mnn (Whisper exported to MNN, run by MNN's Python package)
EXTERNAL_SOURCES = ("pocketsphinx_en", "parakeet_ctc")  # chunked sources (C.1)
SESSION_FAMILIES = ("whisper", "qwen3_asr", "qwen2_audio", "qwen2_5_omni")  # per-window sessions wired here


class PairError(ConfigError):
    """A bad or missing model-pair setting; ``key`` is the dotted config key to fix."""

    def __init__(self, key: str, problem: str) -> None:
        super().__init__(key, problem)
        self.problem = problem


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
    def audio_lm(self) -> bool:
        from .lm_sessions import is_audio_lm

        return is_audio_lm(self.family)

    @property
    def prompt_cfg(self) -> dict[str, Any]:
        """The pair's ``prompt:`` block (audio LMs; each family takes the keys its prompt helper has)."""
        return dict(self.config.get("prompt") or {})

    @property
    def target_codec(self) -> Any:
        from .lm_sessions import lm_codec

        return lm_codec(self.target) if self.audio_lm else self.target.codec

    @property
    def eos_id(self) -> int:
        from .lm_sessions import lm_eos

        return lm_eos(self.target) if self.audio_lm else self.target.protocol.eos_id

    @property
    def vocab_size(self) -> int:
        from .lm_sessions import lm_vocab_size

        return lm_vocab_size(self.target) if self.audio_lm else self.target.config.vocab_size

    @property
    def max_output(self) -> int:
        """``max_new_tokens``, within the target's positions (Whisper: its 448-token decoder; audio
        LMs: their context, which long audio shares -- the prompt is checked per window)."""
        from .lm_sessions import lm_max_positions

        if self.audio_lm:
            return min(self.max_new_tokens, lm_max_positions(self.target))
        cap = self.target.config.max_target_positions - len(self.target.protocol.prompt_ids)
        return min(self.max_new_tokens, cap)

    @property
    def max_audio_seconds(self) -> float | None:
        """The target's audio limit (``model.max_audio_seconds`` or its family's; None: long audio)."""
        from workbench.data.datasets.windows import model_max_seconds

        return model_max_seconds(self.config)

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

    def use_kernel_plan(self, plan: Any) -> bool:
        """Run the target's decoder forwards by ``plan`` (``models.kernel_plan``, this machine's host
        profile); True when the target took it: a torch Whisper target with packed linears
        (``kernels: auto``). Other targets keep their kernels (MNN chooses its own)."""
        switch = getattr(self.target, "kernels", None)
        if switch is None:
            return False
        switch.plan = plan
        return True

    def with_producer(self, block: Mapping[str, Any]) -> ModelPair:
        """The same loaded target with another producer (the benchmark's second As²d producer)."""
        return replace(self, producer_cfg=dict(block), _bundles=self._bundles)

    # ---- per-window sessions ---------------------------------------------------------------------
    def _sessions(self) -> None:
        if self.family not in SESSION_FAMILIES:
            raise PairError("model.target.family", f"per-window sessions exist for {list(SESSION_FAMILIES)}, "
                            f"not {self.family!r}")

    def _block_prompt(self, block: Mapping[str, Any] | None) -> dict[str, Any]:
        """A member's own ``prompt:`` (e.g. the Qwen3-ASR drafter of an Omni target), else the pair's."""
        return dict((block or {}).get("prompt") or self.prompt_cfg)

    def new_target(self, audio: Any, instruction: str | None = None) -> Any:
        """A fresh ``Target`` on ``audio`` (its prefill is the caller's, before the clock)."""
        self._sessions()
        if self.audio_lm:
            from .lm_sessions import lm_target

            return lm_target(self.target, self.prompt_cfg, audio, instruction)
        from .whisper import WhisperTarget

        if self.engine == "mnn":
            from .mnn.whisper import MnnWhisperTarget as WhisperTarget
        return WhisperTarget(self.target, audio)

    def new_drafter(self, audio: Any, instruction: str | None = None) -> Any:
        """A fresh prefix-conditioned ``Drafter`` on ``audio`` (its audio prefill happens here)."""
        self._sessions()
        if getattr(self.serial, "processor", None) is not None:  # an audio-LM serial drafter
            from .lm_sessions import lm_drafter

            return lm_drafter(self.serial, self._block_prompt(self.serial_cfg), audio, self.max_output, instruction)
        from .whisper import whisper_drafter

        if self.engine == "mnn":
            from .mnn.whisper import mnn_drafter as whisper_drafter
        return whisper_drafter(self.serial, audio)

    def producer_stream(self, audio: Any, instruction: str | None = None) -> Any:
        """(stream, inner): the producer's tokens in the target vocabulary, and its own-token iterator."""
        from .vocab import VocabularyConverter, convert_stream

        self._sessions()
        bundle = self.producer
        if getattr(bundle, "processor", None) is not None:  # an audio-LM producer
            from .lm_sessions import lm_codec, lm_eos, lm_producer

            inner = lm_producer(bundle, self._block_prompt(self.producer_cfg), audio, self.max_output, instruction)
            codec, eos = (lm_codec(bundle), lm_eos(bundle)) if self.cross_vocabulary else (None, None)
        else:
            from .whisper import whisper_producer

            if self.engine == "mnn":
                from .mnn.whisper import mnn_producer as whisper_producer
            inner = whisper_producer(bundle, audio, max_new_tokens=self.max_output)
            codec, eos = bundle.codec, bundle.protocol.eos_id
        if not self.cross_vocabulary:
            return inner, inner
        conv = VocabularyConverter(codec, self.target_codec, eos, self.eos_id)
        return convert_stream(inner, conv), inner

    def chunk_stream(self, name: str, audio: Any) -> Any:
        """One external chunked source (C.1): atomic chunk publications, no confidence."""
        from .external import parakeet_ctc_chunks, pocketsphinx_chunks

        if name == "pocketsphinx_en":
            return pocketsphinx_chunks(audio, self.target_codec)
        if name == "parakeet_ctc":
            block = self.config.get("parakeet_ctc")
            if not block:
                raise PairError("model.parakeet_ctc", "external source parakeet_ctc needs its block "
                                "(name, family: parakeet_ctc, local_path, chunk_seconds)")
            if "parakeet_ctc" not in self._bundles:  # CTC sources run on torch whatever the pair's engine
                from .registry import ModelSpec

                self._bundles["parakeet_ctc"] = _load(ModelSpec.from_dict(dict(block)), "torch")
            ctc = self._bundles["parakeet_ctc"]
            return parakeet_ctc_chunks(audio, self.target_codec, ctc.model, ctc.processor,
                                       float(block.get("chunk_seconds") or 2.56))
        if name == "sensevoice":  # the paper's third chunk source (priced in the phone profiles)
            raise PairError("model.external_sources", "sensevoice has no runtime wired here: its weights are not on "
                            "any package registry. Install sherpa-onnx (pip install sherpa-onnx) and the "
                            "sherpa-onnx-sense-voice-zh-en-ja-ko-yue model from k2-fsa's releases, or funasr with "
                            "iic/SenseVoiceSmall from ModelScope; use parakeet_ctc or pocketsphinx_en meanwhile")
        raise PairError("model.external_sources", f"unknown external source {name!r}; known: "
                        f"{list(EXTERNAL_SOURCES)}")


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
    if m.get("prompt") and not producer.get("prompt"):  # ... including an audio LM's prompt settings
        producer["prompt"] = dict(m["prompt"])
    serial = m.get("serial_drafter") or (producer if producer.get("vocabulary") == "shared" else None)
    spec = ModelSpec.from_dict(dict(_need(m, "target", "model")))
    budget = _need(m, "budget", "model")
    return ModelPair(m, engine, _load(spec, engine, m.get("mnn")), resolve_weights(spec), producer, serial, int(budget),
                     int(_need(m, "max_new_tokens", "model")), tuple(m.get("external_sources") or ()))


__all__ = ["ENGINES", "EXTERNAL_SOURCES", "SESSION_FAMILIES", "ModelPair", "PairError", "load_pair"]

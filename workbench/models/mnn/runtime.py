"""MNN runtime settings (``engine: mnn`` in ``conf/model``), checked before any work, and module loading.

The host runs MNN's Python package (``MNN`` on PyPI): the exported ``.mnn`` files and the calls are
the ones a phone makes; only the backend differs (CPU here, OpenCL / Vulkan named for phones).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, fields
from typing import Any

import numpy as np

from workbench.errors import WorkbenchError

ENGINES = ("torch", "mnn")
PRECISIONS = ("low", "normal", "high")
MEMORY_MODES = ("low", "normal", "high")
BACKENDS = {"cpu": "CPU", "opencl": "OPENCL", "vulkan": "VULKAN", "metal": "METAL"}  # name -> MNN enum
HOST_BACKENDS = ("cpu",)  # what MNN's Python package runs here; the rest are for phones (phone_runner)
# Families whose MNN export exists in this workbench. Qwen3-ASR has no exporter at all: llmexport
# 0.0.5 knows qwen3 / qwen2_audio / qwen2.5-omni, not qwen3_asr.
MNN_FAMILIES = ("whisper",)
WHY_NOT = {
    "qwen3_asr": "llmexport 0.0.5 has no qwen3_asr exporter (it exports qwen3, qwen2_audio, qwen2.5-omni)",
    # measured with tiny configs (tests/models/test_mnn_llm.py): llmexport 0.0.5 fails in
    # utils/model.py:134 with AttributeError 'NoneType' object has no attribute 'weight'
    "qwen2_audio": "llmexport 0.0.5 cannot load it under transformers 5 (its model mapper finds no embedding)",
    "qwen2_5_omni": "llmexport 0.0.5 cannot load it under transformers 5 (its model mapper finds no embedding)",
    "parakeet_ctc": "no MNN export of Parakeet CTC exists in this workbench",
}


class EngineConfigError(WorkbenchError, ValueError):
    """A bad ``engine`` / ``mnn`` block: one line naming the key, the value and the choices."""

    kind = "config"


@dataclass(frozen=True)
class MnnSettings:
    """MNN runtime settings of one model (``mnn:`` block beside ``engine: mnn``)."""

    threads: int = 1
    precision: str = "normal"  # low | normal | high (low: fp16/bf16 where the backend has it)
    memory: str = "normal"  # low | normal | high (low: dynamic int8 compute on quantized weights)
    backend: str = "cpu"  # cpu here; opencl / vulkan / metal on phones

    @classmethod
    def from_dict(cls, d: Mapping[str, Any] | None, where: str = "mnn") -> MnnSettings:
        d = dict(d or {})
        unknown = sorted(set(d) - {f.name for f in fields(cls)})
        if unknown:
            raise EngineConfigError(f"{where}: unknown key(s) {unknown}; known: threads, precision, memory, backend")
        s = cls(**d)
        s.validate(where)
        return s

    def validate(self, where: str = "mnn") -> None:
        if not isinstance(self.threads, int) or isinstance(self.threads, bool) or self.threads < 1:
            raise EngineConfigError(f"{where}.threads={self.threads!r}: must be an integer >= 1")
        for key, value, choices in (("precision", self.precision, PRECISIONS), ("memory", self.memory, MEMORY_MODES),
                                    ("backend", self.backend, tuple(BACKENDS))):
            if str(value).lower() not in choices:
                raise EngineConfigError(f"{where}.{key}={value!r} is unknown; choose one of {', '.join(choices)}")

    @property
    def backend_key(self) -> str:
        return str(self.backend).lower()

    def as_dict(self) -> dict[str, Any]:
        return {"threads": self.threads, "precision": self.precision.lower(), "memory": self.memory.lower(),
                "backend": self.backend_key}


def check_engine(model_cfg: Mapping[str, Any], roles: Sequence[str] = ("target", "drafter", "serial_drafter"),
                 ) -> tuple[str, MnnSettings | None]:
    """Validate a ``conf/model`` mapping's ``engine`` and ``mnn`` blocks before any model loads.

    Returns ``(engine, settings)``; ``settings`` is ``None`` for torch. A family MNN cannot run is
    refused with one line naming what is missing: there is no silent fallback to torch."""
    name = model_cfg.get("name", "?")
    engine = str(model_cfg.get("engine", "torch")).lower()
    if engine not in ENGINES:
        raise EngineConfigError(f"model {name}: engine={model_cfg.get('engine')!r} is unknown; choose torch or mnn")
    settings = MnnSettings.from_dict(model_cfg.get("mnn"), where=f"model {name}: mnn")
    if engine == "torch":
        return engine, None
    for role in roles:
        block = model_cfg.get(role)
        if not block:
            continue
        fam = block.get("family")
        if fam not in MNN_FAMILIES:
            why = WHY_NOT.get(fam, f"no MNN export exists for family {fam!r}")
            raise EngineConfigError(f"model {name}: engine mnn cannot run {role} {block.get('name')} ({fam}): {why}; "
                                    "use engine=torch for this model")
    return engine, settings


def require_host_backend(settings: MnnSettings) -> None:
    if settings.backend_key not in HOST_BACKENDS:
        raise EngineConfigError(f"mnn.backend={settings.backend!r} is a phone backend; the host's MNN package "
                                f"runs {', '.join(HOST_BACKENDS)} (set model.mnn.backend=cpu, or run it on a phone)")


# MNN's BackendConfig enums (include/MNN/MNNForwardType.h), as create_runtime_manager takes them
MEMORY_ENUM = {"normal": 0, "high": 1, "low": 2}
PRECISION_ENUM = {"normal": 0, "high": 1, "low": 2}


def load_module(path: str, inputs: Sequence[str], outputs: Sequence[str], settings: MnnSettings,
                threads: int | None = None) -> Any:
    """``MNN.nn.load_module_from_file`` with dynamic shapes on a runtime of ``threads`` (default
    ``settings.threads``) threads with the settings' memory and precision modes.

    The module gets its own ``RuntimeManager``: pymnn 3.6's ``load_module_from_file`` ignores its
    ``thread_num`` (and memory / precision) arguments without one and runs on the global executor,
    which on this 2-core VM ran a 4-thread OpenMP team: a "1-thread" base decoder then took both
    cores (12.7 ms a step instead of 22) and halved the speed of a producer beside it."""
    import MNN.nn as nn

    require_host_backend(settings)
    n = settings.threads if threads is None else int(threads)
    runtime = nn.create_runtime_manager(({"backend": BACKENDS[settings.backend_key], "numThread": n,
                                          "memory": MEMORY_ENUM[settings.memory.lower()],
                                          "precision": PRECISION_ENUM[settings.precision.lower()]},))
    return nn.load_module_from_file(str(path), list(inputs), list(outputs), shape_mutable=True, rearrange=False,
                                    runtime_manager=runtime)


def const(a: np.ndarray) -> Any:
    """An MNN input ``Var`` holding a copy of ``a`` (float32 or int32)."""
    import MNN.expr as F

    a = np.ascontiguousarray(a)
    dtype = F.int if a.dtype.kind in "iu" else F.float
    a = a.astype(np.int32 if dtype == F.int else np.float32, copy=False)
    return F.const(a, list(a.shape), F.NCHW, dtype)


def read(v: Any) -> np.ndarray:
    """A numpy COPY of an output ``Var``: ``Var.read()`` is a view the next forward overwrites."""
    return np.array(v.read(), copy=True)

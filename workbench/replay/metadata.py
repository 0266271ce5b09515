"""Device metadata (Table 6, D.1.1): the phone's hardware, software and ASR deployment.

A phone profile may carry a ``metadata:`` block beside its costs: what the phone is (model id,
SoC, CPU, GPU, OS-visible RAM, OS build, OpenCL stack) and how the paper deployed on it (backends,
placement, proposal budget). Costs never read it; it says which machine a profile describes, and
:func:`device_table` lays the profiles side by side as Table 6 does. ``source:`` names where the
block's values come from; placement cites its own calibration section (D.2.2-D.2.4).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import polars as pl

Fail = Callable[[str, str], Exception]  # (field path, problem) -> the profile's error naming the file


@dataclass(frozen=True, slots=True)
class DeviceMetadata:
    model_id: str
    soc: str
    process_nm: int
    cpu_family: str
    cpu_cores: int
    peak_cpu_ghz: float
    gpu: str
    ram_gib: float
    dram: str
    android: int
    api: int
    system_build: str
    security_patch: str
    opencl: str
    driver: str
    opencl_compiler: str
    target: str  # target model and its backend
    drafter: str  # drafter model, backend and threads
    frontend: str
    precision: str
    placement: str
    placement_source: str
    publication_batch: int
    budget: int  # fixed proposal budget of the ASR comparison (D.2.6)
    max_width: int  # physical K = budget + the known root
    source: str


# YAML layout: group -> key -> (field, type). Strings stay strings ("3.0" is a version, not a number).
_LAYOUT: dict[str, dict[str, tuple[str, type]]] = {
    "": {"model_id": ("model_id", str), "soc": ("soc", str), "process_nm": ("process_nm", int),
         "gpu": ("gpu", str), "ram_gib": ("ram_gib", float), "dram": ("dram", str), "source": ("source", str)},
    "cpu": {"family": ("cpu_family", str), "cores": ("cpu_cores", int), "peak_ghz": ("peak_cpu_ghz", float)},
    "os": {"android": ("android", int), "api": ("api", int), "build": ("system_build", str),
           "security_patch": ("security_patch", str)},
    "opencl": {"version": ("opencl", str), "driver": ("driver", str), "compiler": ("opencl_compiler", str)},
    "backends": {"target": ("target", str), "drafter": ("drafter", str), "frontend": ("frontend", str),
                 "precision": ("precision", str)},
    "placement": {"text": ("placement", str), "source": ("placement_source", str)},
    "deployment": {"publication_batch": ("publication_batch", int), "budget": ("budget", int),
                   "max_width": ("max_width", int)},
}


def _value(node: dict, key: str, kind: type, path: str, fail: Fail) -> Any:
    if key not in node:
        return fail(path, "missing required key")
    v = node[key]
    ok = (isinstance(v, str) and v.strip() != "") if kind is str else (
        not isinstance(v, bool) and isinstance(v, int if kind is int else (int, float)) and v > 0)
    if not ok:
        want = {str: "a non-empty string (quote versions and dates)", int: "a positive integer",
                float: "a positive number"}[kind]
        return fail(path, f"expected {want}, got {v!r}")
    return kind(v)


def parse_metadata(node: Any, fail: Fail) -> DeviceMetadata | None:
    """The optional ``metadata:`` block; ``fail(path, problem)`` builds the profile's error."""
    if node is None:
        return None
    values: dict[str, Any] = {}
    for group, keys in _LAYOUT.items():
        sub = node if group == "" else (node.get(group) if isinstance(node, dict) else None)
        where = "metadata" if group == "" else f"metadata.{group}"
        if not isinstance(sub, dict):
            raise fail(where, "expected a mapping" if group == "" or group in node else "missing required key")
        extra = sorted(set(sub) - set(keys) - (set(_LAYOUT) if group == "" else set()))
        if extra:
            raise fail(f"{where}.{extra[0]}", "unknown key")
        for key, (name, kind) in keys.items():
            v = _value(sub, key, kind, f"{where}.{key}", fail)
            if isinstance(v, Exception):
                raise v
            values[name] = v
    meta = DeviceMetadata(**values)
    if meta.max_width != meta.budget + 1:  # a budget b permits K <= b + 1 with the known root (Sec. 4.1)
        raise fail("metadata.deployment.max_width", f"must be budget + 1 = {meta.budget + 1}, got {meta.max_width}")
    return meta


# Table 6's rows, in its order: label -> how to print the value.
ROWS: tuple[tuple[str, Callable[[DeviceMetadata], str]], ...] = (
    ("Model ID", lambda m: m.model_id),
    ("Snapdragon SoC", lambda m: m.soc),
    ("Process (nm)", lambda m: str(m.process_nm)),
    ("CPU family", lambda m: m.cpu_family),
    ("CPU cores", lambda m: str(m.cpu_cores)),
    ("Peak CPU (GHz)", lambda m: f"{m.peak_cpu_ghz:g}"),
    ("Adreno GPU", lambda m: m.gpu),
    ("RAM (GiB)", lambda m: f"{m.ram_gib:.2f}"),
    ("DRAM standard", lambda m: m.dram),
    ("Android / API", lambda m: f"{m.android} / {m.api}"),
    ("System build", lambda m: m.system_build),
    ("Security patch", lambda m: m.security_patch),
    ("OpenCL version", lambda m: m.opencl),
    ("Driver build/commit", lambda m: m.driver),
    ("OpenCL compiler", lambda m: m.opencl_compiler),
    ("ASR target", lambda m: m.target),
    ("ASR drafter", lambda m: m.drafter),
    ("Audio frontend", lambda m: m.frontend),
    ("Precision mode", lambda m: m.precision),
    ("Placement", lambda m: m.placement),
    ("Publication batch", lambda m: f"{m.publication_batch} tokens"),
    ("Proposal budget b", lambda m: str(m.budget)),
    ("Maximum width K", lambda m: str(m.max_width)),
    ("Source", lambda m: m.source),
)


class HasMetadata(Protocol):
    """What :func:`device_table` reads of a profile (``replay.profile.DeviceProfile``, which imports this module)."""

    @property
    def name(self) -> str: ...
    @property
    def device(self) -> str: ...
    @property
    def metadata(self) -> DeviceMetadata | None: ...


def device_table(profiles: Sequence[HasMetadata]) -> pl.DataFrame:
    """Table 6: one row per attribute, one column per device (its ``device`` name), from the profiles'
    metadata. A profile without metadata (the host) is an error naming it: it has no Table 6 column."""
    bare = [p.name for p in profiles if p.metadata is None]
    if bare:
        raise ValueError(f"profile(s) {bare} carry no metadata: block (Table 6); only phone profiles do")
    cols = {"attribute": [label for label, _ in ROWS]}
    for p in profiles:
        meta = p.metadata
        assert meta is not None  # every bare profile was refused above
        cols[p.device] = [show(meta) for _, show in ROWS]
    return pl.DataFrame(cols)


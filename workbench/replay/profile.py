"""Device cost profiles: the typed, validated form of ``conf/device/*.yaml``.

A profile prices the operations of a decoding run on one phone/backend (Appendix D.2). Every
number in the YAML is written as ``{v: <number>, source: <paper section>}`` or
``{v: <number>, derived: <rule id>}`` where the rule id is stated in the file's ``rules:`` map,
so each constant carries its provenance.

Widths follow D.2.1: only measured (or explicitly derived) physical widths exist. A missing
width stays missing; asking for it raises :class:`MissingWidthError` unless the profile states
``missing: median_ratio`` for *concurrent* costs, in which case the median concurrent/idle ratio
of the widths that have one is applied to the idle cost (D.2.4, D.2.5, D.5.2). The typed values live in
``profile_model.py``; this module reads and validates the YAML into them.
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping
from pathlib import Path
from types import MappingProxyType
from typing import Any

import yaml

from workbench.models.kernel_plan import PLAN_KERNELS, KernelChoice, KernelPlan

from .metadata import parse_metadata
from .profile_model import (
    AspCost,
    CalibrationCheck,
    ContextFit,
    DeviceProfile,
    MissingWidthError,
    ProfileError,
    Scenario,
    SourceCost,
    SourceKind,
    VerifierCost,
)

DEVICE_DIR = Path(__file__).resolve().parents[2] / "conf" / "device"
SCHEMA = "device-profile/1"

def available_profiles() -> list[str]:
    return sorted(p.stem for p in DEVICE_DIR.glob("*.yaml"))


def load_profile(name_or_path: str | Path) -> DeviceProfile:
    """Load ``conf/device/<name>.yaml`` (or an explicit path) into a validated profile."""
    path = Path(name_or_path)
    if path.suffix not in (".yaml", ".yml"):
        path = DEVICE_DIR / f"{name_or_path}.yaml"
    with open(path, encoding="utf-8") as fh:
        raw = yaml.safe_load(fh)
    return parse_profile(raw, file=str(path))


# ---------------------------------------------------------------------------------------------
# parsing and validation


class _Reader:
    """Walks the raw YAML, recording provenance and raising ProfileError with the field path."""

    def __init__(self, file: str, rules: Mapping[str, str]) -> None:
        self.file = file
        self.rules = rules
        self.provenance: dict[str, str] = {}

    def fail(self, path: str, problem: str) -> ProfileError:
        return ProfileError(self.file, path, problem)

    def mapping(self, node: Any, path: str, required: set[str], optional: set[str] | frozenset[str] = frozenset()
                ) -> dict:
        if not isinstance(node, dict):
            raise self.fail(path, f"expected a mapping, got {type(node).__name__}")
        for key in node:
            if key not in required and key not in optional:
                raise self.fail(f"{path}.{key}" if path else str(key), "unknown key")
        for key in sorted(required):
            if key not in node:
                raise self.fail(f"{path}.{key}" if path else key, "missing required key")
        return node

    def number(self, node: Any, path: str, integer: bool = False, spread: dict[str, float] | None = None) -> float:
        """``{v, source|derived}``; with ``spread`` given, also an optional ``sd`` (and sample count ``n``)."""
        self.mapping(node, path, {"v"}, {"source", "derived"} | ({"sd", "n"} if spread is not None else set()))
        if spread is not None and "sd" in node:
            sd = node["sd"]
            if isinstance(sd, bool) or not isinstance(sd, (int, float)) or not sd >= 0:
                raise self.fail(f"{path}.sd", f"standard deviation must be a non-negative number, got {sd!r}")
            n = node.get("n", 2)
            if isinstance(n, bool) or not isinstance(n, int) or n < 2:
                raise self.fail(f"{path}.n", f"a dispersion needs a sample count of at least 2, got {n!r}")
            spread[path] = float(sd)
        elif spread is not None and "n" in node:
            raise self.fail(f"{path}.n", "a sample count without 'sd' says nothing; give sd too")
        has_source, has_derived = "source" in node, "derived" in node
        if has_source == has_derived:
            raise self.fail(path, "needs exactly one of 'source:' (paper section) or 'derived:' (rule id)")
        if has_derived and node["derived"] not in self.rules:
            raise self.fail(f"{path}.derived", f"rule {node['derived']!r} is not stated under 'rules:'")
        value = node["v"]
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise self.fail(f"{path}.v", f"expected a number, got {value!r}")
        if integer and value != int(value):
            raise self.fail(f"{path}.v", f"expected an integer, got {value!r}")
        if value < 0 or value != value:
            raise self.fail(f"{path}.v", f"cost must be a non-negative number, got {value!r}")
        note = f"source: {node['source']}" if has_source else f"derived: {self.rules[node['derived']]}"
        self.provenance[path] = note
        return int(value) if integer else float(value)

    def widths(self, node: Any, path: str, need_k1: bool, sd: dict[int, float] | None = None) -> dict[int, float]:
        if not isinstance(node, dict) or not node:
            raise self.fail(path, "expected a non-empty mapping of physical width -> cost")
        out: dict[int, float] = {}
        for key, val in node.items():
            if isinstance(key, bool) or not isinstance(key, int) or key < 1:
                raise self.fail(f"{path}.{key}", "width keys must be integers >= 1")
            spread: dict[str, float] | None = None if sd is None else {}
            out[key] = self.number(val, f"{path}.{key}", spread=spread)
            if spread and sd is not None:  # spread is a dict only when sd is
                sd[key] = spread[f"{path}.{key}"]
        if need_k1 and 1 not in out:
            raise self.fail(f"{path}.1", "missing K1: every verifier profile must price the K=1 step")
        return dict(sorted(out.items()))

    def flag(self, node: Mapping, key: str, path: str, default: bool) -> bool:
        value = node.get(key, default)
        if not isinstance(value, bool):
            raise self.fail(f"{path}.{key}", f"expected true/false, got {value!r}")
        return value


_TOP_REQUIRED = {"schema", "name", "device", "rules", "target_step_ms", "loop_residual_ms",
                 "queue_ms", "alignment_ms", "verifier", "sources", "serial_drafter"}
# targets: another pair's cost block on this phone (replay/targets.py)
_TOP_OPTIONAL = {"description", "asp", "machine", "metadata", "anchor_ms", "anchor_window", "anchor_widths_ms",
                 "anchor_as2d_ms", "anchor_producer_ms", "kernel_plan", "targets", "calibration"}


def parse_profile(raw: Any, file: str = "<memory>") -> DeviceProfile:
    if not isinstance(raw, dict):
        raise ProfileError(file, "", "profile must be a YAML mapping")
    rules = raw.get("rules")
    if not isinstance(rules, dict) or not all(isinstance(v, str) for v in rules.values()):
        raise ProfileError(file, "rules", "expected a mapping of rule id -> stated rule text")
    r = _Reader(file, rules)
    r.mapping(raw, "", _TOP_REQUIRED, _TOP_OPTIONAL)
    if raw["schema"] != SCHEMA:
        raise r.fail("schema", f"expected {SCHEMA!r}, got {raw['schema']!r}")
    for key in ("name", "device"):
        if not isinstance(raw[key], str) or not raw[key]:
            raise r.fail(key, "expected a non-empty string")

    verifier = _parse_verifier(r, raw["verifier"])
    sources = _parse_sources(r, raw["sources"])
    if raw["serial_drafter"] not in sources:
        raise r.fail("serial_drafter", f"names no source (have {sorted(sources)})")
    asp = None
    if "asp" in raw:
        node = r.mapping(raw["asp"], "asp", {"paired_branch_ms", "prob_row_ms", "kv_refresh_ms"})
        asp = AspCost(
            paired_branch_ms=r.number(node["paired_branch_ms"], "asp.paired_branch_ms"),
            prob_row_ms=r.number(node["prob_row_ms"], "asp.prob_row_ms"),
            kv_refresh_ms=MappingProxyType(r.widths(node["kv_refresh_ms"], "asp.kv_refresh_ms", False)),
        )
    return DeviceProfile(
        name=raw["name"],
        device=raw["device"],
        file=file,
        target_step_ms=r.number(raw["target_step_ms"], "target_step_ms"),
        loop_residual_ms=r.number(raw["loop_residual_ms"], "loop_residual_ms"),
        queue_ms=r.number(raw["queue_ms"], "queue_ms"),
        alignment_ms=r.number(raw["alignment_ms"], "alignment_ms"),
        verifier=verifier,
        sources=MappingProxyType(sources),
        serial_drafter=raw["serial_drafter"],
        asp=asp,
        provenance=MappingProxyType(r.provenance),
        machine=_parse_machine(r, raw.get("machine")),
        metadata=parse_metadata(raw.get("metadata"), r.fail),
        anchor_ms=r.number(raw["anchor_ms"], "anchor_ms") if "anchor_ms" in raw else None,
        anchor_window=_anchor_window(r, raw),
        anchor_widths_ms=_anchor_widths(r, raw),
        anchor_as2d_ms=_anchor_per_token(r, raw, "anchor_as2d_ms", "an As²d anchor"),
        anchor_producer_ms=_anchor_per_token(r, raw, "anchor_producer_ms", "a producer anchor"),
        kernel_plan=_kernel_plan(r, raw.get("kernel_plan")),
        calibration=_calibration(r, raw.get("calibration")),
    )


def _calibration(r: _Reader, node: Any) -> CalibrationCheck | None:
    """``calibration: {steady, spread: {v, source}, inversions: {v, derived}, stage_factors: {stage: {v,
    source}}}`` (``native/steadiness.py``, ``native/stage_speed.py``; stage_factors optional)."""
    if node is None:
        return None
    r.mapping(node, "calibration", {"steady", "spread", "inversions"}, {"stage_factors"})
    stages = node.get("stage_factors") or {}
    if not isinstance(stages, dict):
        raise r.fail("calibration.stage_factors", f"expected a mapping of stage to factor, got {type(stages).__name__}")
    return CalibrationCheck(r.flag(node, "steady", "calibration", True),
                            r.number(node["spread"], "calibration.spread"),
                            int(r.number(node["inversions"], "calibration.inversions", integer=True)),
                            {str(k): r.number(v, f"calibration.stage_factors.{k}") for k, v in stages.items()})


def _kernel_plan(r: _Reader, node: Any) -> KernelPlan | None:
    """``kernel_plan:`` -- width -> {kernel, rows, ms: {v, source}}: the calibration's per-width choice."""
    if node is None:
        return None
    if not isinstance(node, dict) or not node:
        raise r.fail("kernel_plan", "expected a mapping of width -> {kernel, rows, ms}")
    choices = {}
    for k, entry in node.items():
        path = f"kernel_plan.{k}"
        if isinstance(k, bool) or not isinstance(k, int) or k < 1:
            raise r.fail(path, "width keys must be integers >= 1")
        r.mapping(entry, path, {"kernel", "rows", "ms"})
        if entry["kernel"] not in PLAN_KERNELS:
            raise r.fail(f"{path}.kernel", f"expected one of {PLAN_KERNELS}, got {entry['kernel']!r}")
        rows = entry["rows"]
        if isinstance(rows, bool) or not isinstance(rows, int) or rows < k or rows not in node:
            raise r.fail(f"{path}.rows", f"expected a planned width >= {k}, got {rows!r}")
        choices[k] = KernelChoice(entry["kernel"], rows, r.number(entry["ms"], f"{path}.ms"))
    return KernelPlan(choices)


def _anchor_window(r: _Reader, raw: Mapping[str, Any]) -> str | None:
    if ("anchor_ms" in raw) != ("anchor_window" in raw):
        raise r.fail("anchor_ms", "a drift anchor needs both anchor_ms and anchor_window (recalibrate)")
    name = raw.get("anchor_window")
    if name is not None and (not isinstance(name, str) or not name):
        raise r.fail("anchor_window", f"expected the calibration window's id, got {name!r}")
    return name


def _anchor_widths(r: _Reader, raw: Mapping[str, Any]) -> Mapping[int, float] | None:
    if "anchor_widths_ms" not in raw:
        return None
    if "anchor_ms" not in raw:
        raise r.fail("anchor_widths_ms", "per-width anchors need the drift anchor anchor_ms too (recalibrate)")
    return MappingProxyType(r.widths(raw["anchor_widths_ms"], "anchor_widths_ms", True))


def _parse_machine(r: _Reader, node: Any) -> Mapping[str, Any] | None:
    """``machine:`` -- a flat mapping of fingerprint fields (strings / integers), compared as a whole."""
    if node is None:
        return None
    if not isinstance(node, dict) or not all(isinstance(v, (str, int)) and not isinstance(v, bool)
                                             for v in node.values()):
        raise r.fail("machine", "expected a flat mapping of fingerprint fields (strings or integers)")
    return MappingProxyType(dict(node))


def _parse_context(r: _Reader, node: Any, idle: Mapping[int, float]) -> ContextFit | None:
    if node is None:
        return None
    path = "verifier.context"
    r.mapping(node, path, {"ref_tokens", "slope_ms", "cold_ms", "residual_ms"}, {"concurrent_slope_ms"})
    slopes = _slopes(r, node["slope_ms"], f"{path}.slope_ms", idle)
    conc = node.get("concurrent_slope_ms")
    return ContextFit(ref_tokens=r.number(node["ref_tokens"], f"{path}.ref_tokens"),
                      slope_ms=slopes,
                      cold_ms=r.number(node["cold_ms"], f"{path}.cold_ms"),
                      residual_ms=r.number(node["residual_ms"], f"{path}.residual_ms"),
                      concurrent_slope_ms=None if conc is None else _slopes(
                          r, conc, f"{path}.concurrent_slope_ms", idle))


def _slopes(r: _Reader, raw: Any, path: str, idle: Mapping[int, float]) -> Mapping[int, float]:
    if not isinstance(raw, dict) or not raw:
        raise r.fail(path, "expected a non-empty mapping of physical width -> ms per context token")
    slopes = {}
    for k, val in raw.items():
        if k not in idle:
            raise r.fail(f"{path}.{k}", "a slope at a width with no idle cost")
        if not isinstance(val, dict) or not isinstance(val.get("v"), (int, float)) or isinstance(val.get("v"), bool):
            raise r.fail(f"{path}.{k}", "expected {v: <ms per token>, source: ...}")
        slopes[k] = float(val["v"])  # a slope may be negative (noise): it is a fit, not a cost
        if ("source" in val) == ("derived" in val):
            raise r.fail(f"{path}.{k}", "needs exactly one of 'source:' or 'derived:'")
    return MappingProxyType(dict(sorted(slopes.items())))


def _parse_verifier(r: _Reader, node: Any) -> VerifierCost:
    node = r.mapping(node, "verifier", {"idle_ms", "concurrent"}, {"context"})
    idle_sd: dict[int, float] = {}
    idle = r.widths(node["idle_ms"], "verifier.idle_ms", need_k1=True, sd=idle_sd)
    path = "verifier.concurrent"
    conc = r.mapping(node["concurrent"], path, {"missing"},
                     {"ms", "ratio", "factor", "clip_at_one", "low", "high"})
    given = [k for k in ("ms", "ratio", "factor") if k in conc]
    if len(given) != 1:
        raise r.fail(path, f"give exactly one of ms / ratio / factor, got {given or 'none'}")
    missing = conc["missing"]
    if missing not in ("median_ratio", "error"):
        raise r.fail(f"{path}.missing", f"expected median_ratio or error, got {missing!r}")
    clip = r.flag(conc, "clip_at_one", path, default=False)

    def clipped(x: float) -> float:
        return max(x, 1.0) if clip else x

    factor = None
    direct: dict[int, float] = {}
    ratios: list[float] = []
    if "factor" in conc:
        factor = clipped(r.number(conc["factor"], f"{path}.factor"))
    else:
        table = r.widths(conc[given[0]], f"{path}.{given[0]}", need_k1=False)
        for k, val in table.items():
            if k not in idle:
                raise r.fail(f"{path}.{given[0]}.{k}", "concurrent cost at a width with no idle cost")
            ratio = clipped(val / idle[k] if given[0] == "ms" else val)
            ratios.append(ratio)
            direct[k] = idle[k] * ratio
    fallback = statistics.median(ratios) if (missing == "median_ratio" and ratios) else None
    low = clipped(r.number(conc["low"], f"{path}.low")) if "low" in conc else None
    high = clipped(r.number(conc["high"], f"{path}.high")) if "high" in conc else None
    return VerifierCost(
        idle_ms=MappingProxyType(idle), concurrent_ms=MappingProxyType(direct), factor=factor,
        missing=missing, clip_at_one=clip, low=low, high=high, fallback_ratio=fallback,
        idle_sd_ms=MappingProxyType(dict(sorted(idle_sd.items()))),
        context=_parse_context(r, node.get("context"), idle),
    )


def _parse_sources(r: _Reader, node: Any) -> dict[str, SourceCost]:
    if not isinstance(node, dict) or not node:
        raise r.fail("sources", "expected a non-empty mapping of source name -> costs")
    out: dict[str, SourceCost] = {}
    for name, spec in node.items():
        path = f"sources.{name}"
        kind = spec.get("kind") if isinstance(spec, dict) else None
        growth = (0.0, 0.0)
        if kind == "autoregressive":
            r.mapping(spec, path, {"kind", "forward_ms", "publication_ms", "startup_ms",
                                   "concurrent_factor", "batch_tokens", "confidence"}, {"growth", "prefilled"})
            growth = _parse_growth(r, spec.get("growth"), f"{path}.growth")
            op = r.number(spec["forward_ms"], f"{path}.forward_ms")
            batch = r.number(spec["batch_tokens"], f"{path}.batch_tokens", integer=True)
            if batch < 1:
                raise r.fail(f"{path}.batch_tokens.v", "publication batch must hold at least one token")
        elif kind == "chunk":
            r.mapping(spec, path, {"kind", "chunk_service_ms", "publication_ms", "startup_ms",
                                   "concurrent_factor", "confidence"})
            op, batch = r.number(spec["chunk_service_ms"], f"{path}.chunk_service_ms"), None
        else:
            raise r.fail(f"{path}.kind", f"expected autoregressive or chunk, got {kind!r}")
        out[name] = SourceCost(
            name=name, kind=kind, op_ms=op,
            publication_ms=r.number(spec["publication_ms"], f"{path}.publication_ms"),
            startup_ms=r.number(spec["startup_ms"], f"{path}.startup_ms"),
            concurrent_factor=r.number(spec["concurrent_factor"], f"{path}.concurrent_factor"),
            batch_tokens=int(batch) if batch is not None else None,
            has_confidence=r.flag(spec, "confidence", path, default=False),
            growth=growth[0], growth_ref=growth[1],
            prefilled=_parse_prefilled(r, spec.get("prefilled"), f"{path}.prefilled"),
        )
    return out


def _parse_prefilled(r: _Reader, node: Any, path: str) -> bool:
    """``prefilled: {v: true|false, source|derived}``: whether the producer's prompt prefill (operation 0)
    ran before the decode clock (A.3); absent: false, operation 0 is charged on the clock."""
    if node is None:
        return False
    if not isinstance(node, dict) or not isinstance(node.get("v"), bool):
        raise r.fail(path, "expected {v: true|false, source: ...} (did the prompt prefill run before the clock?)")
    r.number({**node, "v": 0}, path)  # provenance checked like every number
    return bool(node["v"])


def _parse_growth(r: _Reader, node: Any, path: str) -> tuple[float, float]:
    """``growth: {per_token: {v, source|derived}, ref_tokens: {v, ...}}``: the producer's relative cost
    growth per produced token around ``ref_tokens`` (a fit: ``per_token`` may be negative)."""
    if node is None:
        return 0.0, 0.0
    r.mapping(node, path, {"per_token", "ref_tokens"})
    per = node["per_token"]
    if not isinstance(per, dict) or isinstance(per.get("v"), bool) or not isinstance(per.get("v"), (int, float)):
        raise r.fail(f"{path}.per_token", "expected {v: <relative growth per token>, source: ...}")
    r.number({**per, "v": abs(per["v"])}, f"{path}.per_token")  # provenance checked like every number
    return float(per["v"]), r.number(node["ref_tokens"], f"{path}.ref_tokens")


def _anchor_per_token(r: _Reader, raw: Mapping[str, Any], key: str, what: str) -> float | None:
    if key not in raw:
        return None
    if "anchor_ms" not in raw:
        raise r.fail(key, f"{what} needs the drift anchor anchor_ms too (recalibrate)")
    v = r.number(raw[key], key)
    if not v > 0:
        raise r.fail(key, f"expected a positive time per token in ms, got {v!r}")
    return v


__all__ = ["DEVICE_DIR", "SCHEMA", "AspCost", "CalibrationCheck", "ContextFit", "DeviceProfile", "MissingWidthError",
           "ProfileError", "Scenario", "SourceCost", "SourceKind", "VerifierCost", "available_profiles", "load_profile",
           "parse_profile"]

"""The phone_runner protocol, version 1 (``phone_runner/PROTOCOL.md``): request and JSONL lines.

The host validates every line a runner sends with :func:`validate_line`; a runner validates its
request with :func:`parse_request`. Both raise :class:`ProtocolError`, whose message names the
line (or request field) and what is wrong. Nothing here imports torch; ``payloads`` converts a
request's pricing and windows from and to the replay types.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from workbench.decoding.schemes.catalog import DECOUPLED, HOST_ONLY, ON_PHONE

from .errors import ProtocolError
from .ondemand_checks import check_ondemand, check_request_line

VERSION = 1
DEVICE_ROOT = "/data/local/tmp/as2d"
SCHEME_NAMES = ON_PHONE  # the catalog's ``on_phone`` schemes
# Catalog schemes protocol v1 does not carry: the adaptive variants (beyond the paper; several resident
# sources, a drafter beside the buffer) exist in replay and on the host only, not in the runners yet.
# as2d_online's rules moved on in Python (running-throughput width, bonus check of the first
# left-out candidate); the C++ runner's port is the older rule, so it is host-only until re-ported.
HOST_ONLY_SCHEMES = HOST_ONLY
ENGINES = ("reference", "torch", "mnn")
MODES = ("run", "calibrate", "ondemand")  # ondemand: phone_runner/ondemand.py
ERROR_CODES = ("bad_request", "missing_file", "unsupported_backend", "width_not_priced", "exactness",
               "internal")
K1_REASONS = ("target_only", "not_ready", "no_match", "exhausted", "output_cap", "confidence", "drafter",
              "correction", "cost")
OUTCOMES = ("correction", "bonus", "eos", "cap")
MEASURE_OPS = ("verify", "target_step", "draft_forward", "asp_paired", "asp_prob_row", "asp_refresh",
               "chunk_service", "producer_forward")


# ------------------------------------------------------------------------------------------
# output lines: type -> {field: kind}. Kinds: int, num, str, bool, ints, nums, obj, list;
# a trailing '?' allows null.

_WIN = {"window_id": "str", "repetition": "int"}
LINE_FIELDS: dict[str, dict[str, str]] = {
    "header": {"run_id": "str", "runner": "obj", "mode": "str", "engine": "obj", "scheme": "obj",
               "device": "obj", "started_unix": "num"},
    "round": {**_WIN, "config": "str", "round": "int", "scheme": "str", "width": "int", "root": "int",
              "chain": "ints", "provenance": "ints", "k1_reason": "str?", "ready": "int", "accepted": "int",
              "committed": "ints", "outcome": "str", "next_root": "int?", "cursor_before": "int?",
              "cursor_after": "int?", "work_forwards": "int", "work_catchup": "int",
              "work_paired_forwards": "int", "work_prob_rows": "int", "work_refresh_width": "int",
              "t_decide": "num", "t_start": "num", "t_end": "num"},
    "stage": {**_WIN, "resource": "str", "stage": "str", "start": "num", "end": "num", "round": "int"},
    "publication": {**_WIN, "source_id": "str", "producer_id": "str", "offset": "int", "publish_time": "num",
                    "tokens": "ints", "confidences": "nums?"},
    "window": {**_WIN, "config": "str", "scheme": "str", "tokens": "int", "time": "num", "t_eos": "num",
               "cleanup": "num", "rounds": "int", "output": "ints"},
    "measure": {"op": "str", "width": "int?", "offset": "int?", "concurrent": "bool", "source": "str?",
                "repetition": "int", "ms": "num"},
    # mode ondemand: the pieces of L_u, request to EOS (phone_runner/ondemand.py checks that they add up)
    "request": {**_WIN, "request_s": "num", "prepared_s": "num", "residual_audio_s": "num",
                "instruction_prefill_s": "num", "handoff_s": "num", "decode_s": "num", "drain_s": "num",
                "latency_s": "num", "ttft_s": "num", "cleanup_s": "num"},
    "summary": {"windows": "int", "rounds": "int", "tokens": "int", "time": "num", "wall_s": "num"},
    "error": {"code": "str", "message": "str", "window_id": "str?"},
}
_ENUMS = {("round", "k1_reason"): K1_REASONS, ("round", "outcome"): OUTCOMES,
          ("round", "scheme"): SCHEME_NAMES, ("window", "scheme"): SCHEME_NAMES,
          ("stage", "resource"): ("producer", "verifier", "other"), ("header", "mode"): MODES,
          ("measure", "op"): MEASURE_OPS, ("error", "code"): ERROR_CODES}


def _kind_ok(value: Any, kind: str) -> bool:
    if kind.endswith("?"):
        if value is None:
            return True
        kind = kind[:-1]
    if kind == "int":
        return isinstance(value, int) and not isinstance(value, bool)
    if kind == "num":
        return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)
    if kind == "str":
        return isinstance(value, str)
    if kind == "bool":
        return isinstance(value, bool)
    if kind == "obj":
        return isinstance(value, dict)
    if kind == "ints":
        return isinstance(value, list) and all(_kind_ok(v, "int") for v in value)
    if kind == "nums":
        return isinstance(value, list) and all(_kind_ok(v, "num") for v in value)
    raise AssertionError(kind)


def validate_obj(obj: Any, where: str) -> dict[str, Any]:
    """Check one decoded output object; returns it unchanged."""
    if not isinstance(obj, dict):
        raise ProtocolError(where, f"expected a JSON object, got {type(obj).__name__}")
    if obj.get("v") != VERSION:
        raise ProtocolError(where, f"protocol version {obj.get('v')!r}, this host speaks v{VERSION}")
    kind: Any = obj.get("type")
    spec = LINE_FIELDS.get(kind)
    if spec is None:
        raise ProtocolError(where, f"unknown line type {kind!r} (known: {', '.join(LINE_FIELDS)})")
    for name, k in spec.items():
        if name not in obj:
            raise ProtocolError(where, f"{kind} line lacks field {name!r}")
        if not _kind_ok(obj[name], k):
            raise ProtocolError(where, f"{kind} field {name!r} = {obj[name]!r} is not {k}")
        allowed = _ENUMS.get((kind, name))
        if allowed is not None and obj[name] is not None and obj[name] not in allowed:
            raise ProtocolError(where, f"{kind} field {name!r} = {obj[name]!r}; expected one of {allowed}")
    if kind == "round":
        r = obj
        if r["width"] != 1 + len(r["chain"]) or len(r["provenance"]) != len(r["chain"]):
            raise ProtocolError(where, f"round width {r['width']} does not match chain/provenance lengths")
        if not 0 <= r["accepted"] <= len(r["chain"]):
            raise ProtocolError(where, f"round accepted {r['accepted']} outside 0..{len(r['chain'])}")
        if not r["t_decide"] <= r["t_start"] <= r["t_end"]:
            raise ProtocolError(where, "round times out of order (t_decide <= t_start <= t_end)")
    if kind == "request":
        check_request_line(obj, where)
    if kind == "stage" and obj["end"] < obj["start"]:
        raise ProtocolError(where, f"stage ends ({obj['end']}) before it starts ({obj['start']})")
    return obj


def _no_constant(name: str) -> None:
    raise ValueError(f"{name} is not JSON")  # NaN / Infinity: Python accepts them, JSON does not


def validate_line(text: str | bytes, lineno: int, source: str = "runner output") -> dict[str, Any]:
    """Parse and check one JSONL line; the error names ``source`` and ``lineno``."""
    where = f"{source} line {lineno}"
    try:
        obj = json.loads(text, parse_constant=_no_constant)
    except (ValueError, UnicodeDecodeError) as err:
        msg = err.msg if isinstance(err, json.JSONDecodeError) else str(err)
        raise ProtocolError(where, f"not valid JSON ({msg}): {str(text)[:80]!r}") from None
    return validate_obj(obj, where)


def line(kind: str, **fields: Any) -> str:
    """One output line (validated, compact JSON, no newline): what a runner writes."""
    obj = {"v": VERSION, "type": kind, **fields}
    validate_obj(obj, f"{kind} line being written")
    return json.dumps(obj, separators=(",", ":"))


# ------------------------------------------------------------------------------------------
# request


@dataclass(frozen=True)
class ModelSpec:
    dir: str | None = None
    format: str = "reference"
    name: str = ""
    backend: str = "cpu"
    threads: int = 1
    cpus: tuple[int, ...] = ()
    precision: str = "normal"


@dataclass(frozen=True)
class Request:
    run_id: str
    mode: str
    scheme: dict[str, Any]
    engine: dict[str, Any]
    models: dict[str, ModelSpec]
    producer: dict[str, Any]
    windows: tuple[dict[str, Any], ...]
    repetitions: int = 1
    warmups: int = 0
    max_output: int = 224
    pricing: dict[str, Any] | None = None
    calibrate: dict[str, Any] | None = None
    ondemand: dict[str, Any] | None = None  # mode ondemand only (phone_runner/ondemand.py)
    output: str = f"{DEVICE_ROOT}/out.jsonl"
    v: int = VERSION
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def settings(self) -> dict[str, Any]:
        return dict(self.scheme.get("settings") or {})

    @property
    def source(self) -> str | None:
        """The decoupled schemes' candidate source: ``scheme.source``, else ``producer.source``."""
        return scheme_source(self.scheme, self.producer)

    @property
    def config(self) -> str:
        return str(self.scheme.get("config") or self.scheme["name"])

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"v": self.v, "run_id": self.run_id, "mode": self.mode, "scheme": self.scheme,
                               "engine": self.engine, "producer": self.producer, "windows": list(self.windows),
                               "models": {k: {**m.__dict__, "cpus": list(m.cpus)} for k, m in self.models.items()},
                               "repetitions": self.repetitions, "warmups": self.warmups,
                               "max_output": self.max_output, "pricing": self.pricing,
                               "calibrate": self.calibrate, "output": self.output}
        if self.ondemand is not None:
            out["ondemand"] = self.ondemand
        return out


_MODEL_FIELDS = set(ModelSpec.__dataclass_fields__)


def _need(cond: bool, where: str, problem: str) -> None:
    if not cond:
        raise ProtocolError(f"request field {where!r}", problem)


def _is_int(v: Any) -> bool:
    """A JSON integer: ``true``/``false`` are not integers (Python's bool is an int; JSON's is not)."""
    return isinstance(v, int) and not isinstance(v, bool)


def _int(obj: dict[str, Any], key: str, where: str, low: int, default: Any = None) -> Any:
    val = obj.get(key, default)
    _need(_is_int(val) and val >= low, where, f"{val!r}; expected an integer >= {low}")
    return val


def _obj(val: Any, where: str) -> dict[str, Any]:
    _need(isinstance(val, dict), where, f"{type(val).__name__} {val!r:.40}; expected an object")
    return val


def _check_models(obj: dict[str, Any], engine: dict[str, Any]) -> dict[str, ModelSpec]:
    models: dict[str, ModelSpec] = {}
    raw = obj.get("models")
    for role, spec in _obj({} if raw is None else raw, "models").items():
        _need(isinstance(spec, dict) and set(spec) <= _MODEL_FIELDS, f"models.{role}",
              f"expected an object with fields among {sorted(_MODEL_FIELDS)}")
        _int(spec, "threads", f"models.{role}.threads", 1, 1)
        cpus = spec.get("cpus") or []
        _need(isinstance(cpus, list) and all(_is_int(c) and c >= 0 for c in cpus), f"models.{role}.cpus",
              f"{cpus!r}; expected a list of core ids")
        for key in ("dir", "format", "name", "backend", "precision"):
            _need(spec.get(key) is None or isinstance(spec[key], str), f"models.{role}.{key}", "expected a string")
        models[role] = ModelSpec(**{**spec, "cpus": tuple(cpus)})
    if engine["kind"] != "reference":
        _need("target" in models, "models.target", f"engine {engine['kind']!r} needs a target model")
    return models


def _check_reference(ref: Any, where: str) -> None:
    """A reference-engine window's trajectory: int64 token ids inside the vocabulary, EOS among them."""
    _need(isinstance(ref, dict) and _kind_ok(ref.get("tokens"), "ints") and bool(ref["tokens"]), f"{where}.tokens",
          "the reference engine needs the greedy reference tokens")
    vocab = ref.get("vocab_size")
    _need(_is_int(vocab) and 1 <= vocab <= 2**63 - 1, f"{where}.vocab_size", f"{vocab!r}; expected an integer >= 1")

    def ids(toks: Any, at: str) -> None:
        _need(_kind_ok(toks, "ints") and all(0 <= t < vocab for t in toks), at,
              f"expected token ids in 0..{vocab - 1} (int64)")

    ids(ref["tokens"], f"{where}.tokens")
    eos = ref.get("eos_id")
    _need(eos is None or (_is_int(eos) and 0 <= eos < vocab), f"{where}.eos_id", f"{eos!r}; expected an id or null")
    for name, src in _obj(ref.get("sources") or {}, f"{where}.sources").items():
        at = f"{where}.sources.{name}"
        _obj(src, at)
        ids(src.get("tokens"), f"{at}.tokens")
        _need(_kind_ok(src.get("op_tokens"), "ints") and all(t >= 0 for t in src["op_tokens"]), f"{at}.op_tokens",
              "expected counts >= 0")
    drafts = ref.get("drafts")
    if drafts is not None:
        rows: Any = _obj(drafts, f"{where}.drafts").get("tokens")
        _need(isinstance(rows, list), f"{where}.drafts.tokens", "expected a list of rows")
        for r, row in enumerate(rows):
            ids(row, f"{where}.drafts.tokens[{r}]")


def _check_windows(obj: dict[str, Any], engine: dict[str, Any]) -> list[Any]:
    wins = obj["windows"]
    _need(isinstance(wins, list) and (bool(wins) or obj["mode"] == "calibrate"), "windows",
          "expected a non-empty list")
    seen: set[str] = set()
    for i, w in enumerate(wins):
        _need(isinstance(w, dict) and isinstance(w.get("window_id"), str), f"windows[{i}].window_id", "missing")
        _need(w["window_id"] not in seen, f"windows[{i}].window_id", f"duplicate {w['window_id']!r}")
        seen.add(w["window_id"])
        if w.get("max_output") is not None:
            _int(w, "max_output", f"windows[{i}].max_output", 1)
        prompt = w.get("prompt")
        _need(prompt is None or (_kind_ok(prompt, "ints") and all(t >= 0 for t in prompt)), f"windows[{i}].prompt",
              "expected token ids (>= 0) or null")
        eos = w.get("eos_id")
        _need(eos is None or (_is_int(eos) and eos >= 0), f"windows[{i}].eos_id", f"{eos!r}; expected an id or null")
        for key in ("audio", "features"):
            _need(w.get(key) is None or isinstance(w[key], str), f"windows[{i}].{key}", "expected a path or null")
        if engine["kind"] == "reference":
            _check_reference(w.get("reference"), f"windows[{i}].reference")
        else:
            _need(bool(w.get("audio") or w.get("features")), f"windows[{i}]", "needs audio or features")
    return wins


def _check_head(obj: Any) -> tuple[dict[str, Any], dict[str, Any]]:
    _need(isinstance(obj, dict), "", "the request must be a JSON object")
    _need(obj.get("v") == VERSION and _is_int(obj.get("v")), "v",
          f"protocol version {obj.get('v')!r}; this runner speaks v{VERSION}")
    for key in ("run_id", "mode", "scheme", "engine", "windows", "output"):
        _need(key in obj, key, "missing")
    _need(isinstance(obj["run_id"], str) and isinstance(obj["output"], str), "run_id", "run_id and output are strings")
    _need(obj["mode"] in MODES, "mode", f"{obj['mode']!r}; expected one of {MODES}")
    scheme = _obj(obj["scheme"], "scheme")
    if scheme.get("name") in HOST_ONLY_SCHEMES:
        _need(False, "scheme.name", f"{scheme['name']!r} runs in replay and on the host only; protocol v1 carries "
              f"{SCHEME_NAMES}")
    _need(scheme.get("name") in SCHEME_NAMES, "scheme.name", f"{scheme.get('name')!r}; expected one of {SCHEME_NAMES}")
    _obj(scheme.get("settings", {}), "scheme.settings")
    _need(scheme.get("source") is None or isinstance(scheme["source"], str), "scheme.source", "expected a name or null")
    engine = _obj(obj["engine"], "engine")
    _need(engine.get("kind") in ENGINES, "engine.kind", f"{engine.get('kind')!r}; expected one of {ENGINES}")
    _need(engine.get("clock", "real") in ("virtual", "real"), "engine.clock", "expected virtual or real")
    _need(engine.get("drain", "boundary") in ("boundary", "full"), "engine.drain", "expected boundary or full")
    _need(engine.get("kind") == "reference" or engine.get("clock", "real") == "real", "engine.clock",
          "only the reference engine has a virtual clock")
    _need(obj["mode"] != "ondemand" or engine["kind"] != "reference", "engine.kind",
          "mode ondemand times real prefill and decoding: use the torch or mnn engine")
    return scheme, engine


def scheme_source(scheme: Mapping[str, Any], producer: Mapping[str, Any]) -> str | None:
    """The candidate source a decoupled scheme reads: ``scheme.source``, else ``producer.source``."""
    return scheme.get("source") or producer.get("source") or None


def _check_reference_source(obj: Mapping[str, Any], producer: Mapping[str, Any], wins: list[dict[str, Any]]) -> None:
    """A reference-engine request of a decoupled scheme names one source that its pricing prices and
    every window carries (PROTOCOL.md, ``scheme.source``); several sources run in host replay only."""
    name = obj["scheme"]["name"]
    if name not in DECOUPLED:
        return
    src = scheme_source(obj["scheme"], producer)
    _need(src is not None, "scheme.source", f"scheme {name!r} reads a candidate source; name it (or producer.source)")
    _need("+" not in str(src), "scheme.source", f"{src!r}: the reference engine replays one source per window; "
          "several sources ('a+b') run in host replay only")
    _need(src in obj["pricing"]["sources"], "scheme.source", f"{src!r} is not priced (pricing.sources)")
    for i, w in enumerate(wins):
        _need(src in (w["reference"].get("sources") or {}), f"windows[{i}].reference.sources",
              f"window {w['window_id']!r} has no source {src!r}")


def parse_request(obj: Any) -> Request:
    """Validate a decoded request object and return it typed (PROTOCOL.md is the rule)."""
    _, engine = _check_head(obj)
    models = _check_models(obj, engine)
    for key in ("repetitions", "max_output"):
        _int(obj, key, key, 1, 1)
    _int(obj, "warmups", "warmups", 0, 0)
    wins = _check_windows(obj, engine)
    producer = _obj({} if obj.get("producer") is None else obj["producer"], "producer")
    _int(producer, "batch_tokens", "producer.batch_tokens", 1, 8)
    if engine["kind"] == "reference":
        check_pricing(_obj(obj.get("pricing"), "pricing"))
        _check_reference_source(obj, producer, wins)
    if obj["mode"] == "calibrate":
        _obj(obj.get("calibrate"), "calibrate")
    if obj["mode"] == "ondemand":
        check_ondemand(obj)
    known = set(Request.__dataclass_fields__) - {"extra"}
    return Request(**{k: v for k, v in obj.items() if k in known and k not in ("models", "windows", "producer")},
                   models=models, windows=tuple(wins), producer=producer,
                   extra={k: v for k, v in obj.items() if k not in known})


# ------------------------------------------------------------------------------------------
# pricing: a profile resolved to seconds, so a runner needs no profile rules


def _cost(v: Any) -> bool:
    """A price: a finite number of seconds >= 0 (never negative, never NaN, never a bool)."""
    return _kind_ok(v, "num") and v >= 0


def check_pricing(p: Mapping[str, Any]) -> None:
    for key in ("name", "step_s", "loop_s", "queue_s", "align_s", "verify_idle_s", "verify_concurrent_s",
                "serial_drafter", "sources"):
        _need(key in p, f"pricing.{key}", "missing")
    for key in ("step_s", "loop_s", "queue_s", "align_s"):
        _need(_cost(p[key]), f"pricing.{key}", f"{p[key]!r}; expected seconds >= 0")
    for key in ("verify_idle_s", "verify_concurrent_s"):
        table = _obj(p[key], f"pricing.{key}")
        _need(all(k.isdigit() and int(k) >= 1 and _cost(v) for k, v in table.items()), f"pricing.{key}",
              "expected {\"<K>\": seconds >= 0} with widths K >= 1")
    _need("1" in p["verify_idle_s"], "pricing.verify_idle_s", "needs at least width '1'")
    _need(bool(p["verify_concurrent_s"]), "pricing.verify_concurrent_s",
          "needs at least one width (missing widths are never zero)")
    for name, s in _obj(p["sources"], "pricing.sources").items():
        _obj(s, f"pricing.sources.{name}")
        for key in ("kind", "op_s", "publication_s", "startup_s", "concurrent_factor", "batch_tokens"):
            _need(key in s, f"pricing.sources.{name}.{key}", "missing")
        _need(s["kind"] in ("autoregressive", "chunk"), f"pricing.sources.{name}.kind", "autoregressive or chunk")
        for key in ("op_s", "publication_s", "startup_s", "concurrent_factor"):
            _need(_cost(s[key]), f"pricing.sources.{name}.{key}", f"{s[key]!r}; expected a number >= 0")
        _need(s["batch_tokens"] is None or (_is_int(s["batch_tokens"]) and s["batch_tokens"] >= 1),
              f"pricing.sources.{name}.batch_tokens", "expected an integer >= 1 or null")
    asp = p.get("asp")
    if asp is not None:
        _obj(asp, "pricing.asp")
        for key in ("paired_branch_s", "prob_row_s"):
            _need(_cost(asp.get(key)), f"pricing.asp.{key}", "expected seconds >= 0")
        _need(all(_cost(v) for v in _obj(asp.get("kv_refresh_s"), "pricing.asp.kv_refresh_s").values()),
              "pricing.asp.kv_refresh_s", "expected seconds >= 0")

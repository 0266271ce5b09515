"""Request and line checks of mode ``ondemand`` (``PROTOCOL.md``), below ``protocol.py``.

``protocol.parse_request`` and ``protocol.validate_obj`` call these; they need only the error type,
so the protocol module and the on-demand runner (``ondemand.py``) both import this one.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from .errors import ProtocolError

SAMPLE_RATE = 16_000
PREPARE = ("before_request", "at_request")
PIECES = ("residual_audio_s", "instruction_prefill_s", "handoff_s", "decode_s", "drain_s")
SUM_TOLERANCE_S = 1e-6  # the pieces are differences of one clock; a runner may print ~15 digits


def _need(cond: bool, where: str, problem: str) -> None:
    if not cond:
        raise ProtocolError(f"request field {where!r}", problem)


def _num(x: Any) -> bool:
    return isinstance(x, int | float) and not isinstance(x, bool) and math.isfinite(x)


def check_ondemand(obj: Mapping[str, Any]) -> None:
    """Validate a mode-``ondemand`` request's ``ondemand`` object against its windows."""
    od: Any = obj.get("ondemand")  # JSON until each field below is checked
    _need(isinstance(od, dict), "ondemand", "mode ondemand needs an ondemand object (see PROTOCOL.md)")
    _need(isinstance(od.get("trace_id"), str) and bool(od["trace_id"]), "ondemand.trace_id", "expected a string")
    for key in ("trace_s", "window_s"):
        _need(_num(od.get(key)) and od[key] > 0, f"ondemand.{key}", f"{od.get(key)!r}; expected seconds > 0")
    _need(od.get("prepare") in PREPARE, "ondemand.prepare", f"{od.get('prepare')!r}; expected one of {PREPARE}")
    _need(od.get("instruction") is None or isinstance(od["instruction"], str), "ondemand.instruction",
          "expected the instruction text or null (the model's own prompt)")
    reqs: Any = od.get("requests")
    _need(isinstance(reqs, list) and len(reqs) == len(obj["windows"]), "ondemand.requests",
          f"expected one request per window ({len(obj['windows'])})")
    last = -math.inf
    for i, (r, w) in enumerate(zip(reqs, obj["windows"], strict=True)):
        where = f"ondemand.requests[{i}]"
        _need(isinstance(r, dict) and r.get("window_id") == w["window_id"], f"{where}.window_id",
              f"{r.get('window_id') if isinstance(r, dict) else r!r}; expected {w['window_id']!r} (windows[{i}])")
        s_u, start = r.get("request_s"), r.get("audio_start_s")
        _need(_num(s_u) and last < s_u <= od["trace_s"], f"{where}.request_s",
              f"{s_u!r}; expected increasing request times within the {od['trace_s']} s trace")
        _need(_num(start) and 0 <= start < s_u, f"{where}.audio_start_s", f"{start!r}; expected 0 <= start < {s_u}")
        _need(s_u - start <= od["window_s"] + 1e-6, f"{where}.audio_start_s",
              f"the window is {s_u - start:.3f} s, longer than ondemand.window_s = {od['window_s']}")
        last = s_u


def check_request_line(obj: Mapping[str, Any], where: str) -> None:
    """A ``request`` line: non-negative pieces that add up to L_u, and TTFT = residual + instruction."""
    if any(obj[p] < 0 for p in (*PIECES, "latency_s", "prepared_s", "cleanup_s")):
        raise ProtocolError(where, "request line has a negative time")
    total = sum(obj[p] for p in PIECES)
    if abs(total - obj["latency_s"]) > SUM_TOLERANCE_S:
        raise ProtocolError(where, f"request pieces add up to {total:.9f} s, not latency_s = {obj['latency_s']:.9f}")
    if abs(obj["residual_audio_s"] + obj["instruction_prefill_s"] - obj["ttft_s"]) > SUM_TOLERANCE_S:
        raise ProtocolError(where, "request ttft_s is not residual_audio_s + instruction_prefill_s")

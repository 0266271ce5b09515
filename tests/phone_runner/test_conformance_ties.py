"""Exact ties, broken by PROTOCOL.md's rules ("Ties") in both runners alike.

Every price here is a power of two in seconds, so sums land exactly on one another: a batch is
published at the very time a round decides, a call starts at the very time the producer ends, a
confidence equals the threshold. Both runners must agree line for line (``two_runners``) and follow
the documented side of each tie.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from workbench.replay.engine import ReplayConfig
from workbench.replay.profile import DeviceProfile, parse_profile
from workbench.replay.trajectory import SourceTrack, Window

from . import two_runners
from .test_conformance import Case, request

STEP_MS = 1000.0 / 64  # 1/64 s: a plain step, and each width's idle verify cost per token
FORWARD_MS = 1000.0 / 128  # 1/128 s: one producer forward


def _num(v: float) -> dict[str, Any]:
    return {"v": v, "source": "tie conformance case"}


def tie_profile(producer_factor: float) -> DeviceProfile:
    """Dyadic prices: verify K costs K/64 s idle and twice that beside the producer; the producer
    makes a token per 1/128 s and publishes every 2 (slowed by ``producer_factor`` beside a call)."""
    raw = {"schema": "device-profile/1", "name": f"ties-{producer_factor}", "device": "test", "rules": {},
           "target_step_ms": _num(STEP_MS), "loop_residual_ms": _num(0.0), "queue_ms": _num(0.0),
           "alignment_ms": _num(0.0),
           "verifier": {"idle_ms": {k: _num(STEP_MS * k) for k in range(1, 9)},
                        "concurrent": {"factor": _num(2.0), "missing": "error"}},
           "sources": {"qwen": {"kind": "autoregressive", "forward_ms": _num(FORWARD_MS), "publication_ms": _num(0.0),
                                "startup_ms": _num(0.0), "concurrent_factor": _num(producer_factor),
                                "batch_tokens": _num(2), "confidence": True}},
           "serial_drafter": "qwen"}
    return parse_profile(raw, "ties.yaml")


def _window(wid: str, ref: list[int], stream: list[int], conf: float = 0.9) -> Window:
    return Window(wid, "ties", tuple(ref), 0, 100, len(ref), None,
                  {"qwen": SourceTrack("qwen", tuple(stream), (conf,) * len(stream), (1,) * len(stream))},
                  synthetic=True).validate("<ties>")


def _cases() -> list[Case]:
    static, dynamic = tie_profile(1.0), tie_profile(2.0)
    # Round 0 (K = 1, beside the producer) ends at 2/64 s. Static producer: that is 4 forwards, so
    # its second batch comes out exactly when round 1 decides, and it ends exactly when round 1
    # starts. Dynamic (half speed beside a call): its first batch comes out exactly then.
    ready = _window("tie-ready", [1, 2, 3, 4, 5, 6, 0], [2, 3, 4, 5])
    as2d = ReplayConfig("as2d", source="qwen", budget=3)
    gate = ReplayConfig("as2d_wo_bc", source="qwen", threshold=0.5, cap=3)
    return [Case("tie-static", ready, as2d, static, "boundary"),
            Case("tie-dynamic", ready, as2d, dynamic, "boundary"),
            Case("tie-confidence", _window("tie-confidence", [1, 2, 3, 4, 5, 6, 0], [2, 3, 4, 5, 6, 0], 0.5), gate,
                 static, "boundary"),
            Case("tie-anchor", _window("tie-anchor", [1, 1, 1, 2, 1, 1, 0], [1, 1, 2, 1, 1, 0]), as2d, static,
                 "full")]


def _published_at(lines: list[dict[str, Any]]) -> dict[int, float]:
    """Buffer position -> publish time, from the publication lines."""
    return {b["offset"] + i: b["publish_time"] for b in lines if b["type"] == "publication"
            for i in range(len(b["tokens"]))}


def test_exact_ties_are_broken_alike_and_as_documented(tmp_path: Path) -> None:
    cases = _cases()
    reqs = [request(c) for c in cases]
    problems, cpp = two_runners.compare(tmp_path, reqs)
    assert not problems, "\n".join(problems)
    lines = {r["run_id"]: ls for r, ls in zip(reqs, cpp, strict=True)}
    for run_id in ("tie-static", "tie-dynamic"):
        rounds = [x for x in lines[run_id] if x["type"] == "round"]
        when = _published_at(lines[run_id])
        # readiness: a candidate published exactly at the decision time is in that round's chain
        first = next(r for r in rounds if r["t_decide"] > 0)
        assert first["chain"] and when[max(first["provenance"])] == first["t_decide"], (run_id, first)
    # a call that starts exactly when the static producer ends pays the idle price throughout
    req = reqs[0]
    second = [x for x in lines["tie-static"] if x["type"] == "round"][1]
    p_end = len(req["windows"][0]["reference"]["sources"]["qwen"]["tokens"]) * FORWARD_MS / 1000.0
    assert second["t_start"] == p_end
    idle = req["pricing"]["verify_idle_s"][str(second["width"])]
    assert second["t_end"] - second["t_start"] == idle != req["pricing"]["verify_concurrent_s"][str(second["width"])]
    # a confidence equal to the threshold is confident: the chain does not stop after it
    gated = [x for x in lines["tie-confidence"] if x["type"] == "round"]
    assert max(len(r["chain"]) for r in gated) == 3, gated

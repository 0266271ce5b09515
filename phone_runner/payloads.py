"""Conversions between the protocol's JSON objects and the replay types (``phone_runner/PROTOCOL.md``).

A request's ``pricing`` is a ``workbench.replay.profile.DeviceProfile`` resolved to seconds, so a
runner needs no profile rules; a reference-engine ``windows[i]`` entry is the JSON form of a
``workbench.replay.trajectory.Window``. Each function has its inverse here; nothing imports torch.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def pricing_from_profile(profile: Any) -> dict[str, Any]:
    """Resolve a ``DeviceProfile`` into the request's ``pricing`` object (seconds; JSON keys)."""
    from workbench.replay.profile import MissingWidthError

    v = profile.verifier
    conc: dict[str, float] = {}
    for k in v.idle_ms:
        try:
            conc[str(k)] = profile.verify_ms(k, True) / 1000.0
        except MissingWidthError:
            pass
    asp = profile.asp
    return {
        "name": profile.name, "step_s": profile.target_step_ms / 1000.0, "loop_s": profile.loop_residual_ms / 1000.0,
        "queue_s": profile.queue_ms / 1000.0, "align_s": profile.alignment_ms / 1000.0,
        "verify_idle_s": {str(k): ms / 1000.0 for k, ms in sorted(v.idle_ms.items())},
        "verify_concurrent_s": conc, "serial_drafter": profile.serial_drafter,
        "sources": {n: {"kind": s.kind, "op_s": s.op_ms / 1000.0, "publication_s": s.publication_ms / 1000.0,
                        "startup_s": s.startup_ms / 1000.0, "concurrent_factor": s.concurrent_factor,
                        "batch_tokens": s.batch_tokens, "confidence": s.has_confidence}
                    for n, s in profile.sources.items()},
        "asp": None if asp is None else {
            "paired_branch_s": asp.paired_branch_ms / 1000.0, "prob_row_s": asp.prob_row_ms / 1000.0,
            "kv_refresh_s": {str(k): ms / 1000.0 for k, ms in sorted(asp.kv_refresh_ms.items())}},
    }


def profile_from_pricing(p: Mapping[str, Any]) -> Any:
    """The inverse: a ``DeviceProfile`` pricing exactly the widths and costs of ``p``."""
    from workbench.replay.profile import parse_profile

    src = "resolved pricing from the phone_runner request"

    def c(x: float) -> dict[str, Any]:
        return {"v": x * 1000.0, "source": src}

    sources = {}
    for n, s in p["sources"].items():
        node: dict[str, Any] = {"kind": s["kind"], "publication_ms": c(s["publication_s"]),
                                "startup_ms": c(s["startup_s"]),
                                "concurrent_factor": {"v": s["concurrent_factor"], "source": src},
                                "confidence": bool(s.get("confidence", False))}
        if s["kind"] == "autoregressive":
            node["forward_ms"] = c(s["op_s"])
            node["batch_tokens"] = {"v": s["batch_tokens"], "source": src}
        else:
            node["chunk_service_ms"] = c(s["op_s"])
        sources[n] = node
    raw: dict[str, Any] = {
        "schema": "device-profile/1", "name": p["name"], "device": p["name"], "rules": {},
        "target_step_ms": c(p["step_s"]), "loop_residual_ms": c(p["loop_s"]), "queue_ms": c(p["queue_s"]),
        "alignment_ms": c(p["align_s"]),
        "verifier": {"idle_ms": {int(k): c(x) for k, x in p["verify_idle_s"].items()},
                     "concurrent": {"ms": {int(k): c(x) for k, x in p["verify_concurrent_s"].items()},
                                    "missing": "error"}},
        "sources": sources, "serial_drafter": p["serial_drafter"],
    }
    if p.get("asp"):
        a = p["asp"]
        raw["asp"] = {"paired_branch_ms": c(a["paired_branch_s"]), "prob_row_ms": c(a["prob_row_s"]),
                      "kv_refresh_ms": {int(k): c(x) for k, x in a["kv_refresh_s"].items()}}
    return parse_profile(raw, file=f"<pricing {p['name']}>")


# ------------------------------------------------------------------------------------------
# reference-engine windows: the JSON form of ``workbench.replay.trajectory.Window``


def window_payload(w: Any, *, prompt: list[int] | None = None) -> dict[str, Any]:
    """A request ``windows[i]`` entry for the reference engine, from a replay ``Window``."""
    d = w.drafts
    drafts = None if d is None else {
        "tokens": [list(d[c][0]) for c in d],
        "confidences": None if d.confidences is None else [list(d[c][1]) for c in d]}
    return {"window_id": w.window_id, "dataset": w.dataset, "audio": None, "features": None, "prompt": prompt,
            "max_output": w.max_output,
            "reference": {"tokens": list(w.reference), "eos_id": w.eos_id, "vocab_size": w.vocab_size,
                          "drafts": drafts,
                          "sources": {n: {"tokens": list(s.tokens),
                                          "confidences": None if s.confidences is None else list(s.confidences),
                                          "op_tokens": list(s.op_tokens),
                                          "op_ms": None if s.op_ms is None else list(s.op_ms),
                                          "eligible": s.eligible} for n, s in w.sources.items()}}}


def window_from_payload(entry: Mapping[str, Any]) -> Any:
    """The inverse of :func:`window_payload` (validated like a trajectory file)."""
    from workbench.replay.trajectory import DraftTable, SourceTrack, Window, _draft_table

    ref = entry["reference"]
    d = ref.get("drafts")
    drafts: DraftTable | None = None if d is None else _draft_table(d["tokens"], d.get("confidences"))
    sources = {n: SourceTrack(n, tuple(s["tokens"]), None if s.get("confidences") is None else tuple(s["confidences"]),
                              tuple(s["op_tokens"]), None if s.get("op_ms") is None else tuple(s["op_ms"]),
                              bool(s.get("eligible", True)))
               for n, s in (ref.get("sources") or {}).items()}
    max_output = entry.get("max_output") or len(ref["tokens"])
    return Window(entry["window_id"], entry.get("dataset", ""), tuple(ref["tokens"]), ref.get("eos_id"),
                  int(ref["vocab_size"]), int(max_output), drafts, sources).validate(
                      f"request window {entry['window_id']!r}")

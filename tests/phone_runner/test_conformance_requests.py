"""Both runners validate requests alike (PROTOCOL.md is the rule): every malformed-request class is
``bad_request`` from the C++ runner and a ``ProtocolError`` (-> ``bad_request``) from the Python one,
never ``internal``; token ids are int64 end to end (round lines included, As²d's correction path
too); a one-token window outputs its token in both."""

from __future__ import annotations

import copy
import json
import re
import subprocess
import sys
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from types import MappingProxyType
from typing import Any

import pytest

from phone_runner.protocol import ProtocolError, parse_request
from workbench.replay.engine import ReplayConfig
from workbench.replay.profile import DeviceProfile
from workbench.replay.trajectory import SourceTrack, Window

from . import two_runners
from .test_conformance import Case, _tiny_profile, _window, pinned_cases, request
from .two_runners import cpp_lines

REPO = Path(__file__).resolve().parents[2]


def _base() -> dict[str, Any]:
    (case,) = [c for c in pinned_cases() if c.case_id == "pin-drain-boundary"]
    return request(case)


def _set(path: str, value: Any) -> Callable[[dict[str, Any]], None]:
    def apply(req: dict[str, Any]) -> None:
        node: Any = req
        keys = path.split(".")
        for k in keys[:-1]:
            node = node[int(k)] if isinstance(node, list) else node[k]
        last = keys[-1]
        if isinstance(node, list):
            node[int(last)] = value
        else:
            node[last] = value
    return apply


# name -> mutation of a valid as2d request; each breaks one rule of PROTOCOL.md
MALFORMED: dict[str, Callable[[dict[str, Any]], None]] = {
    "true_as_repetitions": _set("repetitions", True),
    "true_as_max_output": _set("max_output", True),
    "true_as_batch_tokens": _set("producer.batch_tokens", True),
    "true_as_window_max_output": _set("windows.0.max_output", True),
    "true_as_vocab_size": _set("windows.0.reference.vocab_size", True),
    "true_as_token": _set("windows.0.reference.tokens.0", True),
    "string_as_repetitions": _set("repetitions", "1"),
    "zero_repetitions": _set("repetitions", 0),
    "negative_warmups": _set("warmups", -1),
    "negative_step_cost": _set("pricing.step_s", -0.001),
    "negative_verify_cost": _set("pricing.verify_idle_s.2", -0.01),
    "negative_source_cost": _set("pricing.sources.qwen.op_s", -0.005),
    "nan_cost": _set("pricing.loop_s", "NaN"),
    "token_above_vocab": _set("windows.0.reference.tokens.0", 1000),
    "negative_token": _set("windows.0.reference.tokens.1", -3),
    "source_token_above_vocab": _set("windows.0.reference.sources.qwen.tokens.0", 5000),
    "draft_token_above_vocab": _set("windows.0.reference.drafts.tokens.0.0", 1 << 33),
    "eos_above_vocab": _set("windows.0.reference.eos_id", 1000),
    "host_only_scheme": _set("scheme.name", "as2d_online"),
    "unknown_scheme": _set("scheme.name", "medusa"),
    "windows_not_a_list": _set("windows", {"w": 1}),
    "window_not_an_object": _set("windows.0", 7),
    "models_not_an_object": _set("models", []),
    "engine_not_an_object": _set("engine", "reference"),
    "scheme_not_an_object": _set("scheme", "as2d"),
    "settings_not_an_object": _set("scheme.settings", [3]),
    "pricing_not_an_object": _set("pricing", [1]),
    "unknown_engine": _set("engine.kind", "onnx"),
    "unknown_drain": _set("engine.drain", "sometimes"),
    "version_true": _set("v", True),
    "several_scheme_sources": _set("scheme.source", "qwen+parakeet"),
    "unpriced_scheme_source": _set("scheme.source", "whisper"),
    "scheme_source_no_window_carries": _set("scheme.source", "parakeet"),  # priced, but absent from the window
}


def _cpp(tmp: Path, reqs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The last line the C++ runner answers for each request (one process, --batch)."""
    return [answer[-1] for answer in cpp_lines(tmp, reqs)]


def test_every_malformed_request_class_is_bad_request_in_both_runners(tmp_path: Path) -> None:
    reqs = []
    for name, mutate in MALFORMED.items():
        req = copy.deepcopy(_base())
        req["run_id"] = name
        mutate(req)
        reqs.append(req)
        with pytest.raises(ProtocolError):  # the Python runner answers a ProtocolError with bad_request
            parse_request(json.loads(json.dumps(req).replace('"NaN"', "NaN")))
    parse_request(_base())  # the unbroken request is valid
    cpp = _cpp(tmp_path, [json.loads(json.dumps(r).replace('"NaN"', "NaN")) for r in reqs])
    wrong = {n: (a["code"], a["message"]) for n, a in zip(MALFORMED, cpp, strict=True)
             if a["type"] != "error" or a["code"] != "bad_request"}
    assert not wrong, wrong


def test_the_python_runner_answers_a_malformed_request_with_bad_request_not_internal(tmp_path: Path) -> None:
    for name in ("window_not_an_object", "true_as_repetitions"):
        req = copy.deepcopy(_base())
        MALFORMED[name](req)
        path = tmp_path / f"{name}.json"
        path.write_text(json.dumps(req))
        done = subprocess.run([sys.executable, "-m", "phone_runner.device", "--request", str(path), "--output",
                               str(tmp_path / "out.jsonl")], cwd=REPO, capture_output=True, text=True, timeout=120)
        last = json.loads(done.stdout.splitlines()[-1])
        assert (done.returncode, last["type"], last["code"]) == (2, "error", "bad_request"), (name, last)


def _publish_every_token(prof: DeviceProfile) -> DeviceProfile:
    """``prof`` with its autoregressive producers publishing each token as it is made (batch 1)."""
    sources = {n: replace(c, batch_tokens=1) if c.kind == "autoregressive" else c for n, c in prof.sources.items()}
    return replace(prof, sources=MappingProxyType(sources))


def _correction_window(big: int) -> Window:
    """A rejection whose correction token is >= 2^32, and a next root the producer substituted, so
    As²d's fallback anchor (C.3) searches the stream for that correction token."""
    r0, r1, c, r, s, t, u, x, sub = (big + i for i in (1, 2, 3, 4, 5, 6, 7, 9, 8))
    ref = [r0, r1, c, r, s, t, u, big]
    stream = (r1, x, c, sub, s, t, u, big)  # x is rejected (correction c); sub stands where r belongs
    return Window("int64-correction", "pinned", tuple(ref), big, 1 << 34, len(ref), None,
                  {"qwen": SourceTrack("qwen", stream, (0.9,) * len(stream), (1,) * len(stream))},
                  synthetic=True).validate("<int64>")


def test_int64_token_ids_and_one_token_windows_agree_in_both_runners(tmp_path: Path) -> None:
    big = 1 << 33  # a token t + 2^32 must never be taken for t
    ref = [big + 5, big + 6, 5, 6, big]
    qwen = (big + 6, 5, 6, big)
    wide = Window("int64", "pinned", tuple(ref), big, 1 << 34, len(ref), None,
                  {"qwen": SourceTrack("qwen", qwen, (0.9,) * 4, (1,) * 4)}, synthetic=True).validate("<int64>")
    one = _window("one", [7], [7], [], [], eos=7)
    prof, fast = _tiny_profile(), _publish_every_token(_tiny_profile())
    corr = _correction_window(big)
    cases = [Case("int64-as2d", wide, ReplayConfig("as2d", source="qwen", budget=3), prof, "boundary"),
             Case("int64-target", wide, ReplayConfig("target_only"), prof, "boundary"),
             Case("int64-correction", corr, ReplayConfig("as2d", source="qwen", budget=3), fast, "boundary"),
             Case("int64-correction-first", corr, ReplayConfig("as2d", source="qwen", budget=3,
                                                               anchor_order="correction_first"), fast, "boundary"),
             Case("one-as2d", one, ReplayConfig("as2d", source="qwen", budget=3), prof, "full"),
             Case("one-target", one, ReplayConfig("target_only"), prof, "boundary")]
    reqs = [request(c) for c in cases]
    problems, cpp = two_runners.compare(tmp_path, reqs)
    assert not problems, "\n".join(problems)
    for req, lines in zip(reqs, cpp, strict=True):
        (win,) = [x for x in lines if x["type"] == "window"]
        assert win["output"] == req["windows"][0]["reference"]["tokens"], req["run_id"]
    rounds = {r["run_id"]: [x for x in lines if x["type"] == "round"] for r, lines in zip(reqs, cpp, strict=True)}
    # The rounds carry ids >= 2^32 in every token field, and the correction path ran: a rejected
    # chain, then the correction processed in a plain step, then a chain anchored past it.
    assert any(r["next_root"] is not None and r["next_root"] > 1 << 32 for r in rounds["int64-correction"])
    reasons = [(r["outcome"], r["k1_reason"], len(r["chain"])) for r in rounds["int64-correction"]]
    assert ("correction", None, 2) in reasons and any(k == "correction" for _, k, _ in reasons), reasons
    after = reasons[[k for _, k, _ in reasons].index("correction") + 1]
    assert after[1] is None and after[2] == 3, reasons  # the fallback anchor found the correction token
    assert all(t > 1 << 32 for r in rounds["int64-correction"] for t in (r["root"], *r["chain"], *r["committed"]))


def test_the_cpp_runner_refuses_the_ondemand_mode_as_protocol_md_says(tmp_path: Path) -> None:
    """PROTOCOL.md: the C++ runner has no on-demand mode (it reads no audio) and answers ``bad_request``
    naming the field; the Python runner implements the mode."""
    req = copy.deepcopy(_base())
    req["mode"] = "ondemand"
    req["ondemand"] = {"trace_id": "t", "trace_s": 90.0, "window_s": 8.0, "prepare": "before_request",
                       "instruction": None, "requests": [{"window_id": w["window_id"], "request_s": 60.0,
                                                          "audio_start_s": 52.0} for w in req["windows"]]}
    (answer,) = _cpp(tmp_path, [req])
    assert answer["type"] == "error" and answer["code"] == "bad_request", answer
    assert "'mode'" in answer["message"] and "ondemand" in answer["message"], answer["message"]
    doc = (REPO / "phone_runner/PROTOCOL.md").read_text()
    assert "the C++ runner does not yet and answers `bad_request` (field `mode`)" in doc
    # The reason given names every MNN model the runner has, and what each reads (the Whisper
    # export reads the host's log-mel features, so "no audio" is about raw audio only).
    why = doc[doc.index("Why the C++ runner does not"):doc.index("## Output lines")]
    models = REPO / "phone_runner/runner/src/models"
    mnn = sorted(m for h in models.glob("mnn_*.hpp") for m in re.findall(r"class (\w+) : public Model", h.read_text()))
    assert mnn and all(f"`{m}`" in why for m in mnn), (mnn, why)
    assert "`Llm`" in why and "`features`" in why and "never sees audio" not in why


def test_a_source_named_only_by_producer_source_runs_alike_in_both_runners(tmp_path: Path) -> None:
    """PROTOCOL.md: ``scheme.source`` may be null when ``producer.source`` names the source; both runners
    then read that source, and the run equals the one naming it in ``scheme.source``."""
    (case,) = [c for c in pinned_cases() if c.case_id == "pin-as2d-no-confidence"]  # its chains read the source
    named = request(case)
    unnamed = copy.deepcopy(named)
    unnamed["run_id"], unnamed["scheme"]["source"] = "source-from-producer", None
    assert named["producer"]["source"] == named["scheme"]["source"] and named["scheme"]["name"] == "as2d"
    problems, cpp = two_runners.compare(tmp_path, [named, unnamed])
    assert not problems, "\n".join(problems)
    rounds = [[x for x in lines if x["type"] == "round"] for lines in cpp]
    assert rounds[0] == rounds[1] and any(r["chain"] for r in rounds[1]), rounds

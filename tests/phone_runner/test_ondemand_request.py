"""Mode ``ondemand`` of the phone_runner protocol: a request built from the host's 10-minute trace
validates, survives JSON and parsing unchanged, and reads back the host's own request windows."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import numpy as np
import pytest

from phone_runner.ondemand import ondemand_request, request_rows, request_windows
from phone_runner.protocol import ProtocolError, line, parse_request, validate_line
from workbench.native.ondemand import CHECKPOINTS, request_trace
from workbench.native.windows import SAMPLE_RATE

MODELS = {"target": {"name": "whisper_base", "format": "torch", "threads": 1},
          "producer": {"name": "whisper_base", "format": "torch", "threads": 1}}
SCHEME = {"name": "as2d", "source": "producer", "config": "as2d/producer/b7", "settings": {"budget": 7}}


@pytest.fixture(scope="module")
def trace():
    """The host's 10-minute request trace (19 checkpoints) over clips of distinct lengths and content."""
    rng = np.random.default_rng(0)
    clips = [(f"c{i}", rng.uniform(-0.5, 0.5, int(s * SAMPLE_RATE)).astype(np.float32))
             for i, s in enumerate((7.3, 11.0, 4.2, 29.5))]
    return request_trace(clips, 600.0)


@pytest.fixture(scope="module")
def built(trace, tmp_path_factory):
    staging = tmp_path_factory.mktemp("ondemand")
    req = ondemand_request(trace, staging, run_id="od1", scheme=SCHEME, models=MODELS, window_s=60.0,
                           max_audio_s=30.0, instruction=None)
    return req, staging


def test_a_request_from_the_ten_minute_trace_round_trips(trace, built) -> None:
    req, staging = built
    (staging / "request.json").write_text(json.dumps(req))
    parsed = parse_request(json.loads((staging / "request.json").read_text()))
    assert parsed.mode == "ondemand" and parsed.to_json() == req  # nothing lost or added by the parser
    od = parsed.ondemand
    assert od["window_s"] == 30.0 and od["prepare"] == "before_request"  # capped at Whisper's 30 s
    assert [r["request_s"] for r in od["requests"]] == list(CHECKPOINTS) == list(trace.checkpoints)
    back = request_windows(parsed, staging)
    assert len(back) == 19
    for (wid, s_u, audio), w in zip(back, parsed.windows, strict=True):
        assert wid == w["window_id"] and audio.dtype == np.float32
        assert np.array_equal(audio, trace.window(s_u, 30.0).audio)  # exactly the host's window, sample for sample
        start = next(r["audio_start_s"] for r in od["requests"] if r["window_id"] == wid)
        assert s_u - start == pytest.approx(len(audio) / SAMPLE_RATE)


def _bad(req: dict, path: str, value: object) -> dict:
    out = copy.deepcopy(req)
    node = out
    keys = path.split(".")
    for k in keys[:-1]:
        node = node[int(k)] if isinstance(node, list) else node[k]
    last = keys[-1]
    if value is KeyError:
        del node[last]
    elif isinstance(node, list):
        node[int(last)] = value
    else:
        node[last] = value
    return out


@pytest.mark.parametrize("path, value, needle", [
    ("ondemand", KeyError, "'ondemand'"),
    ("engine.kind", "reference", "engine.kind"),
    ("ondemand.prepare", "whenever", "ondemand.prepare"),
    ("ondemand.instruction", [1, 2], "ondemand.instruction"),
    ("ondemand.requests.3.request_s", 60.0, r"requests\[3\].request_s"),  # not after the previous request
    ("ondemand.requests.0.request_s", 601.0, r"requests\[0\].request_s"),  # after the trace's end
    ("ondemand.requests.2.audio_start_s", 10.0, "longer than ondemand.window_s"),
    ("ondemand.requests.1.window_id", "req9999", r"requests\[1\].window_id"),
    ("ondemand.window_s", 0, "ondemand.window_s"),
])
def test_a_bad_ondemand_request_names_its_field(built, path, value, needle) -> None:
    with pytest.raises(ProtocolError, match=needle):
        parse_request(_bad(built[0], path, value))


def test_an_instruction_and_residual_preparation_parse_and_requests_match_windows() -> None:
    r = parse_request(_minimal())
    assert r.ondemand["instruction"] == "Transcribe." and r.ondemand["prepare"] == "at_request"
    with pytest.raises(ProtocolError, match="one request per window"):
        parse_request(_bad(_minimal(), "ondemand.requests", []))


def _minimal() -> dict:
    return {"v": 1, "run_id": "r", "mode": "ondemand", "scheme": {"name": "target_only"},
            "engine": {"kind": "torch"}, "models": {"target": {"name": "whisper_base"}},
            "windows": [{"window_id": "a", "audio": "a.npy"}], "output": "/data/local/tmp/as2d/o.jsonl",
            "ondemand": {"trace_id": "t", "trace_s": 10.0, "window_s": 5.0, "prepare": "at_request",
                         "instruction": "Transcribe.", "requests": [{"window_id": "a", "request_s": 6.0,
                                                                    "audio_start_s": 1.0}]}}


def test_request_lines_add_up_or_are_refused() -> None:
    pieces = {"residual_audio_s": 0.0, "instruction_prefill_s": 0.25, "handoff_s": 1e-5, "decode_s": 1.5,
              "drain_s": 0.03}
    ok = {"window_id": "req0060", "repetition": 0, "request_s": 60.0, "prepared_s": 0.4, **pieces,
          "latency_s": sum(pieces.values()), "ttft_s": 0.25, "cleanup_s": 0.01}
    text = line("request", **ok)
    assert request_rows([validate_line(text, 2)]) == [ok]
    for over, needle in [({"latency_s": ok["latency_s"] + 0.01}, "add up"), ({"ttft_s": 0.3}, "ttft_s"),
                         ({"decode_s": -1.0, "latency_s": ok["latency_s"] - 2.5}, "negative")]:
        with pytest.raises(ProtocolError, match=needle):
            validate_line(json.dumps({"v": 1, "type": "request", **ok, **over}), 5)
    with pytest.raises(ProtocolError, match="lacks field 'drain_s'"):
        validate_line(json.dumps({"v": 1, "type": "request", **{k: v for k, v in ok.items() if k != "drain_s"}}), 5)


def test_the_protocol_page_documents_the_mode() -> None:
    doc = (Path(__file__).resolve().parents[2] / "phone_runner/PROTOCOL.md").read_text()
    for word in ("`ondemand`", "`before_request`", "`at_request`", "`request_s`", "`audio_start_s`",
                 "`instruction_prefill_s`", "`request`"):
        assert word in doc, word

"""Protocol v1: lines and requests are checked field by field; pricing and windows round-trip."""

from __future__ import annotations

import json

import pytest

from phone_runner.payloads import pricing_from_profile, profile_from_pricing, window_from_payload, window_payload
from phone_runner.protocol import ProtocolError, line, parse_request, validate_line
from workbench.replay.engine import ReplayConfig, replay
from workbench.replay.profile import available_profiles, load_profile
from workbench.replay.synthetic import SyntheticSpec, paper_like_sources, synthetic_windows

ROUND = {"window_id": "w", "repetition": 0, "config": "as2d/qwen/b7", "round": 0, "scheme": "as2d", "width": 3,
         "root": 5, "chain": [6, 7], "provenance": [0, 1], "k1_reason": None, "ready": 2, "accepted": 1,
         "committed": [6, 9], "outcome": "correction", "next_root": 9, "cursor_before": 0, "cursor_after": 2,
         "work_forwards": 0, "work_catchup": 0, "work_paired_forwards": 0, "work_prob_rows": 0,
         "work_refresh_width": 0, "t_decide": 0.0, "t_start": 0.001, "t_end": 0.03}


def test_a_written_line_validates_and_keeps_its_fields() -> None:
    text = line("round", **ROUND)
    obj = validate_line(text, 3)
    assert obj["chain"] == [6, 7] and obj["v"] == 1 and obj["type"] == "round"


@pytest.mark.parametrize("text, needle", [
    ('{"v": 1, "type": "round"', "line 7: not valid JSON"),
    (json.dumps({**ROUND, "v": 2, "type": "round"}), "line 7: protocol version 2"),
    (json.dumps({**ROUND, "type": "round"}), "line 7: protocol version None"),
    (json.dumps({"v": 1, "type": "gossip"}), "unknown line type 'gossip'"),
    (json.dumps({**ROUND, "v": 1, "type": "round", "width": 2}), "does not match chain"),
    (json.dumps({**ROUND, "v": 1, "type": "round", "outcome": "maybe"}), "'outcome' = 'maybe'"),
    (json.dumps({**ROUND, "v": 1, "type": "round", "t_end": float("nan")}), "not valid JSON"),
    (json.dumps({k: v for k, v in ROUND.items() if k != "committed"} | {"v": 1, "type": "round"}),
     "lacks field 'committed'"),
    (json.dumps({"v": 1, "type": "stage", "window_id": "w", "repetition": 0, "resource": "verifier",
                 "stage": "verify", "start": 1.0, "end": 0.5, "round": 0}), "ends (0.5) before"),
])
def test_bad_lines_name_the_line_number_and_the_problem(text: str, needle: str) -> None:
    with pytest.raises(ProtocolError) as err:
        validate_line(text, 7)
    assert needle in str(err.value)


@pytest.mark.parametrize("name", available_profiles())
def test_pricing_round_trips_every_device_profile(name: str) -> None:
    prof = load_profile(name)
    back = profile_from_pricing(json.loads(json.dumps(pricing_from_profile(prof))))
    for k in prof.verifier.idle_ms:
        assert back.verify_ms(k) == pytest.approx(prof.verify_ms(k), rel=1e-12)
        assert back.verify_ms(k, True) == pytest.approx(prof.verify_ms(k, True), rel=1e-12)
    assert set(back.sources) == set(prof.sources)


def test_a_window_through_the_request_replays_identically() -> None:
    spec = SyntheticSpec(n_windows=2, mean_tokens=40, sd_tokens=5, sources=paper_like_sources())
    prof = load_profile("k70_pro")
    price = profile_from_pricing(json.loads(json.dumps(pricing_from_profile(prof))))
    for w in synthetic_windows(spec):
        back = window_from_payload(json.loads(json.dumps(window_payload(w))))
        for cfg in (ReplayConfig("as2d", source="qwen", budget=5), ReplayConfig("asp")):
            a, b = replay(w, cfg, prof), replay(back, cfg, price)
            assert a.records == b.records
            assert a.time == pytest.approx(b.time, rel=1e-12)


def _request(**over: object) -> dict:
    w = synthetic_windows(SyntheticSpec(n_windows=1, mean_tokens=20, sd_tokens=1))[0]
    req = {"v": 1, "run_id": "r1", "mode": "run",
           "scheme": {"name": "as2d", "source": "qwen", "settings": {"budget": 3}},
           "engine": {"kind": "reference", "clock": "virtual"}, "models": {}, "producer": {"batch_tokens": 8},
           "windows": [window_payload(w)], "repetitions": 1, "warmups": 0, "max_output": 64,
           "pricing": pricing_from_profile(load_profile("k70_pro")), "output": "/data/local/tmp/as2d/o.jsonl"}
    req.update(over)
    return req


def test_request_parses_and_rejects_bad_fields() -> None:
    r = parse_request(_request())
    assert r.settings == {"budget": 3} and r.engine["clock"] == "virtual"
    for over, needle in [({"v": 2}, "'v'"), ({"mode": "sprint"}, "'mode'"),
                         ({"scheme": {"name": "magic"}}, "scheme.name"),
                         ({"engine": {"kind": "torch", "clock": "virtual"}}, "engine.clock"),
                         ({"pricing": None}, "'pricing'"), ({"repetitions": 0}, "'repetitions'")]:
        with pytest.raises(ProtocolError, match=needle):
            parse_request(_request(**over))


def test_the_protocol_follows_the_core_vocabulary() -> None:
    """Round lines carry every round-record column; scheme and K=1 reason names are the core's and
    PROTOCOL.md lists them, so a new scheme or reason cannot silently break phone runs."""
    import typing
    from pathlib import Path

    from phone_runner.protocol import HOST_ONLY_SCHEMES, K1_REASONS, LINE_FIELDS, SCHEME_NAMES
    from workbench.decoding import ROUND_COLUMNS, SCHEMES
    from workbench.decoding.records import K1Reason

    assert set(ROUND_COLUMNS) <= set(LINE_FIELDS["round"])
    # every catalog scheme is either carried by the protocol or named as host-only, never silently dropped
    assert set(SCHEMES) == set(SCHEME_NAMES) | set(HOST_ONLY_SCHEMES)
    assert not set(SCHEME_NAMES) & set(HOST_ONLY_SCHEMES)
    assert set(typing.get_args(K1Reason)) == set(K1_REASONS)
    doc = (Path(__file__).resolve().parents[2] / "phone_runner/PROTOCOL.md").read_text()
    for name in (*SCHEMES, *K1_REASONS):
        assert f"`{name}`" in doc, name

"""The line of As²d's calls beside the producer (``verifier.context.concurrent_slope_ms``): fitted on
those calls, parsed, scaled by drift, and charged by replay to the calls that start beside the producer;
and the short dev clips a host calibration measures them on."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from types import MappingProxyType

import numpy as np
import polars as pl
import pytest
import soundfile as sf
import yaml

from workbench.data.corpus import Clip, Corpus, split
from workbench.decoding.records import RoundRecord
from workbench.native.context import SLOPE_MIN_SAMPLES, concurrent_lines
from workbench.native.decomposition import model_call_s
from workbench.native.driver import NativeResult
from workbench.native.episodes import Episodes
from workbench.native.fit import beside_producer, live_widths, with_positions
from workbench.native.windows import SAMPLE_RATE, calibration_clip_ids, demo_clip_windows, demo_windows
from workbench.replay.drift import scaled
from workbench.replay.engine import replay
from workbench.replay.pricing import pricing_for
from workbench.replay.profile import DEVICE_DIR, ProfileError, parse_profile
from workbench.replay.result import ReplayConfig
from workbench.replay.trajectory import SourceTrack, Window


def _run(level_ms: float, slope_ms: float, noise: tuple[float, ...] = (), calls: int = 12) -> NativeResult:
    """As²d calls of width 2, two tokens committed each, all beside a producer that never stops: the call
    at ``pos`` committed tokens costs ``level_ms + slope_ms * pos`` (plus ``noise``, cycled)."""
    records, t, pos = [], 0.0, 1
    for i in range(calls):
        cost = (level_ms + slope_ms * pos + (noise[i % len(noise)] if noise else 0.0)) / 1000
        rec = RoundRecord(i, "as2d", 2, 10 + 2 * i, (11 + 2 * i,), (0,), None, 1, 1, (10 + 2 * i, 11 + 2 * i),
                          "bonus", None, None, None)
        records.append(rec.timed(t, t, t + cost))
        t, pos = t + cost, pos + 2
    out = tuple(tok for r in records for tok in r.committed)
    return NativeResult("w", "as2d", out, tuple(records), (), t, t, producer_tokens=out,
                        producer_times=tuple(0.0 for _ in out), producer_finish=float("nan"))


def _calls(*runs: NativeResult) -> pl.DataFrame:
    ep = Episodes()
    for rep, run in enumerate(runs):
        ep.results.append(("w", "as2d", rep, run))
    rounds = ep.rounds().with_columns((pl.col("t_end") - pl.col("t_start")).alias("call"))
    return beside_producer(rounds)


def test_the_line_beside_the_producer_is_fitted_on_its_own_calls_with_one_level_per_run():
    """Two runs at machine speeds 8 ms apart, calls cheaper later in the window (-0.2 ms per token): the
    within-run slope is the calls' own, not the spread between the runs' levels."""
    beside = _calls(_run(30.0, -0.2, (0.1, -0.1)), _run(38.0, -0.2, (-0.1, 0.1)))
    lines = concurrent_lines(with_positions(beside).filter(pl.col("round") > 0), "today")
    assert lines[2]["v"] == pytest.approx(-0.2, abs=0.01)
    assert "standard errors from 0" in lines[2]["source"] and "one level per run" in lines[2]["source"]
    # noise alone: no line; too few calls: no entry (replay takes the idle slope there)
    flat = _calls(_run(30.0, 0.0, (2.0, -1.5, 0.5, -2.5, 1.0, 0.0)), _run(31.0, 0.0, (-1.0, 2.5, -0.5, 1.5)))
    none = concurrent_lines(with_positions(flat).filter(pl.col("round") > 0), "today")
    assert none[2]["v"] == 0.0 and "standard errors of 0" in none[2]["source"]
    few = _calls(_run(30.0, -0.2, calls=SLOPE_MIN_SAMPLES))
    assert concurrent_lines(with_positions(few).filter(pl.col("round") > 0), "today") == {}


def test_live_prices_beside_the_producer_move_along_their_own_line():
    """The idle sweep's slope (+0.5) would move the calls beside the producer the wrong way: they move
    along their own line (-0.2) to ``ref_tokens``, and the idle price keeps the sweep's."""
    beside = _calls(_run(30.0, -0.2), _run(30.0, -0.2))
    ctx = {"ref_tokens": {"v": 33.0}, "slope_ms": {2: {"v": 0.5}}, "concurrent_slope_ms": {2: {"v": -0.2}}}
    moved = live_widths(beside, {2: [99.0]}, "today", "calls", ctx, concurrent=True)[2]
    assert moved["v"] == pytest.approx(30.0 - 0.2 * 33.0, abs=1e-6)
    idle = live_widths(beside, {2: [99.0]}, "today", "calls", ctx)[2]
    assert idle["v"] != pytest.approx(moved["v"], abs=1.0)


def _profile(concurrent_slope: dict | None, slope: float = 0.0, ref: float = 0.0):
    raw = yaml.safe_load((DEVICE_DIR / "host.yaml").read_text())
    ks = raw["verifier"]["idle_ms"]
    ctx = {"ref_tokens": {"v": ref, "source": "x"}, "slope_ms": {k: {"v": slope, "source": "x"} for k in ks},
           "cold_ms": {"v": 0.0, "source": "x"}, "residual_ms": {"v": 0.0, "source": "x"}}
    if concurrent_slope is not None:
        ctx["concurrent_slope_ms"] = concurrent_slope
    raw["verifier"]["context"] = ctx
    return parse_profile(raw, file="host-test.yaml")


def test_the_concurrent_line_is_parsed_checked_and_scaled_by_the_concurrent_ratio():
    p = _profile({k: {"v": 0.3, "source": "x"} for k in (1, 4)}, slope=0.1)
    fit = p.verifier.context
    assert fit.slope(4, concurrent=True) == 0.3 and fit.slope(4) == 0.1
    assert fit.slope(2, concurrent=True) == 0.1  # no concurrent line at K2: the idle slope
    assert _profile(None, slope=0.1).verifier.context.slope(4, concurrent=True) == 0.1  # profiles before the field
    with pytest.raises(ProfileError, match="concurrent_slope_ms.99"):
        _profile({99: {"v": 0.3, "source": "x"}})
    with pytest.raises(ProfileError, match="concurrent_slope_ms.4"):
        _profile({4: {"v": 0.3}})
    s = scaled(p, 1.1, concurrent_ratio=1.3).verifier.context
    assert s.concurrent_slope_ms[4] == pytest.approx(0.39) and s.slope_ms[4] == pytest.approx(0.11)


def test_replay_charges_the_concurrent_line_only_to_calls_beside_the_producer():
    """A concurrent line and no idle slope: target-only (idle calls) is priced as without any line, As²d
    (calls beside the producer) pays it; outputs are unchanged (C.4)."""
    ks = range(1, 17)
    plain = _profile({k: {"v": 0.0, "source": "x"} for k in ks})
    lined = _profile({k: {"v": 0.4, "source": "x"} for k in ks})
    ref = tuple(range(10, 70)) + (0,)
    track = SourceTrack("whisper-tiny.en", ref, None, (1,) * len(ref))  # a producer that is always right
    w = Window("w", "host", ref, 0, 1000, 200, None, {"whisper-tiny.en": track}).validate()
    to_plain, to_lined = (replay(w, ReplayConfig("target_only"), p) for p in (plain, lined))
    assert to_lined.time == pytest.approx(to_plain.time, rel=1e-12)
    cfg = ReplayConfig("as2d", source="whisper-tiny.en")
    a, b = replay(w, cfg, plain), replay(w, cfg, lined)
    assert b.output == a.output == to_plain.output
    # every call that ran wholly beside the producer costs its concurrent price plus the line at its
    # context length (``ref_tokens`` 0 here): pos = committed tokens before it, the prefill's one included
    produced = max(end for _, stage, _, end, _ in b.producer_spans if stage == "produce")
    price, pos, checked = pricing_for(lined), 1, 0
    for rec, start, end in zip(b.untimed, b.t_start, b.t_end, strict=True):
        if end <= produced:
            assert end - start == pytest.approx(price.verify(rec.width, True) + 0.4 * pos / 1000, rel=1e-9)
            checked += 1
        pos += len(rec.committed)
    assert checked >= 3
    # the decomposition prices a native call the same way: the line beside the producer, the slope alone
    idle_lined = dataclasses.replace(lined.verifier.context, slope_ms=MappingProxyType({k: 0.1 for k in ks}))
    p = dataclasses.replace(lined, verifier=dataclasses.replace(lined.verifier, context=idle_lined))
    base = dataclasses.replace(p, verifier=dataclasses.replace(p.verifier, context=None))
    assert model_call_s(p, 4, 0.0, 1.0, 10, False) - model_call_s(base, 4, 0.0, 1.0, 10, False) == pytest.approx(
        0.4 * 10 / 1000)
    assert model_call_s(p, 4, 2.0, 1.0, 10, False) - model_call_s(base, 4, 2.0, 1.0, 10, False) == pytest.approx(
        0.1 * 10 / 1000)


def _clip(root: Path, name: str, origin: str) -> Clip:
    path = root / f"{name}.wav"
    sf.write(str(path), (0.05 * np.random.default_rng(len(name)).standard_normal(2 * SAMPLE_RATE)).astype(np.float32),
             SAMPLE_RATE)
    return Clip(name, path, name, origin, 2.0, SAMPLE_RATE)  # type: ignore[arg-type]


def test_calibration_clips_are_dev_clips_the_d3_check_leaves_out(tmp_path: Path) -> None:
    clips = [_clip(tmp_path, f"{o}-{i}", o) for o in ("piper", "cards") for i in range(6)]
    corpus = Corpus(tmp_path, clips)
    dev, test = split(corpus, 0.25, 0)
    short = demo_clip_windows(2, corpus=corpus)
    assert [w.clip_ids for w in short] == [(c.window_id,) for c in dev[:2]] and {w.split for w in short} == {"dev"}
    held = calibration_clip_ids(corpus=corpus)
    calib, evals = demo_windows(corpus=corpus)
    assert held == {c.window_id for c in dev} >= {i for w in calib for i in w.clip_ids}
    assert held.isdisjoint(c.window_id for c in test) and held.isdisjoint(i for w in evals for i in w.clip_ids)

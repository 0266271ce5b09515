"""Host calibration on tiny real Whisper models: a profile replay accepts, with every width."""

from __future__ import annotations

import statistics

import polars as pl
import pytest
import yaml

from tests.native.test_native import audio, producer_dir, tiny_dir  # noqa: F401  (fixtures)
from workbench.models.kernel_plan import fit_plan
from workbench.native import fit as fit_module
from workbench.native.calibrate import calibrate_host
from workbench.native.episodes import SAMPLE_SCHEMA, host_setup, native_episodes, publication_rows
from workbench.native.fingerprint import machine_fingerprint
from workbench.native.fit import LIVE_MIN_CALLS, with_positions
from workbench.native.refit import changes, main, refit
from workbench.native.report import episode_report
from workbench.native.stage_speed import at_anchor_speed
from workbench.native.windows import AudioWindow
from workbench.replay.profile import load_profile


@pytest.fixture(scope="module")
def host_cfg(tiny_dir, producer_dir):  # noqa: F811
    """A conf/model-shaped mapping for the tiny pair (producer = serial drafter weights)."""
    def spec(name, path):
        return {"name": name, "family": "whisper", "local_path": str(path), "vocabulary": "shared",
                "batch_tokens": 4}
    return {"target": spec("tiny-target", tiny_dir), "drafter": spec("tiny-producer", producer_dir),
            "serial_drafter": spec("tiny-serial", producer_dir), "budget": 3, "max_new_tokens": 120}


@pytest.fixture(scope="module")
def windows(audio):  # noqa: F811
    return [AudioWindow("calib", ("a",), audio, split="dev"),
            AudioWindow("eval", ("b",), audio[::-1].copy(), split="test")]


@pytest.fixture(scope="module")
def calibrated(host_cfg, windows, tmp_path_factory):
    """One tiny calibration with widths 1..16, its out-dir kept: (profile, raw samples, out-dir)."""
    out = tmp_path_factory.mktemp("calibration")
    profile, raw = calibrate_host(windows[:1], host_cfg, reps=1, widths=range(1, 17), out_dir=out,
                                  warmup=0, progress=False, attempts=1)
    return profile, raw, out


def test_calibration_writes_a_profile_replay_accepts_with_all_widths(calibrated):
    profile, raw, tmp_path = calibrated
    loaded = load_profile(tmp_path / "host.yaml")
    assert loaded.verifier.widths() == tuple(range(1, 17))
    assert all(loaded.verify_ms(k, concurrent=True) > 0 for k in range(1, 17))
    assert loaded.serial_drafter == "tiny-serial" and {"tiny-producer", "tiny-serial"} <= set(loaded.sources)
    assert all("measured on host" in v or "derived" in v or "fitted" in v for v in loaded.provenance.values())
    assert loaded.target_step_ms == profile.target_step_ms > 0
    assert tuple(raw.columns) == tuple(SAMPLE_SCHEMA)
    assert set(raw["kind"]) >= {"verify", "producer_pass", "episode", "publication"}
    assert pl.read_parquet(tmp_path / "host_samples.parquet").height == raw.height
    assert (tmp_path / "host_rounds.parquet").exists()
    # The profile names the machine that measured it, and carries the context fit and per-width sd.
    assert dict(loaded.machine) == machine_fingerprint("torch")
    fit = loaded.verifier.context
    assert fit is not None and set(fit.slope_ms) == set(range(1, 17)) and fit.residual_ms >= 0 and fit.cold_ms >= 0
    assert set(loaded.verifier.idle_sd_ms) == set(range(1, 17))
    # Coexistence and startup come from the producer as it ran in the As²d episodes (R_LIVE), and the
    # drift anchor is the median target-only round on the calibration window.
    assert {"producer_first", "producer_token"} <= set(raw["kind"])
    src = loaded.source("tiny-producer")
    assert "R_LIVE" in loaded.provenance["sources.tiny-producer.concurrent_factor"] and src.concurrent_factor > 0
    assert src.startup_ms >= 0 and loaded.anchor_window == "calib"
    # the driver runs the producer's prompt prefill before the clock (A.3): replay charges it nothing
    assert src.prefilled and "before the clock" in loaded.provenance["sources.tiny-producer.prefilled"]
    # every price below is read from the samples brought to the anchor's speed (R_STAGE), as the fit reads them
    raw, _, factors = at_anchor_speed(raw, pl.read_parquet(tmp_path / "host_rounds.parquet"))
    assert loaded.calibration is not None and dict(loaded.calibration.stage_factors) == {f.stage: f.factor
                                                                                          for f in factors}
    assert factors and {f.stage for f in factors if f.factor == 1.0} >= {"calib episodes"}
    to = raw.filter((pl.col("kind") == "episode") & (pl.col("scheme") == "target_only"))
    assert loaded.anchor_ms == pytest.approx(sorted((to["ms"] / to["rounds"]).to_list())[to.height // 2], abs=1e-4)
    a2 = raw.filter((pl.col("kind") == "episode") & (pl.col("scheme") == "as2d"))  # As²d's own anchor, per token
    assert a2.height >= 1 and loaded.anchor_as2d_ms == pytest.approx(
        statistics.median((a2["ms"] / a2["tokens"]).to_list()), abs=1e-4)
    pub = raw.filter((pl.col("kind") == "producer_token") & (pl.col("scheme") == "as2d") & (pl.col("tokens") >= 4)
                     & (pl.col("window_id") == "calib"))  # the producer's own anchor, per published token
    assert pub.height >= 1 and loaded.anchor_producer_ms == pytest.approx(statistics.median(pub["ms"].to_list()),
                                                                          abs=1e-4)
    # A width the episodes called often is priced from those calls (R_LIVE; a window's first call left out,
    # the cold surcharge prices it), each moved along its width's slope (beside the producer: the line of
    # those calls, where fitted) to ref_tokens; the rest by the
    # sweep: beside the producer from As²d's calls that started while it ran, idle from target-only, SD and
    # ASP calls.
    all_rounds = with_positions(pl.read_parquet(tmp_path / "host_rounds.parquet")).filter(pl.col("round") > 0)
    for configs, concurrent, field in ((["as2d"], True, "concurrent.ms"), (["target_only", "sd", "asp"], False,
                                                                           "idle_ms")):
        rounds = all_rounds.filter(pl.col("config").is_in(configs))
        if concurrent:
            rounds = rounds.filter(pl.col("producer_running"))
        calls = [1000 * (r["t_end"] - r["t_start"]) - fit.slope(r["width"], concurrent) * (r["pos"] - fit.ref_tokens)
                 for r in rounds.iter_rows(named=True)]
        by_width = {k: [c for c, w in zip(calls, rounds["width"].to_list(), strict=True) if w == k]
                    for k in range(1, 17)}
        live = [k for k, v in by_width.items() if len(v) >= LIVE_MIN_CALLS]
        # beside the producer the tiny pair's producer may finish before any width has five calls when the
        # machine is loaded; the fit itself is checked on fixed calls in test_calibrate_fit.py
        assert live or concurrent, f"the tiny {configs} episodes call some width often enough"
        for k in live:
            assert loaded.verify_ms(k, concurrent) == pytest.approx(statistics.median(by_width[k]), abs=1e-3)
            assert "R_LIVE" in loaded.provenance[f"verifier.{field}.{k}"]
        for k in set(range(1, 17)) - set(live):
            assert "R_LIVE" not in loaded.provenance.get(f"verifier.{field}.{k}", "")
            if not concurrent:  # the sweep's median
                sweep = raw.filter((pl.col("kind") == "verify") & ~pl.col("concurrent") & (pl.col("width") == k))
                assert loaded.verify_ms(k) == pytest.approx(statistics.median(sweep["ms"].to_list()), abs=1e-3)
    # Per-width anchors: the idle sweep's calls on that window at offset 0, median per probe width.
    calls = raw.filter((pl.col("kind") == "verify") & ~pl.col("concurrent") & (pl.col("offset") == 0)
                       & (pl.col("window_id") == "calib"))
    assert set(loaded.anchor_widths_ms) == {1, 4, 8}
    for k, ms in loaded.anchor_widths_ms.items():
        assert ms == pytest.approx(statistics.median(calls.filter(pl.col("width") == k)["ms"].to_list()), abs=1e-4)


def test_refit_from_stored_samples_reproduces_the_fit_and_follows_a_changed_rule(calibrated, tmp_path, monkeypatch,
                                                                               capsys):
    """``refit`` fits the calibration again from its kept samples: under today's rules nothing moves, and
    the calibration's date, header and steadiness verdict stay; a changed rule moves exactly the fields it
    governs (every width priced from live calls falls back to the sweep)."""
    _, _, out = calibrated
    stored = yaml.safe_load((out / "host.yaml").read_text())
    again = refit(out / "host.yaml")
    assert changes(stored, again) == []
    assert again["machine"] == stored["machine"] and again["calibration"] == stored["calibration"]
    assert "refit" in again["description"]
    monkeypatch.setattr(fit_module, "LIVE_MIN_CALLS", 10**6)
    main([str(out / "host.yaml"), "--out-dir", str(tmp_path)])
    written = tmp_path / f"{out.name}.yaml"
    moved = changes(stored, yaml.safe_load(written.read_text()))
    assert moved and all(field.startswith(("verifier.", "target_step_ms", "asp.")) for field, _, _ in moved)
    assert any(field.startswith("verifier.idle_ms.") for field, _, _ in moved)
    printed = capsys.readouterr().out
    assert f"{len(moved)} value(s) moved" in printed and moved[0][0] in printed
    assert load_profile(written).verifier.widths() == tuple(range(1, 17))
    # a profile without its samples is refused in one line naming the file and the fix
    lone = tmp_path / "lone" / "host.yaml"
    lone.parent.mkdir()
    lone.write_text((out / "host.yaml").read_text())
    with pytest.raises(SystemExit, match=r"lone/host.yaml: no raw samples .*Fix: .*calibrate"):
        main([str(lone), "--out-dir", str(tmp_path / "x")])
    with pytest.raises(SystemExit, match=r"missing.yaml: cannot read a host profile .*Fix: "):
        main([str(tmp_path / "missing.yaml"), "--out-dir", str(tmp_path / "x")])


def test_publication_rows_price_the_producer_as_it_ran():
    """Tokens at -0.9 s (the prompt prefill's, before the clock), 20, 30 and 50 ms: first publication
    20 ms, then 2 intervals over 30 ms = 15 ms per token."""
    rows = publication_rows("w", "as2d", 0, (-0.9, 0.020, 0.030, 0.050))
    summary = [r for r in rows if r["kind"] != "producer_interval"]
    # producer_first: two operations priced before it (the prompt prefill's and the first token's own)
    assert [(r["kind"], r["ms"], r["tokens"]) for r in summary] == [("producer_first", pytest.approx(20.0), 2),
                                                                   ("producer_token", pytest.approx(15.0), 2)]
    # each interval on its own too: the publication-curve growth fit reads them
    assert [r["ms"] for r in rows if r["kind"] == "producer_interval"] == [pytest.approx(10.0), pytest.approx(20.0)]
    assert publication_rows("w", "as2d", 0, (-0.9,)) == [] and len(publication_rows("w", "as2d", 0, (0.01,))) == 1


def test_a_word_published_at_once_shares_its_interval_among_its_tokens():
    """Tok_T holds a word back until it is complete: tokens at 20 ms, then a three-token word at 50 ms,
    then one at 60 ms. The word's 30 ms are 10 ms per token (not 30, 0, 0); the first publication's
    group (two tokens at 20 ms) starts the clock of the intervals."""
    from workbench.native.episodes import publication_groups

    times = (-0.9, 0.020, 0.020, 0.050, 0.050, 0.050, 0.060)
    assert publication_groups(times) == [1, 2, 3, 1]
    rows = publication_rows("w", "as2d", 0, times)
    iv = [(r["offset"], r["ms"]) for r in rows if r["kind"] == "producer_interval"]
    assert iv == [(3, pytest.approx(10.0)), (4, pytest.approx(10.0)), (5, pytest.approx(10.0)),
                  (6, pytest.approx(10.0))]
    (tok,) = [r for r in rows if r["kind"] == "producer_token"]
    assert tok["ms"] == pytest.approx(10.0) and tok["tokens"] == 4  # 40 ms over the 4 tokens after the first group


def test_a_counted_producer_is_priced_per_drafter_forward():
    """Forward counts per token (Tok_T): the prefill ran 2 forwards before the clock (operation 0), the
    next token took one more forward (20 ms), a two-token word waited 3 forwards (50 ms), one more token
    took one (60 ms). Intervals are per forward, at forward positions: 30 ms over 3 forwards is 10 each,
    not 15 per token of the word; the mean is 40 ms over 4 forwards, not over 3 tokens."""
    from workbench.replay.trajectory import operations_of

    times, ops = (-0.9, 0.020, 0.050, 0.050, 0.060), (2, 3, 6, 6, 7)
    assert operations_of(ops) == (1, 1, 0, 0, 2, 1)
    rows = publication_rows("w", "as2d", 0, times, ops)
    (first,) = [r for r in rows if r["kind"] == "producer_first"]
    assert first["ms"] == pytest.approx(20.0) and first["tokens"] == 2
    iv = [(r["offset"], r["ms"]) for r in rows if r["kind"] == "producer_interval"]
    assert iv == [(2, pytest.approx(10.0)), (3, pytest.approx(10.0)), (4, pytest.approx(10.0)),
                  (5, pytest.approx(10.0))]
    (tok,) = [r for r in rows if r["kind"] == "producer_token"]
    assert tok["ms"] == pytest.approx(10.0) and tok["tokens"] == 4
    # the same times counted per token would price the word's tokens, not its forwards
    per_token = [r for r in publication_rows("w", "as2d", 0, times) if r["kind"] == "producer_token"]
    assert per_token[0]["ms"] == pytest.approx(40.0 / 3) and per_token[0]["tokens"] == 3
    with pytest.raises(ValueError, match="must not decrease"):
        operations_of((3, 2))


def test_calibration_fits_the_kernel_plan_and_measures_under_it(host_cfg, windows):
    # kernels: auto -- the plan per width comes from this calibration's kernel sweep, never a constant
    cfg = {**host_cfg, "target": {**host_cfg["target"], "kernels": "auto"}}
    setup = host_setup(cfg)
    profile, raw = calibrate_host(windows[:1], cfg, reps=1, widths=range(1, 9), warmup=0, setup=setup,
                                  progress=False, attempts=1)
    ker = raw.filter(pl.col("kind") == "kernel")
    assert set(ker["kernel"]) == {"plain", "packed"} and set(ker["width"]) == set(range(1, 9))
    costs = {(k, w): statistics.median(ker.filter((pl.col("kernel") == k) & (pl.col("width") == w))["ms"])
             for k in ("plain", "packed") for w in range(1, 9)}
    assert profile.kernel_plan.as_dict() == fit_plan(costs).as_dict()
    assert "R_KERNEL" in profile.provenance["kernel_plan.1.ms"]
    assert setup.pair.target.kernels.plan.as_dict() == profile.kernel_plan.as_dict()  # the target runs by it
    assert profile.machine["engine"] == "torch+auto"
    # every planned run is audited against the unplanned target's own greedy output, off the clock
    ep = native_episodes(setup, windows[1:], ["target_only", "as2d"], 1, 0)
    assert ep.references["eval"] == ep.runs("eval", "target_only")[0].output
    assert episode_report(ep).tables["native_windows"]["matched"].all()

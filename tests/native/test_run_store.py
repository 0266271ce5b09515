"""The D.3 run store: native runs written as JSON re-price to the same agreement as the runs in memory,
with the stored profile or another, and a file that is no store is refused with one line."""

from __future__ import annotations

import dataclasses
import json

import polars as pl
import pytest
import yaml

from workbench.errors import DataError, WorkbenchError
from workbench.native.agreement import agreement_frame
from workbench.native.driver import NativeResult
from workbench.native.episodes import Episodes, producer_token_ms
from workbench.native.reprice import main, reprice
from workbench.native.run_store import ReplayInputs, load_runs, run_from_json, run_to_json, save_runs
from workbench.replay.profile import DEVICE_DIR, load_profile

from .test_decomposition import EOS, REFERENCE, SETTINGS, VOCAB, native_like_run, profile_for


@pytest.fixture
def host(tmp_path):
    """The reference host profile with drift anchors, as a calibration on this machine writes them."""
    raw = yaml.safe_load((DEVICE_DIR / "host.yaml").read_text())
    src = "test fixture: a calibration's anchors"
    raw.update(anchor_ms={"v": 20.0, "source": src}, anchor_window="calib00",
               anchor_producer_ms={"v": 5.0, "source": src},
               anchor_widths_ms={1: {"v": 18.0, "source": src}, 4: {"v": 26.0, "source": src}})
    path = tmp_path / "host-anchored.yaml"
    path.write_text(yaml.safe_dump(raw))
    return path


def episodes() -> tuple[Episodes, ReplayInputs]:
    """Two windows, three As²d repetitions each (the median is the log's own run), three target-only runs,
    drift probes before each repetition."""
    ep = Episodes(placement={"verifier": {"cpus": [0]}})
    run = native_like_run()
    for wid in ("w1", "w2"):
        for rep, scale in enumerate((1.1, 1.0, 0.93)):
            a2 = dataclasses.replace(run, window_id=wid, time=run.time * scale)
            to = NativeResult(wid, "target_only", REFERENCE, (), (), 0.05 * len(REFERENCE) * scale, 1.0)
            ep.results += [(wid, "target_only", rep, to), (wid, "as2d", rep, a2)]
            ep.probes[(wid, rep)] = 20.0 * scale
            ep.producer_probes[(wid, rep)] = 5.5 * scale
            ep.width_probes[(wid, rep)] = {1: 18.0, 4: 27.0}
            # probes run on the profile's anchor window (test_anchors: "calib00")
            ep.probe_runs[(wid, rep)] = (dataclasses.replace(to, window_id="calib00"),
                                         dataclasses.replace(run, window_id="calib00"))
        ep.references[wid] = REFERENCE
    _, source = profile_for(run, growth=True)
    return ep, ReplayInputs(source, SETTINGS, EOS, VOCAB, 200)


def test_a_run_round_trips_through_json_with_its_records_and_producer_stream():
    run = native_like_run()
    back = run_from_json(json.loads(json.dumps(run_to_json(run, full=True), allow_nan=False)))
    assert back == dataclasses.replace(run, origin=back.origin)  # origin is NaN on both (NaN != NaN)
    slim = run_from_json(run_to_json(run, full=False))
    assert slim.output == run.output and slim.time == run.time and slim.records == ()
    # a slim run keeps how fast its producer ran: its interval per operation, as the full run's
    assert slim.producer_times == run.producer_times and slim.producer_ops == run.producer_ops
    assert producer_token_ms(slim.producer_times, slim.producer_ops) is not None
    assert producer_token_ms(slim.producer_times, slim.producer_ops) == producer_token_ms(run.producer_times,
                                                                                           run.producer_ops)
    to = run_from_json(run_to_json(NativeResult("w", "target_only", REFERENCE, (), (), 1.0, 1.0), full=False))
    assert to.producer_times == () and "producer_times" not in run_to_json(to, full=False)


def test_stored_runs_reprice_to_the_agreement_of_the_runs_in_memory(tmp_path, host):
    ep, inputs = episodes()
    profile = load_profile(host)
    path = save_runs(tmp_path / "native_runs.json", ep, inputs, str(host))
    before = agreement_frame(ep, inputs, profile)
    store = load_runs(path)
    assert store.inputs == inputs and store.episodes.probes == ep.probes
    assert store.episodes.width_probes == ep.width_probes
    # the probes' own runs are kept with their calls and publications, for ratios a later model reads
    probe_to, probe_a2 = store.episodes.probe_runs[("w2", 1)]
    assert probe_a2.records == ep.probe_runs[("w2", 1)][1].records and probe_to.scheme == "target_only"
    assert probe_a2.producer_times == ep.probe_runs[("w2", 1)][1].producer_times
    # only the median As²d run keeps its rounds; the others keep output and time, all D.3 reads of them
    kept = [r for _, s, _, r in store.episodes.results if s == "as2d" and r.records]
    assert [r.time for r in kept] == [ep.runs("w1", "as2d")[1].time, ep.runs("w2", "as2d")[1].time]
    after, summary = reprice(path)  # the profile stored with the runs
    assert after.height == 2 and after.equals(before)
    # the probes' As²d runs price the verify calls beside the producer by their own drift (in the verdict)
    assert after["drift_ratio_concurrent"].null_count() == 0 and summary["concurrent_anchored"] is True
    assert summary["mae_pct"] == pytest.approx(before["abs_error_pct"].mean())
    # another profile prices the same runs differently: the native side stays, the replay side moves
    raw = yaml.safe_load(host.read_text())
    for src in raw["sources"].values():
        src["forward_ms"]["v"] *= 2  # a producer twice as slow
    other = tmp_path / "slow-producer.yaml"
    other.write_text(yaml.safe_dump(raw))
    slower, _ = reprice(path, load_profile(other))
    assert slower["tps_native"].equals(before["tps_native"])
    assert not slower["tps_replay"].equals(before["tps_replay"])


def test_the_command_prints_the_verdict_of_a_store(tmp_path, capsys, host):
    ep, inputs = episodes()
    path = save_runs(tmp_path / "native_runs.json", ep, inputs, str(host))
    main([str(path)])
    out = capsys.readouterr().out
    assert "D.3 replay vs native" in out and "w2" in out


def test_several_stores_write_their_judged_and_median_run_errors_as_a_results_section(tmp_path, capsys, host):
    ep, inputs = episodes()
    a = save_runs(tmp_path / "a" / "native_runs.json", ep, inputs, str(host))
    b = save_runs(tmp_path / "b" / "native_runs.json", ep, inputs, str(host))
    doc = tmp_path / "results.md"
    doc.write_text("# Results\n")
    main([str(a), str(b), "--markdown", str(doc), "--split", "bench dev"])
    out, text = capsys.readouterr().out, doc.read_text()
    assert out.count("D.3 replay vs native") == 2 and "results table ->" in out
    _, summary = reprice(a)
    row = (f"| `{a}` | {summary['median_run_mae_pct']:.2f} → {summary['mae_pct']:.2f} | "
           f"{summary['median_run_pooled_pct']:+.2f} → {summary['pooled_error_pct']:+.2f} |")
    assert row in text and f"`{b}`" in text and "bench dev" in text and "cores" in text
    assert text.startswith("# Results\n")


@pytest.mark.parametrize("text", ["{not json", json.dumps({"format": 99}), json.dumps([1, 2])])
def test_a_file_that_is_no_run_store_is_refused_with_one_line(tmp_path, text):
    bad = tmp_path / "native_runs.json"
    bad.write_text(text)
    with pytest.raises(DataError) as err:
        load_runs(bad)
    assert str(bad) in str(err.value) and "\n" not in str(err.value)
    with pytest.raises(SystemExit) as stop:
        main([str(bad)])
    assert str(bad) in str(stop.value.code)


def test_a_store_without_a_profile_asks_for_one(tmp_path, host):
    ep, inputs = episodes()
    path = save_runs(tmp_path / "native_runs.json", ep, inputs, None)
    with pytest.raises(SystemExit) as stop:
        main([str(path)])
    assert "--profile" in str(stop.value.code)
    frame, _ = reprice(path, load_profile(host))
    assert isinstance(frame, pl.DataFrame) and frame.height == 2


def test_sensitivity_moves_only_the_target_drift_ratio_and_reports_the_largest_step(tmp_path, capsys, host):
    """At factor 1 the sensitivity columns are the re-priced errors; a faster target (a larger ratio prices
    it slower, so replay runs slower) lowers every window's replayed TPS; the command prints the table."""
    from workbench.native.reprice import SENSITIVITY, sensitivity

    ep, inputs = episodes()
    path = save_runs(tmp_path / "native_runs.json", ep, inputs, str(host))
    frame, _ = reprice(path)
    moved = sensitivity(path)
    assert moved["window_id"].to_list() == frame["window_id"].to_list()
    assert moved["x1"].to_list() == pytest.approx(frame["signed_error_pct"].to_list())
    assert all(a > b for a, b in zip(moved["x0.97"], moved["x1.03"], strict=True))
    cols = [f"x{f:g}" for f in SENSITIVITY]
    step = [max(abs(row[b] - row[a]) for a, b in zip(cols, cols[1:], strict=False))
            for row in moved.iter_rows(named=True)]
    assert moved["max_step_pts"].to_list() == pytest.approx(step) and min(step) > 0
    main([str(path), "--sensitivity"])
    assert "drift ratio moved" in capsys.readouterr().out
    unanchored = save_runs(tmp_path / "plain.json", ep, inputs, str(DEVICE_DIR / "host.yaml"))
    with pytest.raises(WorkbenchError, match="no drift anchor"):
        sensitivity(unanchored)
    with pytest.raises(SystemExit) as stop:  # the probed runs need an anchor to be re-priced at all
        main([str(unanchored)])
    assert str(unanchored) in str(stop.value.code) and "anchor_ms" in str(stop.value.code)

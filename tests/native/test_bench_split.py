"""Tune on dev, report test: the bench reports the test split, and selection refuses test windows."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

from workbench.data import bench_corpus as bc
from workbench.errors import DataError
from workbench.native.bench import bench_eval_windows, parser
from workbench.native.bench_report import goal_lines
from workbench.native.calibrate import calibrate_host
from workbench.native.choice import choose_on_dev, read_choice, write_choice
from workbench.native.windows import AudioWindow, dev_only

needs_corpus = pytest.mark.skipif(not (bc.TESTDATA_DIR.is_dir() and bc.ASTERISK_DIR.is_dir()),
                                  reason="needs pocketsphinx-testdata and asterisk-core-sounds-en-wav (setup.sh)")
AUDIO = np.zeros(16000, dtype=np.float32)


def test_the_bench_reports_the_test_split_by_default():
    args = parser().parse_args([])
    assert args.split == "test" and args.dataset == "bench"
    assert parser().parse_args(["--split", "dev"]).split == "dev"


@needs_corpus
def test_bench_windows_of_a_split_are_that_split_only(tmp_path, monkeypatch):
    monkeypatch.setenv("AS2D_CACHE", str(tmp_path))
    test = bench_eval_windows("test", "bench_ci")
    dev = bench_eval_windows("dev", "bench_ci")
    assert test and dev and {w.split for w in test} == {"test"} and {w.split for w in dev} == {"dev"}
    assert not {w.window_id for w in test} & {w.window_id for w in dev}
    speakers = {s: {p.speaker for p in bc.plan() if p.window_id in {w.window_id for w in ws}}
                for s, ws in (("dev", dev), ("test", test))}
    assert not speakers["dev"] & speakers["test"]
    with pytest.raises(DataError, match="outside the dev split"):
        dev_only(dev + test[:1], "budget selection")


def test_selection_refuses_test_and_unlabelled_windows():
    dev = AudioWindow("d", ("d",), AUDIO, split="dev")
    assert list(dev_only([dev], "width caps")) == [dev]
    for bad in (AudioWindow("t", ("t",), AUDIO, split="test"), AudioWindow("x", ("x",), AUDIO)):
        with pytest.raises(DataError, match="selection sees dev windows only"):
            dev_only([dev, bad], "producer choice")
    # host calibration (per-width costs, kernel crossovers, width caps) refuses before any model loads
    with pytest.raises(DataError, match="host calibration"):
        calibrate_host([AudioWindow("t", ("t",), AUDIO, split="test")], {})
    # and so do the single clips whose As²d calls it also measures
    with pytest.raises(DataError, match="host calibration"):
        calibrate_host([dev], {}, clips=[AudioWindow("t", ("t",), AUDIO, split="test")])


def _frames(split: str) -> dict[str, pl.DataFrame]:
    runs = pl.DataFrame({"window_id": ["a", "b"], "split": [split, "dev"]})
    summary = pl.DataFrame({"method": ["target_only@1t", "as2d/x", "as2d_online/x"], "tps": [40.0, 70.0, 90.0],
                            "ratio_target_only": [1.0, 1.75, 2.25], "matched_share": [1.0, 1.0, 1.0]})
    return {"runs": runs, "summary": summary}


def test_the_as2d_choice_is_made_on_dev_only_and_read_back(tmp_path):
    with pytest.raises(DataError, match="outside the dev split"):
        choose_on_dev(_frames("test"))
    choice = choose_on_dev(_frames("dev"), machine="m")
    assert choice.method == "as2d_online/x" and choice.dev_windows == 2
    assert read_choice(write_choice(choice, tmp_path)) == choice
    assert read_choice(tmp_path / "none.json") is None


def test_goals_are_judged_on_the_dev_choice_not_the_fastest_test_variant():
    summary = pl.DataFrame({"method": ["target_only@1t", "sd", "as2d/a", "as2d_online/a"],
                            "tps": [40.0, 50.0, 70.0, 90.0], "ratio_target_only": [1.0, 1.25, 1.75, 2.25],
                            "ratio_serial": [0.8, 1.0, 1.4, 1.8], "ratio_hf": [None] * 4,
                            "slower_share": [0.0, 0.2, 0.1, 0.0], "matched_share": [1.0, 1.0, 1.0, 1.0]})
    lines = goal_lines(summary, "as2d/a")
    assert all("as2d/a:" in ln for ln in lines[:3])
    assert [ln[:4] for ln in lines] == ["FAIL", "FAIL", "FAIL", "PASS"]
    assert [ln[:4] for ln in goal_lines(summary, "as2d_online/a")] == ["PASS"] * 4
    assert "not judged" in goal_lines(summary, None)[0]


def test_the_results_table_names_machine_command_split_and_replaces_its_own_section(tmp_path):
    from workbench.io import write_section
    from workbench.native.bench_report import markdown

    summary = pl.DataFrame({"method": ["target_only@1t", "as2d/a"], "tps": [40.0, 70.0],
                            "ratio_target_only": [1.0, 1.75], "ratio_serial": [None, 1.2],
                            "slower_share": [0.0, 0.1], "matched_share": [1.0, 1.0], "acceptance": [None, 0.8],
                            "readiness": [None, 0.1], "T_over_bound": [None, 1.1]})
    text = markdown(summary, "python -m workbench.native.bench", "test", 35, 2, "as2d/a", ["PASS  x"])
    assert "test split" in text and "cores" in text and "`python -m workbench.native.bench`" in text
    assert "| as2d/a | 70.000 | 1.750 |" in text
    doc = tmp_path / "results.md"
    doc.write_text("# Results\n\nkept\n")
    write_section(doc, "native-bench-test", text)
    write_section(doc, "native-bench-test", text.replace("70.000", "71.000"))
    out = doc.read_text()
    assert out.startswith("# Results\n\nkept\n") and out.count("<!-- native-bench-test -->") == 1
    assert "71.000" in out and "70.000" not in out


@needs_corpus
def test_the_per_window_report_names_each_windows_speaker_and_perturbation(tmp_path, monkeypatch):
    from workbench.native.bench import with_window_facts

    monkeypatch.setenv("AS2D_CACHE", str(tmp_path))
    ids = [w.window_id for w in bench_eval_windows("test", "bench_ci")]
    report = with_window_facts(pl.DataFrame({"method": ["as2d/x"] * len(ids), "window_id": ids}), "bench_ci")
    assert report["speaker"].is_not_null().all() and set(report["perturbation"]) <= {"clean", "noise20db"}
    assert set(report["speaker"]) == {p.speaker for p in bc.plan() if p.window_id in ids}


@needs_corpus
def test_agreement_calibrates_on_dev_windows_and_clips_and_judges_the_test_split(tmp_path, monkeypatch):
    """D.3 on the bench corpus: the calibration window and the clips whose As²d calls it also prices are
    dev windows, never the same one twice; the judged windows are the test split."""
    from workbench.native.agreement import agreement_windows

    monkeypatch.setenv("AS2D_CACHE", str(tmp_path))
    calib, clips, evals = agreement_windows("test", "bench_ci", 1, 3, 2, {})
    assert len(calib) == 1 and 1 <= len(clips) <= 3 and len(evals) == 2
    assert {w.split for w in calib + clips} == {"dev"} and {w.split for w in evals} == {"test"}
    assert calib[0].window_id not in {w.window_id for w in clips}
    assert len({w.window_id for w in clips}) == len(clips)
    assert agreement_windows("test", "bench_ci", 1, 0, 1, {})[1] == []  # --clips 0: the calibration window alone


@needs_corpus
def test_agreement_on_dev_judges_only_dev_windows_the_calibration_left_out(tmp_path, monkeypatch):
    """``--split dev``: the same dev calibration, judged on the other dev windows; never the calibration
    window or a clip, never a test window."""
    from workbench.native.agreement import agreement_windows

    monkeypatch.setenv("AS2D_CACHE", str(tmp_path))
    calib, clips, evals = agreement_windows("dev", "bench_ci", 1, 0, None, {})
    same = agreement_windows("test", "bench_ci", 1, 0, 1, {})
    assert [w.window_id for w in calib + clips] == [w.window_id for w in same[0] + same[1]]
    assert evals and {w.split for w in evals} == {"dev"}
    assert not {w.window_id for w in calib} & {w.window_id for w in evals}
    calib, clips, evals = agreement_windows("dev", "bench_ci", 1, 1, None, {})  # a clip takes a dev window too
    assert clips and not {w.window_id for w in calib + clips} & {w.window_id for w in evals}


def test_cropped_windows_keep_their_split_and_name_their_cut():
    import numpy as np

    from workbench.native.agreement import cropped
    from workbench.native.windows import SAMPLE_RATE, AudioWindow

    long = AudioWindow("w1", ("w1",), np.ones(10 * SAMPLE_RATE, dtype=np.float32), split="dev")
    short = AudioWindow("w2", ("w2",), np.ones(SAMPLE_RATE, dtype=np.float32), split="dev")
    cut = cropped([long, short], 2.5)
    assert [w.window_id for w in cut] == ["w1[:2.5s]", "w2"] and cut[1] is short  # a shorter window stays whole
    assert len(cut[0].audio) == int(2.5 * SAMPLE_RATE) and cut[0].split == "dev" and cut[0].clip_ids == ("w1",)
    assert cropped([long], None) == [long]


@needs_corpus
def test_agreement_max_seconds_cuts_only_the_judged_windows(tmp_path, monkeypatch):
    """``--max-seconds``: the judged dev windows are cut; the calibration window keeps its whole audio."""
    from workbench.native.agreement import agreement_windows

    monkeypatch.setenv("AS2D_CACHE", str(tmp_path))
    whole = agreement_windows("dev", "bench_ci", 1, 0, None, {})
    calib, _, evals = agreement_windows("dev", "bench_ci", 1, 0, None, {}, max_seconds=1.0)
    assert [w.window_id for w in calib] == [w.window_id for w in whole[0]]
    assert [w.seconds for w in calib] == [w.seconds for w in whole[0]]
    assert evals and all(w.seconds <= 1.0 and w.split == "dev" for w in evals)
    assert all(w.window_id.endswith("[:1s]") for w in evals if len(w.audio) >= 16000)


@needs_corpus
def test_agreement_clip_seconds_cuts_the_calibration_clips_and_keeps_them_out_of_the_judged_windows(tmp_path,
                                                                                                  monkeypatch):
    """``--clip-seconds``: the clips the calibration measures are cut (the demo calibrates on short clips),
    the calibration window is not, and no judged window is a clip, cut or whole."""
    from workbench.native.agreement import agreement_windows

    monkeypatch.setenv("AS2D_CACHE", str(tmp_path))
    whole = agreement_windows("dev", "bench_ci", 1, 1, None, {})
    calib, clips, evals = agreement_windows("dev", "bench_ci", 1, 1, None, {}, clip_seconds=1.0)
    assert [w.seconds for w in calib] == [w.seconds for w in whole[0]]
    assert clips and all(w.seconds <= 1.0 and w.split == "dev" for w in clips)
    assert [w.window_id for w in evals] == [w.window_id for w in whole[2]]
    assert not {c.window_id.split("[:")[0] for c in clips} & {w.window_id for w in evals}

"""Duration-matched drift probes (paper D.3; ``workbench/native/probe_choice.py``): each held-out window is
probed on the dev window nearest it in duration, never on a test window, and its agreement row says which."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from workbench.errors import ConfigError, DataError
from workbench.native.agreement import agreement_frame
from workbench.native.probe_choice import ProbeChoice, ProbeRule
from workbench.native.windows import SAMPLE_RATE, AudioWindow

from .test_anchors import _setup
from .test_run_store import episodes


def _window(wid: str, seconds: float, split: str | None = "dev") -> AudioWindow:
    return AudioWindow(wid, (wid,), np.zeros(int(seconds * SAMPLE_RATE), dtype=np.float32), split=split)


ANCHOR = _window("calib00", 22.0)
CLIPS = [_window("clip-a", 1.5), _window("clip-b", 4.4), _window("clip-c", 8.0), _window("clip-d", 4.4)]


def test_matched_probes_take_the_dev_window_nearest_in_duration():
    choice = ProbeChoice.of(ANCHOR, CLIPS, "matched")
    picks = {s: choice.for_window(_window("held", s, "test")).window_id for s in (1.0, 3.0, 4.4, 7.0, 14.0, 30.0)}
    assert picks == {1.0: "clip-a", 3.0: "clip-b", 4.4: "clip-b", 7.0: "clip-c", 14.0: "clip-c", 30.0: "calib00"}
    # 4.4 s ties clip-b and clip-d: the earlier candidate takes it
    assert choice.anchor is ANCHOR


def test_the_anchor_rule_probes_every_window_on_the_anchor_alone():
    choice = ProbeChoice.of(ANCHOR, CLIPS, ProbeRule.ANCHOR)
    assert choice.windows == (ANCHOR,)
    assert {choice.for_window(_window("h", s, "test")).window_id for s in (1.0, 8.0, 22.0)} == {"calib00"}


def test_a_window_given_twice_is_one_candidate_and_the_anchor_stays_first():
    choice = ProbeChoice.of(ANCHOR, [CLIPS[0], ANCHOR, CLIPS[0]], "matched")
    assert [w.window_id for w in choice.windows] == ["calib00", "clip-a"]


@pytest.mark.parametrize("split", ["test", None])
def test_a_probe_window_outside_the_dev_split_is_refused(split):
    with pytest.raises(DataError, match="outside the dev split"):
        ProbeChoice.of(ANCHOR, [_window("held", 3.0, split)], "matched")
    with pytest.raises(ConfigError, match="unknown probe rule 'sometimes'"):
        ProbeChoice.of(ANCHOR, CLIPS, "sometimes")


def test_probes_on_another_dev_window_judge_alike_and_drop_only_the_calibrations_own_anchors():
    """The judged error prices the anchors on the probe runs themselves, so the same runs judge alike
    whichever dev window they ran on. The calibration measured its anchors (and As²d's own) on its anchor
    window only: probed elsewhere, those comparisons beside the verdict are left empty, not misread."""
    ep, inputs = episodes()
    _, _, profile, _ = _setup()
    on_anchor = agreement_frame(ep, inputs, profile)
    moved = dataclasses.replace(ep, probe_runs={
        k: tuple(dataclasses.replace(r, window_id="clip-b") for r in rs) for k, rs in ep.probe_runs.items()})
    elsewhere = agreement_frame(moved, inputs, profile)
    assert on_anchor["probe_window"].to_list() == ["calib00", "calib00"]
    assert elsewhere["probe_window"].to_list() == ["clip-b", "clip-b"]
    assert elsewhere["signed_error_pct"].to_list() == pytest.approx(on_anchor["signed_error_pct"].to_list())
    assert on_anchor["calibrated_anchor_signed_error_pct"].null_count() == 0
    assert elsewhere["calibrated_anchor_signed_error_pct"].null_count() == elsewhere.height
    assert elsewhere["as2d_anchor_signed_error_pct"].null_count() == elsewhere.height


def test_the_agreement_command_files_a_matched_probe_run_apart_from_the_defaults_section(tmp_path, monkeypatch):
    """``--markdown`` with ``--probe matched`` writes its own section, named so, and leaves the default
    rule's section of that split alone."""
    import workbench.native.agreement as agreement
    from workbench.native.agreement_report import provenance, summarize

    ep, inputs = episodes()
    _, _, profile, _ = _setup()
    frame = agreement_frame(ep, inputs, profile)
    summary = {**summarize(frame, profile), **provenance("python -m workbench.native.agreement ...")}
    monkeypatch.setattr(agreement, "agreement_windows", lambda *a: ([], [], []))
    monkeypatch.setattr(agreement, "replay_agreement", lambda *a, **k: (frame, summary))
    doc = tmp_path / "results.md"
    for probe in ("anchor", "matched"):
        agreement.main(["--split", "dev", "--probe", probe, "--markdown", str(doc)])
    text = doc.read_text()
    assert text.count("<!-- d3-agreement-dev -->") == 1 and text.count("<!-- d3-agreement-dev-matched -->") == 1
    matched = text[text.index("<!-- d3-agreement-dev-matched -->"):]
    assert "bench dev (probes duration-matched)" in matched
    assert "duration-matched" not in text[:text.index("<!-- d3-agreement-dev-matched -->")]
    # --max-seconds files the cut windows under their own section too, and a duration of 0 is one usage line
    agreement.main(["--split", "dev", "--max-seconds", "6", "--markdown", str(doc)])
    text = doc.read_text()
    assert text.count("<!-- d3-agreement-dev-6s -->") == 1 and text.count("<!-- d3-agreement-dev -->") == 1
    assert "bench dev (cut to their first 6 s)" in text[text.index("<!-- d3-agreement-dev-6s -->"):]
    with pytest.raises(SystemExit):
        agreement.main(["--split", "dev", "--max-seconds", "0"])

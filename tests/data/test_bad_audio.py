"""Bad files cost only themselves: one validation pass before any model work, then
``dataset.on_bad_audio`` -- ``error`` lists every bad file (rc 2, no run, no model loaded),
``skip`` runs without them and logs the list and the count."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import mlflow
import numpy as np
import pytest
import soundfile as sf

from tests.data import dataset_fixtures as fx
from workbench.data import screen
from workbench.data.datasets import librispeech
from workbench.errors import AudioError

ROOT = Path(__file__).resolve().parents[2]
ONE_WINDOW = ["dataset.window.mode=utterance", "dataset.cohort.splits.test=1", "dataset.cohort.splits.dev=1",
              "dataset.cohort.splits.validation=0", "dataset.cohort.splits.calibration=0"]
BAD = {  # utterance -> what is wrong with its file
    "121-121726-0001": "cannot be decoded",
    "121-121726-0002": "contains no samples",
    "121-121726-0003": "stereo at 8000 Hz",
    "121-121726-0004": "NaN or infinite",
}


def bad_layout(root: Path, speech: fx.Speech) -> Path:
    """The three-clip LibriSpeech fixture plus four bad files in chapter 121-121726. The transcript
    names ``.flac`` files; the empty and the NaN one exist only as ``.wav`` (float WAV holds NaN)."""
    base = fx.librispeech(root, speech)
    chapter = base / "test-clean" / "121" / "121726"
    (chapter / "121-121726-0001.flac").write_text("this is a text file, not audio\n")
    sf.write(str(chapter / "121-121726-0002.wav"), np.zeros(0, dtype=np.float32), 16000, subtype="FLOAT")
    stereo = np.stack([speech.audio[0][::2], speech.audio[0][::2]], axis=1)
    sf.write(str(chapter / "121-121726-0003.flac"), stereo, 8000, format="FLAC")
    nan = speech.audio[1].copy()
    nan[100:200] = np.nan
    sf.write(str(chapter / "121-121726-0004.wav"), nan, 16000, subtype="FLOAT")
    trans = chapter / "121-121726.trans.txt"
    trans.write_text(trans.read_text() + "".join(f"{u} SOME WORDS\n" for u in BAD))
    return base


def test_every_bad_file_is_found_in_one_pass_with_its_reason(tmp_path, speech):
    screen.forget()
    root = bad_layout(tmp_path / "data", speech)
    utts = librispeech.load(root, {"subset": "test-clean"})  # loading never stops at a bad file
    found = {b.utterance: b.reason for b in screen.bad_files(utts)}
    assert set(found) == set(BAD) and all(BAD[u] in found[u] for u in BAD), found
    assert {u.utt_id for u in screen.screen(utts, {"root": str(root), "on_bad_audio": "skip"})} == {
        "1089-134686-0000", "1089-134686-0001", "121-121726-0000"}


def test_the_error_names_the_first_twenty_and_counts_the_rest(tmp_path, speech):
    screen.forget()
    root = fx.librispeech(tmp_path / "data", speech)
    chapter = root / "test-clean" / "121" / "121726"
    names = [f"121-121726-{i:04d}" for i in range(1, 24)]
    for n in names:
        (chapter / f"{n}.flac").write_bytes(b"")
    trans = chapter / "121-121726.trans.txt"
    trans.write_text(trans.read_text() + "".join(f"{n} WORDS\n" for n in names) + "121-121726-0099 \n")
    (chapter / "121-121726-0099.flac").write_bytes((chapter / "121-121726-0000.flac").read_bytes())
    with pytest.raises(AudioError) as err:
        screen.screen(librispeech.load(root, {"subset": "test-clean"}), {"root": str(root), "on_bad_audio": "error"})
    line = err.value.line()
    assert "\n" not in line and line.startswith(f"dataset.root={root}: 24 of 27 files cannot be used: ")
    assert line.count("cannot be decoded") == 20 and "; and 4 more" in line  # 23 empty files + 1 without text
    assert "dataset.on_bad_audio=skip" in line


def _cli(tmp_path: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "workbench.run", *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=900)


def test_error_lists_the_bad_files_before_any_run_and_skip_runs_without_them(tmp_path, speech):
    root = bad_layout(tmp_path / "data", speech)
    db = tmp_path / "m.db"
    common = ["experiment=replay", "dataset=librispeech", f"dataset.root={root}", *ONE_WINDOW,
              f"tracking.uri=sqlite:///{db}"]
    res = _cli(tmp_path, *common, f"hydra.run.dir={tmp_path}/err")
    assert res.returncode == 2, res.stderr[-3000:]
    (line,) = [ln for ln in res.stderr.splitlines() if " error: " in ln]
    assert line.startswith(f"audio error: dataset.root={root}: 4 of 7 files cannot be used: ") and \
        "Traceback" not in res.stderr
    for utt in BAD:
        assert utt in line
    # the check ran while validating: no MLflow run exists, so no model was loaded
    assert not db.exists() or mlflow.set_tracking_uri(f"sqlite:///{db}") or \
        mlflow.search_runs(search_all_experiments=True, output_format="list") == []

    out = tmp_path / "skip"
    res = _cli(tmp_path, *common, "dataset.on_bad_audio=skip", f"hydra.run.dir={out}", f"out_dir={out}")
    assert res.returncode == 0, res.stderr[-3000:]
    assert "skipping 4 bad file(s) of 7" in res.stdout + res.stderr  # one line (Hydra logs to stdout)
    mlflow.set_tracking_uri(f"sqlite:///{db}")
    (run,) = mlflow.search_runs(search_all_experiments=True, output_format="list",
                                filter_string="tags.`as2d.role` = 'job'")
    assert run.info.status == "FINISHED" and run.data.metrics["dataset.skipped_files"] == 4.0
    listed = json.loads(Path(mlflow.MlflowClient().download_artifacts(run.info.run_id, "bad_audio.json",
                                                                     str(tmp_path))).read_text())
    assert sorted(b["utterance"] for b in listed) == sorted(BAD)

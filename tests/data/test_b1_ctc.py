"""B.1 with chunk (CTC) proposers end to end: PocketSphinx (offline) and a tiny ParakeetForCTC built from a
config propose on a LibriSpeech-layout fixture, the offline Whisper target checks them, and the
``b1_ctc_acceptance`` notebook draws the run."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import nbformat
import polars as pl
import pytest

from tests.data import dataset_fixtures as fx
from tests.notebook_exec import execute_notebook
from tests.test_qwen_pipeline import tiny_parakeet

ROOT = Path(__file__).resolve().parents[2]


def test_ctc_probe_job_and_notebook(tmp_path: Path, speech: fx.Speech, monkeypatch: pytest.MonkeyPatch) -> None:
    root = fx.librispeech(tmp_path / "data", speech)
    release = tiny_parakeet(tmp_path / "parakeet")
    db, out = tmp_path / "m.db", tmp_path / "out"
    uri = f"sqlite:///{db}"
    res = subprocess.run([sys.executable, "-m", "workbench.run", "experiment=ctc_probe", "dataset=librispeech",
                          f"dataset.root={root}", "dataset.window.mode=utterance", "dataset.cohort.splits.test=3",
                          "dataset.cohort.splits.dev=0", "dataset.cohort.splits.validation=0",
                          "dataset.cohort.splits.calibration=0", "probe.block_start=0.8", "probe.block_seconds=1.2",
                          "probe.max_blocks=2", "probe.proposers=[pocketsphinx_en,parakeet_ctc]",
                          f"probe.parakeet_ctc.local_path={release}", f"tracking.uri={uri}", f"out_dir={out}"],
                         cwd=ROOT, capture_output=True, text=True, timeout=900)
    assert res.returncode == 0, res.stderr[-3000:]
    frame = pl.read_parquet(out / "tables" / "ctc_probe.parquet")
    assert frame.height == 2 * 2 and set(frame["proposer"]) == {"pocketsphinx_en", "parakeet_ctc"}
    for r in frame.iter_rows(named=True):
        assert 0 <= r["accepted"] <= r["proposed"] <= 32
        assert r["acceptance"] == (r["accepted"] / r["proposed"] if r["proposed"] else None)
    assert pl.read_parquet(out / "tables" / "corpus_accounting.parquet")["requests"][-1] == 3
    assert frame.filter(pl.col("proposer") == "pocketsphinx_en")["proposed"].min() > 0  # it heard piper speech
    figs = tmp_path / "figs"
    for k, v in {"MLFLOW_TRACKING_URI": uri, "AS2D_FIGURES_DIR": str(figs), "PYTHONPATH": str(ROOT)}.items():
        monkeypatch.setenv(k, v)  # the kernel inherits the environment at launch
    nb = nbformat.read(ROOT / "notebooks" / "b1_ctc_acceptance.ipynb", as_version=4)
    execute_notebook(nb, ROOT / "notebooks", timeout=300)
    png = figs / "b1_ctc_acceptance.png"
    assert png.is_file() and png.stat().st_size > 5000

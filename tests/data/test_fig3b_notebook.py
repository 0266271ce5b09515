"""Fig. 3(b) end to end: a real ``context_probe`` run (offline Whisper pair, LibriSpeech-layout fixture)
into a sqlite store, then the ``fig3b_context`` notebook executed against it writes its chart."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import nbformat
import polars as pl
import pytest

from tests.data import dataset_fixtures as fx
from tests.notebook_exec import execute_notebook
from workbench.diagnostics.context_probe import summary
from workbench.figures.fig3b import fig3b_context

ROOT = Path(__file__).resolve().parents[2]


def test_fig3b_notebook_draws_a_real_context_probe_run(tmp_path: Path, speech: fx.Speech,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    root = fx.librispeech(tmp_path / "data", speech)
    db, out = tmp_path / "m.db", tmp_path / "out"
    uri = f"sqlite:///{db}"
    res = subprocess.run([sys.executable, "-m", "workbench.run", "experiment=context_probe", "dataset=librispeech",
                          f"dataset.root={root}", "dataset.window.mode=utterance", "dataset.cohort.splits.test=3",
                          "dataset.cohort.splits.dev=0", "dataset.cohort.splits.validation=0",
                          "dataset.cohort.splits.calibration=0", "probe.block_start=0.8", "probe.block_seconds=1.2",
                          "probe.max_blocks=3", f"tracking.uri={uri}", f"out_dir={out}"],
                         cwd=ROOT, capture_output=True, text=True, timeout=900)
    assert res.returncode == 0, res.stderr[-3000:]
    probe = pl.read_parquet(out / "tables" / "context_probe.parquet")
    result = fig3b_context("as2d-context_probe", uri=uri)
    pooled = result.tables["paper (phones) vs this run: pooled over every block"]
    run_values = dict(zip(pooled["quantity"], pooled["this run"], strict=True))
    assert run_values == pytest.approx(summary(probe, 0.05))  # the chart's numbers are the run's blocks, pooled
    figs = tmp_path / "figs"
    for k, v in {"MLFLOW_TRACKING_URI": uri, "AS2D_FIGURES_DIR": str(figs), "PYTHONPATH": str(ROOT)}.items():
        monkeypatch.setenv(k, v)  # the kernel inherits the environment at launch
    nb = nbformat.read(ROOT / "notebooks" / "fig3b_context.ipynb", as_version=4)
    execute_notebook(nb, ROOT / "notebooks", timeout=300)
    png = figs / "fig3b_context_difference.png"
    assert png.is_file() and png.stat().st_size > 5000

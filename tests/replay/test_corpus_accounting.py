"""Corpus accounting (D.1.2): requests vs distinct audio by hash, hours, output and useful tokens."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import polars as pl

from workbench.jobs.corpus_accounting import _row
from workbench.replay.synthetic import SyntheticSpec, synthetic_windows

ROOT = Path(__file__).resolve().parents[2]


def test_two_questions_on_one_passage_are_two_requests_and_one_audio() -> None:
    ws = synthetic_windows(SyntheticSpec(n_windows=3, seed=4))
    audio = {ws[0].window_id: ("aa", 30.0), ws[1].window_id: ("aa", 30.0), ws[2].window_id: ("bb", 6.0)}
    row = _row("spoken_squad", ws, audio)
    assert row["requests"] == 3 and row["distinct_audio"] == 2
    assert row["audio_hours"] == (30.0 + 6.0) / 3600 and (row["min_seconds"], row["max_seconds"]) == (6.0, 30.0)
    assert row["tokens"] == sum(w.n_tokens for w in ws)
    assert row["useful_tokens"] == sum(w.n_tokens for w in ws) - 2 * 3  # each ends with EOS: minus EOS and first


def test_every_dataset_job_reports_its_corpus(tmp_path: Path) -> None:
    out = tmp_path / "out"
    res = subprocess.run([sys.executable, "-m", "workbench.run", "experiment=oracle", "dataset.n_windows=6",
                          "budgets=[3,7]", f"tracking.uri=sqlite:///{tmp_path}/m.db", f"out_dir={out}"],
                         cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert res.returncode == 0, res.stderr[-2000:]
    table = pl.read_parquet(out / "tables" / "corpus_accounting.parquet")
    m = json.loads((out / "metrics.json").read_text())
    total = table.filter(pl.col("dataset") == "all").row(0, named=True)
    assert total["requests"] == 6 == m["corpus.requests"] and m["corpus.tokens"] == total["tokens"]
    assert table.filter(pl.col("dataset") != "all")["requests"].sum() == 6
    assert total["distinct_audio"] is None and "corpus.audio_hours" not in m  # synthetic: no audio to count

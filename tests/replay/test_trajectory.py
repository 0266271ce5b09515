"""Trajectories: parquet round trip, validation errors that name file and field, synthetic knobs."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import polars as pl
import pytest

from workbench.replay.engine import ReplayConfig, replay
from workbench.replay.profile import load_profile
from workbench.replay.synthetic import SourceSpec, SyntheticSpec, paper_like_sources, synthetic_windows
from workbench.replay.trajectory import TrajectoryError, load_windows, save_windows


def test_parquet_round_trip_replays_identically(tmp_path: Path) -> None:
    ws = synthetic_windows(SyntheticSpec(n_windows=3, sources=paper_like_sources()))
    save_windows(ws, tmp_path)
    back = load_windows(tmp_path)
    prof = load_profile("k70_pro")
    for a, b in zip(ws, back, strict=True):
        assert a.reference == b.reference and a.sources == b.sources
        assert a.drafts[5] == b.drafts[5]
        for cfg in (ReplayConfig("asp"), ReplayConfig("as2d", source="qwen", budget=7)):
            assert replay(a, cfg, prof).time == replay(b, cfg, prof).time


def test_token_count_disagreeing_with_reference_is_rejected(tmp_path: Path) -> None:
    ws = synthetic_windows(SyntheticSpec(n_windows=2))
    save_windows(ws, tmp_path)
    f = tmp_path / "windows.parquet"
    df = pl.read_parquet(f)
    df.with_columns(pl.when(pl.col("window_id") == ws[1].window_id).then(pl.col("n_tokens") + 1)
                    .otherwise(pl.col("n_tokens")).alias("n_tokens")).write_parquet(f)
    with pytest.raises(TrajectoryError, match=r"windows\.parquet: window 'syn-0-00001': field 'n_tokens'"):
        load_windows(tmp_path)


def test_source_ops_must_cover_stream(tmp_path: Path) -> None:
    ws = synthetic_windows(SyntheticSpec(n_windows=1))
    save_windows(ws, tmp_path)
    f = tmp_path / "sources.parquet"
    pl.read_parquet(f).with_columns(pl.col("op_tokens").list.slice(1)).write_parquet(f)
    with pytest.raises(TrajectoryError, match=r"sources\.parquet|sources\.qwen\.op_tokens"):
        load_windows(tmp_path)


def test_synthetic_windows_are_labelled_and_deterministic() -> None:
    spec = SyntheticSpec(n_windows=4, sources=paper_like_sources(), seed=7)
    a, b = synthetic_windows(spec), synthetic_windows(spec)
    assert all(w.synthetic and w.window_id.startswith("syn-") for w in a)
    assert [w.reference for w in a] == [w.reference for w in b]
    assert all(w.reference[-1] == spec.eos_id for w in a)


def _agreement(acc: float, hard_enter: float = 0.0) -> float:
    spec = SyntheticSpec(n_windows=20, sources=(SourceSpec("qwen", acceptance=acc, p_insert=0, p_delete=0),),
                         hard_enter=hard_enter, seed=1)
    same = total = 0
    for w in synthetic_windows(spec):
        s = w.sources["qwen"].tokens
        same += sum(x == y for x, y in zip(s, w.reference, strict=True))
        total += len(s)
    return same / total


def test_acceptance_knob_controls_agreement() -> None:
    hi, lo = _agreement(0.95), _agreement(0.6)
    assert hi == pytest.approx(0.95, abs=0.02) and lo == pytest.approx(0.6, abs=0.03)
    assert _agreement(0.95, hard_enter=0.1) < hi - 0.1  # burstiness lowers agreement


def test_length_knob() -> None:
    ws = synthetic_windows(SyntheticSpec(n_windows=1000, mean_tokens=137, sd_tokens=40))
    assert np.mean([w.n_tokens for w in ws]) == pytest.approx(137, rel=0.03)

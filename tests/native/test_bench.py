"""The native benchmark end to end on tiny real Whisper models: 1 window x 1 repeat."""

from __future__ import annotations

from tests.native.test_calibrate import host_cfg, windows  # noqa: F401  (fixtures)
from tests.native.test_native import audio, producer_dir, tiny_dir  # noqa: F401  (fixtures)
from workbench.decoding import ROUND_COLUMNS
from workbench.native.bench import SUMMARY_COLUMNS, default_methods, run_bench

RUN_COLUMNS = {"window_id", "method", "rep", "tokens", "time", "tps", "matched", "capped", "rounds", "threads", "fault"}


def test_bench_runs_every_method_and_documents_its_frames(host_cfg, windows, tmp_path):  # noqa: F811
    methods = default_methods(host_cfg, None)
    names = [m.name for m in methods]
    assert {"target_only@1t", "target_only@2t", "sd", "asp", "as2d/tiny-producer"} <= set(names)
    assert any(n.startswith("hf_assisted/") for n in names)
    frames = run_bench(windows[:1], methods, repeats=1, warmup=0, out_dir=tmp_path, progress=False)
    runs = frames["runs"]
    assert set(runs.columns) == RUN_COLUMNS and runs.height == len(methods)
    assert runs["matched"].all()  # every method reproduces target-only's output exactly
    assert set(ROUND_COLUMNS) <= set(frames["rounds"].columns)
    assert {"resource", "stage", "start", "end", "T"} <= set(frames["stages"].columns)
    summary = frames["summary"]
    assert tuple(summary.columns) == SUMMARY_COLUMNS and summary.height == len(methods)
    assert (tmp_path / "bench_summary.parquet").exists()

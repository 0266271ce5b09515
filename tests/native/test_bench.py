"""The native benchmark end to end on tiny real Whisper models: 1 window x 1 repeat."""

from __future__ import annotations

from tests.native.test_calibrate import host_cfg, windows  # noqa: F401  (fixtures)
from tests.native.test_native import audio, producer_dir, tiny_dir  # noqa: F401  (fixtures)
from workbench.decoding import ROUND_COLUMNS
from workbench.native.bench import SUMMARY_COLUMNS, default_methods, run_bench
from workbench.native.driver import Fallback
from workbench.native.producer import ALLOWED_CPUS
from workbench.replay.profile import load_profile

RUN_COLUMNS = {"window_id", "split", "method", "rep", "tokens", "time", "tps", "matched", "capped", "rounds", "threads",
               "fault", "fell_back_at"}


def test_bench_runs_every_method_and_documents_its_frames(host_cfg, windows, tmp_path):  # noqa: F811
    profile = load_profile("host")  # any profile gives as2d_online per-width costs; the CLI uses this machine's
    methods = default_methods(host_cfg, None, profile, batches=[1, 8, 1], fallbacks=[Fallback(12, 0.2)], guess=True)
    names = [m.name for m in methods]
    assert {"target_only@1t", "target_only@2t", "sd", "lookahead", "asp", "as2d/tiny-producer",
            "as2d_online/tiny-producer", "as2d/tiny-producer@batch1", "as2d/tiny-producer@batch8"} <= set(names)
    assert len(names) == len(set(names))  # a repeated size is one method
    if len(ALLOWED_CPUS) > 1:  # the producer's core can join: +cores, and +cores with the fallback rule
        rule = next(m for m in methods if m.name == "as2d_online/tiny-producer+cores+fallback:12:0.2")
        assert rule.setup.fallback == Fallback(12, 0.2) and rule.setup.widen is not None
    online = next(m for m in methods if m.scheme == "as2d_online")
    guess = next(m for m in methods if m.name == "as2d_online/tiny-producer+guess")  # online budget + guess
    assert guess.scheme == "as2d_adaptive" and guess.setup.costs is online.setup.costs
    assert guess.setup.params("as2d_adaptive")["budget"] == online.setup.params("as2d_online")["budget"]
    assert not guess.setup.uses_drafter("as2d_adaptive") and online.setup.uses_drafter("sd")  # no per-window drafter
    overhead = profile.alignment_ms + profile.queue_ms
    assert online.setup.costs.running[4] == profile.verify_ms(4, True) + overhead  # the one builder, digit for digit
    assert online.setup.costs.idle[4] == profile.verify_ms(4, False) + overhead
    assert next(m for m in methods if m.name.endswith("@batch1")).setup.batch_tokens == 1
    assert next(m for m in methods if m.name.endswith("@batch8")).setup.batch_tokens == 8
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
    win = frames["windows"]  # the per-window report: every speculative method on every window
    assert set(win["method"]) == set(frames["rounds"]["config"]) and win["ratio"].is_not_null().all()
    assert {"acceptance", "coverage", "readiness", "T_over_bound", "no_match", "reason", "fell_back_at"} \
        <= set(win.columns)

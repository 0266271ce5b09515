"""The D.3 decomposition on a phone's records: a native run written as protocol lines (as the Python
runner's torch engine writes them), read back through the validating reader, decomposes as the host's
``NativeResult`` does (workbench.jobs.phone_decomposition)."""

from __future__ import annotations

import json
import math
from dataclasses import replace
from types import SimpleNamespace
from typing import Any

import pytest

from phone_runner.native_engine import emit_trajectory
from phone_runner.records import frames, read_lines
from tests.native.test_decomposition import EOS, REFERENCE, SETTINGS, VOCAB, native_like_run, profile_for
from workbench.jobs.phone_decomposition import decomposition_rows, median_time_repetition, phone_native_run
from workbench.native.decomposition import TERMS, decompose, native_window
from workbench.replay.result import ReplayConfig

HEADER = {"v": 1, "type": "header", "run_id": "x", "runner": {}, "mode": "run", "engine": {"kind": "torch"},
          "scheme": {"name": "as2d"}, "device": {}, "started_unix": 0.0}


def _lines(run: Any, reps: dict[int, float]) -> list[str]:
    """Protocol lines for ``run`` repeated with the given decode times (repetition -> time)."""
    out: list[str] = [json.dumps(HEADER)]
    req = SimpleNamespace(config="as2d", scheme={"name": "as2d", "source": "producer"})

    def emit(kind: str, **fields: Any) -> None:
        out.append(json.dumps({"v": 1, "type": kind, **fields}))

    for rep, time in reps.items():
        common = {"window_id": run.window_id, "repetition": rep}
        emit_trajectory(emit, common, req, run)
        emit("window", **common, config="as2d", scheme="as2d", tokens=len(run.output), time=time, t_eos=run.t_eos,
             cleanup=0.0, rounds=len(run.records), output=list(run.output))
    return out


def test_a_phone_window_comes_back_as_the_native_run_and_decomposes_alike() -> None:
    run = replace(native_like_run(), producer_finish=math.nan)  # the phone's lines do not say when it stopped
    fr = frames(read_lines(_lines(run, {0: run.time + 0.002, 1: run.time, 2: run.time + 0.05}), "phone.jsonl"))
    assert median_time_repetition(fr, "w") == 0  # times sorted: rep 1, rep 0, rep 2
    back = phone_native_run(fr, "w", 1)
    assert back.records == run.records and back.output == run.output
    assert (back.time, back.t_eos) == (run.time, run.t_eos)
    assert back.producer_tokens == run.producer_tokens and back.producer_times == run.producer_times

    profile, source = profile_for(run, growth=False)  # a constant-cost producer: the curve carries an error
    window = native_window(run, REFERENCE, source=source, eos_id=EOS, vocab_size=VOCAB, max_output=200)
    rc = ReplayConfig("as2d", source=source, **SETTINGS)
    want = decompose(window, replace(run, time=run.time + 0.002), profile, source, rc.settings)
    assert abs(want["publication"]) > 0.5
    (row,) = decomposition_rows(fr, {"w": window}, ["w"], rc, {"w": profile})
    assert row["config"] == rc.label and row["signed_error_pct"] == pytest.approx(want["signed_error_pct"])
    assert {t: row[f"d_{t}"] for t in TERMS} == pytest.approx({t: want[t] for t in TERMS})
    assert sum(row[f"d_{t}"] for t in TERMS) == pytest.approx(row["signed_error_pct"], abs=1e-6)

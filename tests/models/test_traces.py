"""Trace collection on tiny Whisper: schema round trip, resumability, content checks."""

from __future__ import annotations

import polars as pl
import pytest

from tests.models.conftest import tiny_audio, tiny_whisper
from workbench.models.whisper import WhisperTarget, whisper_drafter, whisper_producer
from workbench.traces.collect import WindowJob, collect
from workbench.traces.schema import SCHEMA_VERSION, TraceSchemaError, read_window, validate_frame


def _jobs(n: int) -> list[WindowJob]:
    tgt, dr = tiny_whisper(seed=0), tiny_whisper(seed=5)
    jobs = []
    for i in range(n):
        a = tiny_audio(seed=i)
        jobs.append(WindowJob(
            window_id=f"w{i}",
            target=lambda a=a: WhisperTarget(tgt, audio=a),
            producers={"tiny": lambda a=a: whisper_producer(dr, audio=a, max_new_tokens=10)},
            drafter=lambda a=a: whisper_drafter(dr, audio=a),
            ranks=lambda ref, a=a: whisper_drafter(dr, audio=a).reference_ranks(ref),
        ))
    return jobs


def test_collect_writes_validated_windows_and_resumes(tmp_path):
    assert collect(_jobs(2), tmp_path, cap=8, asp_cap=3) == ["w0", "w1"]
    df, meta = read_window(tmp_path, "w0")
    assert meta["schema_version"] == SCHEMA_VERSION and meta["torch_threads"] >= 1
    ref = df.filter(pl.col("kind") == "reference").sort("position")["token"].to_list()
    assert 1 <= len(ref) <= 8
    prod = df.filter(pl.col("kind") == "producer").sort("position")
    assert prod["batch"].to_list() == [i // 8 for i in range(prod.height)]
    assert prod["t_generated"].is_sorted() and prod["forwards"].to_list() == list(range(1, prod.height + 1))
    ranks = df.filter(pl.col("kind") == "rank")
    assert ranks.height == len(ref) - 1 and set(ranks["rank"].to_list()) <= {1, 2, 3}
    asp = df.filter(pl.col("kind") == "asp")
    assert asp["prefix_len"].min() == 1 and asp["confidence"].is_between(0, 1).all()
    # resumable: finished windows are not redone, an added window is
    assert collect(_jobs(3), tmp_path, cap=8, asp_cap=3) == ["w2"]
    assert not list(tmp_path.glob(".*"))  # no temp files left behind


def test_wrong_schema_is_rejected():
    with pytest.raises(TraceSchemaError):
        validate_frame(pl.DataFrame({"token": [1, 2]}))

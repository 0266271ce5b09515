"""The phone's drift probe brackets each configuration (workbench.jobs.phone_probe)."""

from __future__ import annotations

import dataclasses
import math
from pathlib import Path
from typing import Any

import polars as pl
import pytest

from workbench.jobs.phone_probe import (
    DriftProbe,
    anchor_copy,
    bracketed,
    interleaved,
    own_anchor_ratios,
    without_anchors,
)
from workbench.replay.result import ReplayConfig


class _Schedule:
    """Records what runs when; the target's ratio is the probe's ordinal plus one."""

    def __init__(self) -> None:
        self.events: list[str] = []

    def target(self, out: Path) -> float:
        self.events.append(f"target:{out.name}")
        return float(sum(e.startswith("target") for e in self.events))

    def producer(self, as2d: Any, out: Path) -> float:
        self.events.append(f"producer:{out.parent.name}")
        return 0.9


def test_each_configuration_runs_between_two_target_probes_shared_with_its_neighbours(tmp_path: Path) -> None:
    probes = _Schedule()
    configs = [ReplayConfig("target_only"), ReplayConfig("as2d", source="producer"), ReplayConfig("target_only")]

    def run(rc: ReplayConfig) -> str:
        probes.events.append(f"run:{rc.scheme}")
        return rc.scheme

    got = list(bracketed(probes, configs, ReplayConfig("as2d", source="producer"), tmp_path, run))  # type: ignore[arg-type]
    assert probes.events == ["target:0", "run:target_only", "target:1", "producer:1", "run:as2d", "target:2",
                             "run:target_only", "target:3"]
    assert [(res, p.before, p.after, p.producer_ratio) for _, res, p in got] == [
        ("target_only", 1.0, 2.0, None), ("as2d", 2.0, 3.0, 0.9), ("target_only", 3.0, 4.0, None)]
    assert got[1][2].ratio == pytest.approx(math.sqrt(6.0))  # the bracket's geometric mean


def test_without_a_prober_the_configurations_run_alone(tmp_path: Path) -> None:
    got = list(bracketed(None, [ReplayConfig("target_only")], None, tmp_path, lambda rc: rc.scheme))
    assert got == [(ReplayConfig("target_only"), "target_only", None)]


def test_a_probe_without_an_after_is_its_before() -> None:
    assert DriftProbe(1.2, None, None).ratio == 1.2 and DriftProbe(1.0, 1.21, None).ratio == pytest.approx(1.1)


def test_the_anchor_rides_before_between_and_after_the_windows() -> None:
    anchor = {"window_id": "calib00", "audio": "a.npy"}
    got = interleaved(anchor, [{"window_id": "e0"}, {"window_id": "e1"}])
    assert [e["window_id"] for e in got] == ["calib00@0", "e0", "calib00@1", "e1", "calib00@2"]
    assert all(e["audio"] == "a.npy" for e in got if e["window_id"].startswith("calib00@"))
    assert [e["window_id"] for e in interleaved(anchor, [])] == ["calib00@0"]


def test_a_window_is_anchored_by_the_copies_around_it() -> None:
    """Each copy's ratio is its native median over its replay; a window takes the geometric mean of the
    copies right before and after it, and the copies leave the frames."""
    from workbench.replay.engine import replay
    from workbench.replay.profile import load_profile
    from workbench.replay.trajectory import Window

    profile = dataclasses.replace(load_profile("host"), anchor_window="calib00")
    rc = ReplayConfig("target_only")
    windows = {anchor_copy("calib00", i): Window(anchor_copy("calib00", i), "phone", (5, 6, 7, 0), 0, 100, 8, None,
                                                 {}).validate() for i in range(3)}
    base = replay(windows["calib00@0"], rc, profile).time
    speeds = [1.0, 1.21, 0.81]  # each copy's native time over its replay
    rows = [{"window_id": f"calib00@{i}", "repetition": r, "time": base * s} for i, s in enumerate(speeds)
            for r in range(3)] + [{"window_id": e, "repetition": 0, "time": 1.0} for e in ("e0", "e1")]
    fr = {"windows": pl.DataFrame(rows)}
    ratios, copies = own_anchor_ratios(fr, windows, ["e0", "e1"], rc, profile)
    assert copies == pytest.approx(speeds)
    assert ratios == pytest.approx({"e0": 1.1, "e1": math.sqrt(1.21 * 0.81)})
    assert without_anchors(fr, "calib00")["windows"]["window_id"].to_list() == ["e0", "e1"]

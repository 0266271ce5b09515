"""The phone's drift probe brackets each configuration (workbench.jobs.phone_probe)."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pytest

from workbench.jobs.phone_probe import DriftProbe, bracketed
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

"""The C++ runner driven by phone_runner on the loopback phone (real adb server, fake adbd).

The host deploys the host build of ``as2d_runner`` like a phone binary, launches it through adb
``shell:`` with an argv list, streams and validates its JSONL, pulls the output file, and audits
the rounds (exactness, readiness of every buffered candidate, priced widths, round order) exactly
like replay. Virtual clock: the records equal the Python replay's. Real clock: the producer thread
and the drain run for real (times are not asserted here; ``python -m
phone_runner.runner.agreement`` reports the real-clock TPS agreement).
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import adbutils
import pytest

from phone_runner.runner import runner_binary
from phone_runner.session import PhoneConfig, build_request, run_config
from phone_runner.testing.loopback import LoopbackDevice
from workbench.replay.engine import ReplayConfig, replay
from workbench.replay.profile import load_profile
from workbench.replay.synthetic import SyntheticSpec, paper_like_sources, synthetic_windows

SPEC = SyntheticSpec(n_windows=2, mean_tokens=20, sd_tokens=3, min_tokens=12, seed=11, sources=paper_like_sources())


def _config(tmp: Path, clock: str) -> PhoneConfig:
    return PhoneConfig(runner="cpp", runner_binary=str(runner_binary()), state_dir=str(tmp / "state"),
                       engine={"kind": "reference", "clock": clock, "drain": "boundary"})


def _run(dev: adbutils.AdbDevice, tmp: Path, cfg: ReplayConfig, clock: str, profile: Any, windows: list[Any]):
    pc = _config(tmp, clock)
    pc.deploy_runner(dev, progress=False)
    req = build_request(f"lb-{clock}-{cfg.scheme}", cfg, windows, profile, pc)
    return run_config(dev, pc, req, {w.window_id: w for w in windows}, profile, tmp / "out", rest=False)


@pytest.mark.parametrize("cfg", [ReplayConfig("as2d", source="qwen", budget=7), ReplayConfig("asp")],
                         ids=lambda c: c.label)
def test_virtual_clock_on_the_loopback_phone_equals_python_replay(adb_server: int, loopback: LoopbackDevice,
                                                                  tmp_path: Path, cfg: ReplayConfig) -> None:
    dev = adbutils.AdbClient(port=adb_server).device(loopback.serial)
    windows, profile = synthetic_windows(SPEC), load_profile("k70_pro")
    done = _run(dev, tmp_path, cfg, "virtual", profile, windows)  # run_config audits every window
    assert done.run.header["runner"]["name"] == "as2d_runner"
    assert (loopback.root / "data/local/tmp/as2d/bin/as2d_runner").is_file()
    by_window = {w["window_id"]: w for w in done.run.of("window")}
    for w in windows:
        py = replay(w, cfg, profile)
        assert by_window[w.window_id]["tokens"] == py.tokens
        assert math.isclose(by_window[w.window_id]["time"], py.time, abs_tol=1e-9)
        ours = [r for r in done.run.of("round") if r["window_id"] == w.window_id]
        assert [(r["width"], r["accepted"]) for r in ours] == [(r.width, r.accepted) for r in py.untimed]


def test_real_clock_on_the_loopback_phone_passes_the_audits(adb_server: int, loopback: LoopbackDevice,
                                                            tmp_path: Path) -> None:
    dev = adbutils.AdbClient(port=adb_server).device(loopback.serial)
    windows = synthetic_windows(SPEC)[:1]
    cfg = ReplayConfig("as2d", source="qwen", budget=7)
    done = _run(dev, tmp_path, cfg, "real", load_profile("k70_pro"), windows)  # audited: exact and causal
    win = done.run.of("window")[0]
    assert win["tokens"] == len(windows[0].reference) and win["time"] >= win["t_eos"] > 0
    pubs = done.run.of("publication")
    assert pubs and all(p["source_id"] == "qwen" for p in pubs)
    assert {s["stage"] for s in done.run.of("stage")} >= {"verify", "align", "produce"}
    assert done.frames["windows"].height == 1

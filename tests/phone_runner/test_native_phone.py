"""The Python on-device runner with the real offline Whisper weights (base target, tiny.en producer
in its own process) on one short clip of the demo corpus, through the loopback phone."""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest

from phone_runner.testing.loopback import LoopbackDevice
from workbench.run import execute

from .test_phone_jobs import job_cfg


@pytest.mark.slow
def test_real_whisper_on_the_loopback_phone_is_exact(loopback: LoopbackDevice, tmp_path: Path) -> None:
    # exactness, not agreement: the replay's device stays job_cfg's phone profile, since the host profile
    # would cost a first-use calibration of this machine (minutes) that no assert here reads
    res = execute(job_cfg(tmp_path, "native_phone", "phone.engine.kind=torch", "phone.max_windows=1",
                          "phone.max_seconds=6", "methods=[target_only,as2d]", "phone.idle_timeout_s=900"))
    w = res.tables["windows"]
    out = {c: w.filter(pl.col("config") == c)["output"].to_list() for c in w["config"].unique().to_list()}
    (as2d,) = [c for c in out if c.startswith("as2d/")]
    assert out[as2d] == out["target_only"] and len(out["target_only"][0]) > 5  # token for token
    assert res.tables["publications"].height > 0  # the producer published on the phone
    assert res.metrics[f"phone.{as2d}.acceptance"] > 0
    assert res.metrics["exactness_mismatches"] == 0
    assert (tmp_path / "out/phone/inputs").is_dir()  # the clip was pushed as .npy, sha256-checked

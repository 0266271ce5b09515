"""Host calibration on tiny real Whisper models: a profile replay accepts, with every width."""

from __future__ import annotations

import polars as pl
import pytest

from tests.native.test_native import audio, producer_dir, tiny_dir  # noqa: F401  (fixtures)
from workbench.native.calibrate import calibrate_host
from workbench.native.episodes import SAMPLE_SCHEMA
from workbench.native.fingerprint import machine_fingerprint
from workbench.native.windows import AudioWindow
from workbench.replay.profile import load_profile


@pytest.fixture(scope="module")
def host_cfg(tiny_dir, producer_dir):  # noqa: F811
    """A conf/model-shaped mapping for the tiny pair (producer = serial drafter weights)."""
    def spec(name, path):
        return {"name": name, "family": "whisper", "local_path": str(path), "vocabulary": "shared",
                "batch_tokens": 4}
    return {"target": spec("tiny-target", tiny_dir), "drafter": spec("tiny-producer", producer_dir),
            "serial_drafter": spec("tiny-serial", producer_dir), "budget": 3, "max_new_tokens": 120}


@pytest.fixture(scope="module")
def windows(audio):  # noqa: F811
    return [AudioWindow("calib", ("a",), audio), AudioWindow("eval", ("b",), audio[::-1].copy())]


def test_calibration_writes_a_profile_replay_accepts_with_all_widths(host_cfg, windows, tmp_path):
    profile, raw = calibrate_host(windows[:1], host_cfg, reps=1, widths=range(1, 17), out_dir=tmp_path,
                                  warmup=0, progress=False)
    loaded = load_profile(tmp_path / "host.yaml")
    assert loaded.verifier.widths() == tuple(range(1, 17))
    assert all(loaded.verify_ms(k, concurrent=True) > 0 for k in range(1, 17))
    assert loaded.serial_drafter == "tiny-serial" and {"tiny-producer", "tiny-serial"} <= set(loaded.sources)
    assert all("measured on host" in v or "derived" in v or "fitted" in v for v in loaded.provenance.values())
    assert loaded.target_step_ms == profile.target_step_ms > 0
    assert tuple(raw.columns) == tuple(SAMPLE_SCHEMA)
    assert set(raw["kind"]) >= {"verify", "producer_pass", "episode", "publication"}
    assert pl.read_parquet(tmp_path / "host_samples.parquet").height == raw.height
    assert (tmp_path / "host_rounds.parquet").exists()
    # The profile names the machine that measured it, and carries the context fit and per-width sd.
    assert dict(loaded.machine) == machine_fingerprint("torch")
    fit = loaded.verifier.context
    assert fit is not None and set(fit.slope_ms) == set(range(1, 17)) and fit.residual_ms >= 0 and fit.cold_ms >= 0
    assert set(loaded.verifier.idle_sd_ms) == set(range(1, 17))

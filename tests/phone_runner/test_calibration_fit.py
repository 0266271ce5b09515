"""calibrate_phone's fit: a real engine's producer service beside the verify sweep over its idle service
is the source's measured concurrent_factor (D.2.1); without those lines the base profile's stays, marked."""

from __future__ import annotations

import polars as pl
from omegaconf import OmegaConf

from phone_runner.calibration import fit_profile
from workbench.replay.profile import load_profile, parse_profile


def _measures(beside: bool) -> pl.DataFrame:
    rows = [{"op": "verify", "width": k, "offset": 0, "concurrent": c, "source": None, "repetition": r,
             "ms": 10.0 * k * (1.5 if c else 1.0) + r} for k in (1, 2, 3, 4) for c in (False, True) for r in range(3)]
    for c in (False, True) if beside else (False,):
        rows += [{"op": "producer_forward", "width": None, "offset": None, "concurrent": c, "source": "whisper-tiny.en",
                  "repetition": r, "ms": (9.0 if c else 6.0) + 0.1 * r} for r in range(3)]
    return pl.DataFrame(rows, schema_overrides={"width": pl.Int64, "offset": pl.Int64, "source": pl.Utf8})


def _fit(beside: bool) -> dict:
    base = load_profile("host")
    base_raw = OmegaConf.to_container(OmegaConf.load(base.file), resolve=True)
    return fit_profile(_measures(beside), base, base_raw, name="t", model="Phone", serial_hash="abc", engine="torch")


def test_the_producer_beside_the_sweep_gives_a_measured_concurrent_factor() -> None:
    src = _fit(beside=True)["sources"]["whisper-tiny.en"]
    assert abs(src["concurrent_factor"]["v"] - 9.1 / 6.1) < 1e-3 and "derived" not in src["concurrent_factor"]
    assert "beside the verify sweep" in src["concurrent_factor"]["source"] and src["forward_ms"]["v"] == 6.1
    parse_profile(_fit(beside=True), file="fitted")  # a valid profile


def test_without_those_lines_the_base_factor_stays_marked_derived() -> None:
    src = _fit(beside=False)["sources"]["whisper-tiny.en"]
    assert src["concurrent_factor"]["derived"] == "R_BASE" and src["forward_ms"]["v"] == 6.1

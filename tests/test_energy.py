"""Energy integration (Table 15): trapezoid rule on fixed series, computed by hand."""

from __future__ import annotations

import math

import polars as pl
import pytest

from workbench.energy import UNAVAILABLE, host_meter, request_energy, trapezoid_energy

# P = |I| V = 4, 8, 10, 4 W at t = 0, 1, 3, 4 s (a discharging gauge may report I < 0)
T, AMPS, V = [0.0, 1.0, 3.0, 4.0], [1.0, 2.0, 2.0, -1.0], [4.0, 4.0, 5.0, 4.0]


def test_trapezoid_matches_hand_computation() -> None:
    # 1*(4+8)/2 + 2*(8+10)/2 + 1*(10+4)/2 = 6 + 18 + 7
    assert trapezoid_energy(T, AMPS, V) == pytest.approx(31.0, abs=1e-12)


def test_interval_ends_are_interpolated() -> None:
    # P(0.5) = 6, P(3.5) = 7: 0.5*(6+8)/2 + 18 + 0.5*(10+7)/2 = 3.5 + 18 + 4.25
    assert trapezoid_energy(T, AMPS, V, 0.5, 3.5) == pytest.approx(25.75, abs=1e-12)


def test_request_energy_from_monitor_series() -> None:
    # the phone_runner monitor's columns: t_unix (s), battery_current_ma (mA), battery_voltage_v (V); unsorted
    df = pl.DataFrame({"t_unix": [103.0, 100.0, 101.0, 104.0], "battery_current_ma": [2000.0, 1000.0, 2000.0, -1000.0],
                       "battery_voltage_v": [5.0, 4.0, 4.0, 4.0]})
    e = request_energy(df, 100.0, 104.0, tokens=10)
    assert e.joules == pytest.approx(31.0)
    assert e.mean_w == pytest.approx(31.0 / 4)
    assert e.j_per_token == pytest.approx(3.1)


def test_bad_series_is_one_clear_error() -> None:
    with pytest.raises(ValueError, match="battery_voltage_v"):
        request_energy(pl.DataFrame({"t_unix": [0.0, 1.0], "battery_current_ma": [1.0, 1.0]}), 0, 1, 1)
    with pytest.raises(ValueError, match="time order"):
        trapezoid_energy([1.0, 0.0], [1.0, 1.0], [1.0, 1.0])
    with pytest.raises(ValueError, match="not inside"):
        trapezoid_energy(T, AMPS, V, -1.0, 2.0)


def test_rapl_meter_reads_a_powercap_tree_and_handles_wrap(tmp_path) -> None:
    assert host_meter(tmp_path) is None and "unavailable" in UNAVAILABLE
    d = tmp_path / "intel-rapl:0"
    (d / "intel-rapl:0:0").mkdir(parents=True)  # a subdomain: not counted twice
    (d / "energy_uj").write_text("999000000\n")
    (d / "max_energy_range_uj").write_text("1000000000\n")
    meter = host_meter(tmp_path)
    assert meter is not None and len(meter.domains) == 1
    before = meter.read_uj()
    (d / "energy_uj").write_text("2000000\n")  # wrapped: 1e6 uJ to the top + 2e6 uJ after
    assert meter.joules_between(before, meter.read_uj()) == pytest.approx(3.0)
    assert not math.isnan(meter.joules_between(before, before))

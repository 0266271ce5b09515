"""benchmarks/phone_calibration_check.py's pure parts: sweeps and calibrations become rows, and a phone
width outside the band is flagged. The measurement itself is never asserted here (no timed assertions)."""

from __future__ import annotations

import pytest

from tests.benchmarks.scripts import script_module


@pytest.fixture(scope="module")
def check():
    yield from script_module("phone_calibration_check")


def test_rows_take_the_median_of_all_host_sweeps_and_flag_a_width_outside_the_band(check) -> None:
    host = [{1: 10.0, 4: 20.0}, {1: 12.0, 4: 22.0}, {1: 11.0, 4: 30.0}]
    phone = [{1: 11.5, 4: 22.0}, {1: 10.5, 4: 25.0}]
    one, four = check.compare(host, phone)
    assert (one.width, one.host_ms, one.host_spread, one.phone_ms) == (1, 11.0, 1.2, (11.5, 10.5))
    assert one.passed and one.ratios == pytest.approx((11.5 / 11, 10.5 / 11))
    assert four.host_ms == 22.0 and four.ratios == pytest.approx((1.0, 25 / 22))
    assert not four.passed  # the second calibration sits 13.6 % above the host: one B outside fails the width
    assert check.compare(host, phone, band=0.15)[1].passed


def test_the_table_names_each_calibration_and_the_verdict(check) -> None:
    rows = check.compare([{1: 10.0, 8: 40.0}], [{1: 10.5, 8: 50.0}])
    lines = check.table(rows)
    assert lines[0].startswith("| K | host ms (median) |") and "phone/host #1" in lines[0] and "within 10%" in lines[0]
    assert lines[2].endswith("| 1.050 | PASS |") and lines[3].endswith("| 1.250 | FAIL |")
    assert len(lines) == 2 + len(rows)

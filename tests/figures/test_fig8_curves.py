"""Fig. 8's R(K) curves: each host curve names its source (committed reference or this machine's calibration)
and date; phone profiles whose curves coincide are drawn once and marked as identical."""

from __future__ import annotations

import shutil
from pathlib import Path

import polars as pl
import pytest

from workbench.figures import analysis as A
from workbench.figures.families import fig8_batching_saving
from workbench.native.fingerprint import PROFILE_DIR_ENV
from workbench.replay.profile import DEVICE_DIR, available_profiles, load_profile

DATE = r"(measured \d{4}-\d{2}-\d{2}|date not recorded)"


def _curves(monkeypatch: pytest.MonkeyPatch, cache: Path) -> pl.DataFrame:
    monkeypatch.setenv("AS2D_CACHE", str(cache))
    monkeypatch.delenv(PROFILE_DIR_ENV, raising=False)  # the suite's own calibration folder (conftest)
    (table,) = fig8_batching_saving().tables.values()
    return table.select("provenance", "device")


def test_host_curves_name_their_source_and_date(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    host = _curves(monkeypatch, tmp_path).filter(pl.col("provenance") == "host (measured)")["device"].to_list()
    assert len(host) == 1 and "committed reference conf/device/host.yaml" in host[0]
    assert pl.Series(host).str.contains(DATE).all()
    (tmp_path / "host_profiles").mkdir()
    shutil.copy(DEVICE_DIR / "host.yaml", tmp_path / "host_profiles" / "host-test-machine.yaml")
    host = _curves(monkeypatch, tmp_path).filter(pl.col("provenance") == "host (measured)")["device"].to_list()
    assert len(host) == 2 and sum("machine's calibration host-test-machine" in h for h in host) == 1
    assert pl.Series(host).str.contains(DATE).all()


def test_coinciding_phone_curves_are_drawn_once_and_marked(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    phones = _curves(monkeypatch, tmp_path).filter(pl.col("provenance").str.starts_with("phone profiles"))["device"]
    names = [n for label in phones for n in label.split(" (")[0].split(" = ")]
    assert sorted(names) == sorted(p for p in available_profiles() if p != "host")  # each profile drawn once
    groups = [label.split(" (")[0].split(" = ") for label in phones]
    curve = {n: _saving(n) for g in groups for n in g}
    for label, group in zip(phones, groups, strict=True):
        assert (len(group) > 1) == label.endswith("(identical curves, drawn once)")
        assert all(curve[n] == curve[group[0]] for n in group)  # one line: the same curve
    firsts = [curve[g[0]] for g in groups]
    assert len(set(firsts)) == len(firsts)  # separate lines: different curves


def _saving(name: str) -> tuple[float, ...]:
    prof = load_profile(name)
    saving = A.batching_saving({k: prof.verify_ms(k) for k in prof.verifier.widths() if k <= 15})
    return tuple(round(v, 2) for v in saving.filter(pl.col("K") >= 2)["saving_pct"])

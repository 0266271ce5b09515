"""Refitting stored calibrations: the pair's names and date read back from a profile, and the table that
prices stored runs under each stored profile and its refit (the fit itself: ``test_calibrate.py``)."""

from __future__ import annotations

import copy
import datetime as dt

import pytest
import yaml

from workbench.errors import WorkbenchError
from workbench.native.refit import calibration_date, label, markdown, price_table, sample_dir, stored_names
from workbench.native.reprice import reprice
from workbench.native.run_store import save_runs
from workbench.replay.profile import load_profile

from .test_run_store import episodes, host  # noqa: F401  (fixture)


def test_names_and_date_come_back_from_a_stored_profile(host, tmp_path):  # noqa: F811
    raw = yaml.safe_load(host.read_text())
    names = stored_names(raw)
    assert names.serial_source == raw["serial_drafter"] and names.source != names.serial_source
    assert names.batch_tokens == raw["sources"][names.source]["batch_tokens"]["v"]
    one = copy.deepcopy(raw)  # a producer that is its own serial drafter: the only source
    one["sources"] = {names.source: one["sources"][names.source]}
    one["serial_drafter"] = names.source
    assert stored_names(one).source == names.source
    day = dt.date.today().isoformat()
    raw["target_step_ms"]["source"] = f"measured on host {day}, n=9, median"
    assert calibration_date(raw) == day
    with pytest.raises(WorkbenchError, match="no calibration date"):
        calibration_date({"sources": {}})
    with pytest.raises(WorkbenchError, match="no raw samples"):
        sample_dir(host)
    assert label(tmp_path / "run7" / "host.yaml") == "run7" and label(tmp_path / "a.yaml") == "a"


def test_the_table_prices_each_store_under_the_stored_profile_and_its_refit(host, tmp_path):  # noqa: F811
    ep, inputs = episodes()
    store = str(save_runs(tmp_path / "native_runs.json", ep, inputs, str(host)))
    old = yaml.safe_load(host.read_text())
    new = copy.deepcopy(old)
    new["sources"][inputs.source]["forward_ms"]["v"] *= 1.5
    new_path = tmp_path / "new.yaml"
    new_path.write_text(yaml.safe_dump(new))
    table = price_table([("cal", old, new)], [store])
    _, own = reprice(store, load_profile(host))
    _, slow = reprice(store, load_profile(new_path))
    row = table.row(0, named=True)
    assert (row["calibration"], row["store"]) == ("cal", store)
    assert row["stored_pooled_pct"] == pytest.approx(own["pooled_error_pct"])
    assert row["refit_pooled_pct"] == pytest.approx(slow["pooled_error_pct"]) != pytest.approx(row["stored_pooled_pct"])
    body = markdown(table, "python -m workbench.native.refit x --stores y", "bench dev")
    assert " cores" in body and "- split of the stores: bench dev" in body and "| cal | `" in body
    assert [line.count("→") for line in body.splitlines() if line.startswith("| ")] == [3, 3, 3]  # head, row, mean

"""Swapping one group of host-profile fields at a time: only that group moves, and re-pricing a store
under a swap equals re-pricing it under the profile that differs by that group alone."""

from __future__ import annotations

import copy

import pytest
import yaml

from workbench.native.profile_swap import FIELD_GROUPS, main, swap_table, swapped
from workbench.native.reprice import reprice
from workbench.native.run_store import save_runs
from workbench.replay.profile import load_profile, parse_profile

from .test_run_store import episodes, host  # noqa: F401  (fixture)

GROUPS = {g.name: g for g in FIELD_GROUPS}


def _producer(raw):
    return next(n for n in raw["sources"] if n != raw["serial_drafter"])


def test_a_swap_takes_only_its_group_from_the_other_profile(host):  # noqa: F811
    base = yaml.safe_load(host.read_text())
    other = copy.deepcopy(base)
    name = _producer(base)
    other["sources"][name]["forward_ms"]["v"] *= 2
    other["sources"][name]["growth"] = {"per_token": {"v": -0.002, "source": "fit"},
                                        "ref_tokens": {"v": 20, "source": "fit"}}
    other["target_step_ms"]["v"] += 5
    one = swapped(base, other, GROUPS["producer per forward (R_OPS)"])
    assert one["sources"][name]["forward_ms"] == other["sources"][name]["forward_ms"]
    assert one["sources"][name].get("growth") == base["sources"][name].get("growth")
    assert one["target_step_ms"] == base["target_step_ms"]
    grown = swapped(base, other, GROUPS["producer growth (R_GROWTH)"])
    assert grown["sources"][name]["growth"]["per_token"]["v"] == -0.002
    flat = copy.deepcopy(base)
    flat["sources"][name].pop("growth", None)
    # a field the other profile lacks is removed, not kept
    assert "growth" not in swapped(other, flat, GROUPS["producer growth (R_GROWTH)"])["sources"][name]
    parse_profile(one, "swapped.yaml")  # still a profile replay accepts


def test_the_table_reprices_each_swap_and_files_its_section(host, tmp_path, capsys):  # noqa: F811
    ep, inputs = episodes()
    store = str(save_runs(tmp_path / "native_runs.json", ep, inputs, str(host)))
    base = yaml.safe_load(host.read_text())
    other = copy.deepcopy(base)
    other["sources"][inputs.source]["forward_ms"]["v"] *= 1.5  # the producer priced slower
    other_path = tmp_path / "other.yaml"
    other_path.write_text(yaml.safe_dump(other))
    table = swap_table([store], other)
    rows = {r["profile"]: r for r in table.iter_rows(named=True)}
    _, own = reprice(store)
    _, slow = reprice(store, load_profile(other_path))
    assert own["pooled_error_pct"] != pytest.approx(slow["pooled_error_pct"])  # the swap matters here
    assert rows["base"]["pooled_pct"] == pytest.approx(own["pooled_error_pct"])
    assert rows["other"]["pooled_pct"] == pytest.approx(slow["pooled_error_pct"])
    # the only differing group reproduces the other profile; any other group leaves the base's error
    swap = rows["base + other's producer per forward (R_OPS)"]
    assert swap["pooled_pct"] == pytest.approx(slow["pooled_error_pct"])
    assert rows["base + other's idle widths"]["pooled_pct"] == pytest.approx(own["pooled_error_pct"])
    assert table.height == len(FIELD_GROUPS) + 2
    doc = tmp_path / "results.md"
    doc.write_text("# Results\n")
    main([store, "--other", str(other_path), "--markdown", str(doc), "--split", "bench dev"])
    text = doc.read_text()
    assert "<!-- d3-profile-swap -->" in text and " cores" in text and "- split: bench dev" in text
    assert "- command: `python -m workbench.native.profile_swap " in text and "producer per forward" in text
    with pytest.raises(SystemExit, match="cannot read a host profile"):
        main([store, "--other", str(tmp_path / "missing.yaml")])

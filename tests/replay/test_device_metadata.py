"""Table 6 (D.1.1): every phone profile carries its device metadata, with a source, parsed and checked."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest
import yaml

from workbench.replay.metadata import ROWS, device_table
from workbench.replay.profile import DEVICE_DIR, ProfileError, load_profile, parse_profile

PHONES = ["k70_pro", "xiaomi_11_pro", "xiaomi_14", "redmi_note_9_pro"]


def raw(name: str) -> dict:
    return yaml.safe_load((DEVICE_DIR / f"{name}.yaml").read_text())


def test_every_phone_profile_in_conf_device_carries_metadata() -> None:
    # A phone profile is one without a host machine fingerprint; new phone files are picked up here.
    phones = sorted(p.stem for p in DEVICE_DIR.glob("*.yaml") if "machine" not in raw(p.stem) and p.stem != "host")
    assert set(PHONES) <= set(phones)
    for name in phones:
        m = load_profile(name).metadata
        assert m is not None, f"conf/device/{name}.yaml has no metadata: block (Table 6)"
        assert "Table 6" in m.source and m.placement_source.startswith("D.2"), name


def test_metadata_agrees_with_the_profiles_own_costs_and_the_papers_deployment() -> None:
    profiles = [load_profile(n) for n in PHONES]
    # Model ids are distinct (one column per phone); the deployed width is one the profile prices.
    assert len({p.metadata.model_id for p in profiles}) == len(PHONES)
    for p in profiles:
        assert p.verify_ms(p.metadata.max_width, concurrent=True) > 0
    # D.2.6: Qwen/budget 7 on three phones, budget 3 on Note 9 Pro.
    assert [p.metadata.budget for p in profiles] == [7, 7, 7, 3]


def test_table6_lays_the_profiles_side_by_side() -> None:
    profiles = [load_profile(n) for n in PHONES]
    t = device_table(profiles)
    assert t.columns == ["attribute", *(p.device for p in profiles)]
    assert t.height == len(ROWS)
    row = dict(zip(t["attribute"], t["Xiaomi 11 Pro"], strict=True))
    assert row["Android / API"] == "14 / 34" and row["RAM (GiB)"] == "7.05" and row["Maximum width K"] == "8"
    with pytest.raises(ValueError, match=r"\['host'\] carry no metadata"):
        device_table([*profiles, load_profile(DEVICE_DIR / "host.yaml")])


@pytest.mark.parametrize(("edit", "field", "problem"), [
    (lambda m: m.pop("soc"), "metadata.soc", "missing required key"),
    (lambda m: m["os"].pop("api"), "metadata.os.api", "missing required key"),
    (lambda m: m["cpu"].update(cores="eight"), "metadata.cpu.cores", "positive integer"),
    (lambda m: m["opencl"].update(version=3.0), "metadata.opencl.version", "quote versions"),
    (lambda m: m.update(colour="black"), "metadata.colour", "unknown key"),
    (lambda m: m.pop("placement"), "metadata.placement", "missing required key"),
    (lambda m: m["deployment"].update(max_width=9), "metadata.deployment.max_width", "budget \\+ 1 = 8"),
])
def test_malformed_metadata_names_the_file_and_field(edit, field: str, problem: str, tmp_path: Path) -> None:
    r = copy.deepcopy(raw("k70_pro"))
    edit(r["metadata"])
    with pytest.raises(ProfileError, match=problem) as err:
        parse_profile(r, file="conf/device/k70_pro.yaml")
    assert err.value.field_path == field and "conf/device/k70_pro.yaml" in str(err.value)


def test_metadata_is_optional_and_never_changes_a_price() -> None:
    r = raw("xiaomi_14")
    bare = {k: v for k, v in r.items() if k != "metadata"}
    with_meta, without = parse_profile(r, "a.yaml"), parse_profile(bare, "a.yaml")
    assert without.metadata is None and with_meta.metadata is not None
    for k in with_meta.verifier.widths():
        assert with_meta.verify_ms(k, True) == without.verify_ms(k, True)

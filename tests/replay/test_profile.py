"""Device cost profiles: the shipped phone files load, carry provenance, and bad files fail loudly."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest
import yaml

from workbench.replay.profile import (
    DEVICE_DIR,
    MissingWidthError,
    ProfileError,
    available_profiles,
    load_profile,
    parse_profile,
)

PHONES = ["k70_pro", "xiaomi_11_pro", "xiaomi_14", "redmi_note_9_pro"]


def _raw(name: str) -> dict:
    return yaml.safe_load((DEVICE_DIR / f"{name}.yaml").read_text())


def test_four_phone_profiles_ship() -> None:
    assert set(PHONES) <= set(available_profiles())


@pytest.mark.parametrize("name", PHONES)
def test_every_number_has_provenance(name: str) -> None:
    profile = load_profile(name)
    assert profile.verifier.idle_ms[1] > 0
    for path, note in profile.provenance.items():
        assert note.startswith(("source: ", "derived: ")), path
    # widths + scalars + source fields all recorded
    assert "verifier.idle_ms.1" in profile.provenance
    assert "sources.qwen.forward_ms" in profile.provenance


def test_k70_published_constants() -> None:
    p = load_profile("k70_pro")
    assert p.target_step_ms == 59.391
    assert p.source("qwen").op_ms == 23.347
    assert p.verify_ms(8) == 112.656
    assert p.verify_ms(12) == 142.825
    assert p.loop_residual_ms == 10.738
    assert p.asp is not None and p.asp.paired_branch_ms == 35.075 and p.asp.prob_row_ms == 0.951
    assert p.provenance["verifier.idle_ms.8"].startswith("source: D.2.2")
    # B.2: per-position saving near 64.5% at K4 and K5, eq. 2
    for k in (4, 5):
        assert 100 * (1 - p.verify_ms(k) / (k * p.verify_ms(1))) == pytest.approx(64.5, abs=0.01)
    assert p.verifier.widths() == tuple(range(1, 26))
    assert p.scenario("high").verify_ms(8, concurrent=True) == pytest.approx(112.656 * 1.049)


def test_xiaomi_11_savings_and_median_ratio_fallback() -> None:
    p = load_profile("xiaomi_11_pro")
    assert 1000 / p.target_step_ms == pytest.approx(8.35)
    saving = {k: 100 * (1 - p.verify_ms(k) / (k * p.verify_ms(1))) for k in (4, 5)}
    assert saving[4] == pytest.approx(60.1, abs=0.01) and saving[5] == pytest.approx(50.0, abs=0.01)
    # K9 has no direct concurrent ratio: the median of {0.9387, 0.9651, 1.2396} applies (D.5.2)
    assert p.verify_ms(9, concurrent=True) == pytest.approx(p.verify_ms(9) * 0.9651)
    assert p.verify_ms(8, concurrent=True) == pytest.approx(p.verify_ms(8) * 1.2396)
    assert p.scenario("low").verify_ms(9, concurrent=True) == pytest.approx(p.verify_ms(9) * 0.9387)
    with pytest.raises(MissingWidthError, match="K=16"):
        p.verify_ms(16)


@pytest.mark.parametrize(
    ("name", "tps", "ratio"), [("xiaomi_14", 19.30, 0.9961), ("redmi_note_9_pro", 4.12, 1.0593)]
)
def test_constant_factor_profiles(name: str, tps: float, ratio: float) -> None:
    p = load_profile(name)
    assert 1000 / p.target_step_ms == pytest.approx(tps, rel=1e-5)
    assert p.verify_ms(15, concurrent=True) == pytest.approx(p.verify_ms(15) * ratio)


def test_missing_concurrent_width_errors_when_profile_says_so() -> None:
    raw = _raw("xiaomi_11_pro")
    raw["verifier"]["concurrent"]["missing"] = "error"
    p = parse_profile(raw, file="x11-strict.yaml")
    assert p.verify_ms(5, concurrent=True) == pytest.approx(p.verify_ms(5) * 0.9651)
    with pytest.raises(MissingWidthError, match="concurrent"):
        p.verify_ms(9, concurrent=True)


def _expect(raw: dict, field: str) -> None:
    with pytest.raises(ProfileError) as err:
        parse_profile(raw, file="bad.yaml")
    assert "bad.yaml" in str(err.value) and field in str(err.value)
    assert err.value.field_path == field


def test_negative_cost_rejected() -> None:
    raw = copy.deepcopy(_raw("k70_pro"))
    raw["verifier"]["idle_ms"][3]["v"] = -1.0
    _expect(raw, "verifier.idle_ms.3.v")


def test_missing_k1_rejected() -> None:
    raw = copy.deepcopy(_raw("k70_pro"))
    del raw["verifier"]["idle_ms"][1]
    _expect(raw, "verifier.idle_ms.1")


def test_unknown_key_rejected() -> None:
    raw = copy.deepcopy(_raw("k70_pro"))
    raw["sources"]["qwen"]["forwrd_ms"] = {"v": 1.0, "source": "typo"}
    _expect(raw, "sources.qwen.forwrd_ms")
    raw = copy.deepcopy(_raw("k70_pro"))
    raw["turbo"] = True
    _expect(raw, "turbo")


def test_number_without_provenance_rejected() -> None:
    raw = copy.deepcopy(_raw("k70_pro"))
    raw["queue_ms"] = {"v": 3.0}
    _expect(raw, "queue_ms")
    raw["queue_ms"] = {"v": 3.0, "derived": "R_NOT_STATED"}
    _expect(raw, "queue_ms.derived")


def test_load_from_path_names_file(tmp_path: Path) -> None:
    raw = copy.deepcopy(_raw("xiaomi_14"))
    raw["target_step_ms"]["v"] = "fast"
    bad = tmp_path / "broken.yaml"
    bad.write_text(yaml.safe_dump(raw))
    with pytest.raises(ProfileError, match=r"broken\.yaml: field 'target_step_ms\.v'"):
        load_profile(bad)


def test_per_width_dispersion_is_kept_where_calibration_states_it() -> None:
    raw = _raw("k70_pro")
    raw["verifier"]["idle_ms"][1].update(sd=1.25, n=15)
    raw["verifier"]["idle_ms"][8]["sd"] = 0.5
    p = parse_profile(raw, "k70_sd.yaml")
    assert dict(p.verifier.idle_sd_ms) == {1: 1.25, 8: 0.5}  # the other widths state none
    assert p.verify_ms(1) == load_profile("k70_pro").verify_ms(1)  # replay still prices the median
    assert dict(load_profile("k70_pro").verifier.idle_sd_ms) == {}


@pytest.mark.parametrize(("where", "extra", "field"), [
    (("verifier", "idle_ms", 2), {"sd": -1.0}, "verifier.idle_ms.2.sd"),
    (("verifier", "idle_ms", 2), {"sd": 0.3, "n": 1}, "verifier.idle_ms.2.n"),
    (("verifier", "idle_ms", 2), {"n": 9}, "verifier.idle_ms.2.n"),
    (("target_step_ms",), {"sd": 0.3}, "target_step_ms.sd"),  # dispersion only where widths are priced
])
def test_bad_dispersion_names_the_field(where: tuple, extra: dict, field: str) -> None:
    raw = _raw("k70_pro")
    node = raw
    for key in where:
        node = node[key]
    node.update(extra)
    with pytest.raises(ProfileError, match=rf"'{field}'"):
        parse_profile(raw, "bad.yaml")

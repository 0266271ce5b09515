"""Per-machine host profile: the committed profile prices only the machine it came from."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
import yaml

from workbench.native.fingerprint import (
    CALIBRATION_VERSION,
    FIELDS,
    PROFILE_DIR_ENV,
    HostProfileMismatch,
    cached_profile_path,
    differences,
    engine_label,
    fingerprint_id,
    host_profile,
    machine_fingerprint,
    samples_dir,
)
from workbench.replay.profile import DEVICE_DIR, load_profile, parse_profile

MODEL = {"name": "whisper_base", "engine": "torch"}


def _write(path, machine, anchored=True):
    raw = yaml.safe_load((DEVICE_DIR / "host.yaml").read_text())
    raw["machine"] = dict(machine)
    if anchored:  # what today's calibration writes (the drift anchor)
        raw.update(anchor_ms={"v": 26.0, "source": "test"}, anchor_window="calib00")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(raw))
    return path


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("AS2D_CACHE", str(tmp_path / "cache"))
    monkeypatch.delenv(PROFILE_DIR_ENV, raising=False)  # the suite's own calibration folder (conftest)
    return tmp_path / "cache"


def _never(path):
    raise AssertionError("must not calibrate")


def test_fingerprint_names_this_machine_and_changes_with_any_field():
    fp = machine_fingerprint()
    assert set(fp) == set(FIELDS) and fp["engine"] == "torch" and fp["threads"] >= 1
    assert fingerprint_id(fp) == fingerprint_id(dict(fp))
    for k in FIELDS:
        other = {**fp, k: "something else"}
        assert fingerprint_id(other) != fingerprint_id(fp)
        assert differences(other, fp) == [f"{k}: 'something else' != {fp[k]!r}"]
    assert machine_fingerprint("mnn") != fp


def test_committed_host_profile_names_its_own_machine():
    prof = load_profile("host")
    assert prof.machine is not None and set(FIELDS) <= set(prof.machine)


def test_matching_reference_is_used_without_calibrating(tmp_path, cache):
    ref = _write(tmp_path / "host.yaml", machine_fingerprint())
    prof = host_profile(MODEL, "refuse", reference=ref, calibrate=_never)
    assert prof.file == str(ref)


def test_other_machine_refuses_with_one_line(tmp_path, cache):
    ref = _write(tmp_path / "host.yaml", {**machine_fingerprint(), "cpu": "AMD EPYC 7B13"})
    with pytest.raises(HostProfileMismatch) as err:
        host_profile(MODEL, "refuse", reference=ref, calibrate=_never)
    msg = str(err.value)
    assert "\n" not in msg and "cpu: 'AMD EPYC 7B13'" in msg and "calibration.on_mismatch=calibrate" in msg


def test_other_machine_calibrates_once_then_uses_the_cache(tmp_path, cache):
    ref = _write(tmp_path / "host.yaml", {**machine_fingerprint(), "torch": "0.0.1"})
    calls = []

    def calibrate(path):
        calls.append(path)
        return load_profile(_write(path, machine_fingerprint()))

    first = host_profile(MODEL, "calibrate", reference=ref, calibrate=calibrate)
    assert calls == [cached_profile_path(machine_fingerprint(), MODEL)]
    assert str(calls[0]).startswith(str(cache)) and first.file == str(calls[0])
    again = host_profile(MODEL, "refuse", reference=ref, calibrate=_never)  # cached: no calibration, no refusal
    assert again.file == first.file and len(calls) == 1


def test_a_cache_from_an_older_calibration_is_measured_again_or_refused(tmp_path, cache):
    """No stale cache: a cached profile without the drift anchor predates the R_LIVE producer fit."""
    ref = _write(tmp_path / "host.yaml", {**machine_fingerprint(), "torch": "0.0.1"})
    old = _write(cached_profile_path(machine_fingerprint(), MODEL), machine_fingerprint(), anchored=False)
    with pytest.raises(HostProfileMismatch, match="older calibration") as err:
        host_profile(MODEL, "refuse", reference=ref, calibrate=_never)
    assert "\n" not in str(err.value) and str(old) in str(err.value)
    calls = []

    def calibrate(path):
        calls.append(path)
        return load_profile(_write(path, machine_fingerprint()))

    fresh = host_profile(MODEL, "calibrate", reference=ref, calibrate=calibrate)
    assert calls == [old] and fresh.anchor_ms == 26.0
    assert host_profile(MODEL, "refuse", reference=ref, calibrate=_never).anchor_ms == 26.0


def test_a_calibration_for_another_machine_is_never_used(tmp_path, cache):
    ref = _write(tmp_path / "host.yaml", {**machine_fingerprint(), "cores": 64})

    def wrong(path):
        return load_profile(_write(path, {**machine_fingerprint(), "cores": 64}))

    with pytest.raises(RuntimeError, match="another machine"):
        host_profile(MODEL, "calibrate", reference=ref, calibrate=wrong)
    with pytest.raises(ValueError, match="on_mismatch"):
        host_profile(MODEL, "sometimes", reference=ref, calibrate=_never)


def test_machine_field_must_be_flat():
    raw = yaml.safe_load((DEVICE_DIR / "host.yaml").read_text())
    raw["machine"] = {"cpu": ["a", "b"]}
    with pytest.raises(ValueError, match="machine"):
        parse_profile(raw, file="x.yaml")


def test_replay_job_on_another_machines_host_profile_refuses_in_one_line_before_any_run(tmp_path):
    """The front door: experiment=replay device=host with on_mismatch=refuse on a machine the committed
    profile did not measure (it records no torch version, so it matches none) -> one config error."""
    from tests.test_run import runs

    db = tmp_path / "m.db"
    env_cache = str(tmp_path / "empty-cache")
    res = subprocess.run([sys.executable, "-m", "workbench.run", "device=host", "calibration.on_mismatch=refuse",
                          f"tracking.uri=sqlite:///{db}", f"hydra.run.dir={tmp_path}/out"],
                         cwd=DEVICE_DIR.parents[1], capture_output=True, text=True, timeout=300,
                         env={**{k: v for k, v in os.environ.items() if k != PROFILE_DIR_ENV},
                              "AS2D_CACHE": env_cache})
    assert res.returncode == 2, res.stderr[-2000:]
    (line,) = [ln for ln in res.stderr.splitlines() if ln.startswith("config error")]
    assert line.startswith("config error: calibration.on_mismatch:") and "another machine" in line
    assert "Traceback" not in res.stderr and runs(db) == []


def test_pinning_this_process_does_not_change_the_machine():
    """Calibration pins itself to one core (placements); the fingerprint it records must stay this machine's."""
    if not hasattr(os, "sched_getaffinity") or len(os.sched_getaffinity(0)) < 2:
        before = machine_fingerprint()
        assert machine_fingerprint() == before
        return
    allowed = os.sched_getaffinity(0)
    before = machine_fingerprint()
    try:
        os.sched_setaffinity(0, {min(allowed)})
        assert machine_fingerprint() == before
    finally:
        os.sched_setaffinity(0, allowed)


def test_packed_kernels_and_an_older_calibration_are_other_profiles(cache, tmp_path):
    packed = {**MODEL, "target": {"kernels": "packed"}}
    assert engine_label(MODEL) == "torch" and engine_label(packed) == "torch+packed"
    assert engine_label({**packed, "engine": "mnn"}) == "mnn"  # MNN has its own kernels
    ref = _write(tmp_path / "host.yaml", {**machine_fingerprint(), "torch": "0.0.1"})
    _write(cached_profile_path(machine_fingerprint(), MODEL), machine_fingerprint())
    assert host_profile(MODEL, "refuse", reference=ref, calibrate=_never).machine["engine"] == "torch"
    with pytest.raises(HostProfileMismatch):  # plain-kernel costs never price a packed target
        host_profile(packed, "refuse", reference=ref, calibrate=_never)
    old = {**machine_fingerprint(), "calibration": CALIBRATION_VERSION - 1}
    _write(cached_profile_path(machine_fingerprint(), MODEL), old)
    calls = []

    def calibrate(path):
        calls.append(path)
        return load_profile(_write(path, machine_fingerprint()))

    assert host_profile(MODEL, "calibrate", reference=ref, calibrate=calibrate).machine == machine_fingerprint()
    assert len(calls) == 1  # the older calibration's profile was measured again


def test_a_first_use_calibration_keeps_its_samples_beside_the_profile_out_of_the_profile_glob(cache):
    path = cached_profile_path(machine_fingerprint(), MODEL)
    beside = samples_dir(path)
    assert beside.parent == path.parent and beside.name == path.name + ".samples"
    beside.mkdir(parents=True)
    _write(path, machine_fingerprint())
    assert sorted(path.parent.glob("host-*.yaml")) == [path]  # the figures' profile listing sees profiles only

"""The host-profile cache: keyed on everything that changes a number, locked, and self-healing.

Stale-cache probes: change one setting that changes a cost, and the cached profile is not reused.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from workbench.native.fingerprint import (
    PROFILE_DIR_ENV,
    cached_profile_path,
    host_profile,
    machine_fingerprint,
    priced_profiles,
)
from workbench.replay.profile import DEVICE_DIR, load_profile

ROOT = Path(__file__).resolve().parents[2]


def _model(weights: Path, **target) -> dict:
    return {"name": "whisper_base", "engine": "torch",
            "target": {"name": "whisper-base", "family": "whisper", "local_path": str(weights), "dtype": "float32",
                       "device": "cpu", "quantize": None, "kernels": "plain", **target},
            "drafter": {"name": "whisper-tiny.en", "family": "whisper", "offline_package": "whisper-tiny.en",
                        "dtype": "float32", "device": "cpu", "quantize": "dynamic_int8", "kernels": "plain"}}


def _write(path: Path):
    raw = yaml.safe_load((DEVICE_DIR / "host.yaml").read_text())
    raw["machine"] = dict(machine_fingerprint())
    raw.update(anchor_ms={"v": 26.0, "source": "test"}, anchor_window="calib00")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(raw))
    return load_profile(path)


@pytest.fixture
def weights(tmp_path, monkeypatch):
    monkeypatch.setenv("AS2D_CACHE", str(tmp_path / "cache"))
    monkeypatch.delenv(PROFILE_DIR_ENV, raising=False)  # the suite's own calibration folder (conftest)
    d = tmp_path / "weights"
    d.mkdir()
    (d / "config.json").write_text('{"model_type": "whisper"}')
    (d / "model.safetensors").write_bytes(b"\x01" * 4096)
    return d


def _elsewhere(tmp_path: Path) -> Path:
    """A reference host profile of another machine (so the cache is what prices this one)."""
    raw = yaml.safe_load((DEVICE_DIR / "host.yaml").read_text())
    raw["machine"] = {**machine_fingerprint(), "cpu": "another CPU"}
    ref = tmp_path / "host.yaml"
    ref.write_text(yaml.safe_dump(raw))
    return ref


@pytest.mark.parametrize("change", [
    {"quantize": "dynamic_int8"}, {"dtype": "bfloat16"}, {"kernels": "packed"}, {"device": "cuda"},
])
def test_a_setting_that_changes_costs_is_another_cache_entry(weights, change):
    fp = machine_fingerprint()
    assert cached_profile_path(fp, _model(weights, **change)) != cached_profile_path(fp, _model(weights))


def test_the_producers_quantization_is_in_the_key(weights):
    fp, base = machine_fingerprint(), _model(weights)
    plain = {**base, "drafter": {**base["drafter"], "quantize": None}}
    assert cached_profile_path(fp, plain) != cached_profile_path(fp, base)


def test_other_weights_with_the_same_size_and_mtime_are_another_cache_entry(weights):
    fp = machine_fingerprint()
    before = cached_profile_path(fp, _model(weights))
    assert cached_profile_path(fp, _model(weights)) == before  # same files: the same entry
    f = weights / "model.safetensors"
    st = f.stat()
    f.write_bytes(b"\x02" * 4096)  # same size
    os.utime(f, ns=(st.st_atime_ns, st.st_mtime_ns))  # same mtime
    assert cached_profile_path(fp, _model(weights)) != before


def test_the_calibration_version_is_in_the_key(weights, monkeypatch):
    import workbench.native.fingerprint as F

    before = cached_profile_path(machine_fingerprint(), _model(weights))
    monkeypatch.setattr(F, "CALIBRATION_VERSION", F.CALIBRATION_VERSION + 1)
    assert cached_profile_path(machine_fingerprint(), _model(weights)) != before


@pytest.mark.parametrize("damage", ["machine: [unclosed\n", "name: host\n"])
def test_a_damaged_cached_profile_is_moved_aside_and_measured_again(tmp_path, weights, damage, caplog):
    model = _model(weights)
    cached = cached_profile_path(machine_fingerprint(), model)
    cached.parent.mkdir(parents=True)
    cached.write_text(damage)  # invalid YAML, or valid YAML missing every required key
    calls = []

    def calibrate(path):
        calls.append(path)
        return _write(path)

    prof = host_profile(model, "calibrate", reference=_elsewhere(tmp_path), calibrate=calibrate)
    assert calls == [cached] and prof.file == str(cached) and prof.anchor_ms == 26.0
    (aside,) = cached.parent.glob(cached.name + ".bad-*")
    assert aside.read_text() == damage
    lines = [r.getMessage() for r in caplog.records if "unusable" in r.getMessage()]
    assert len(lines) == 1 and str(cached) in lines[0] and str(aside) in lines[0]
    assert cached in priced_profiles()  # what the run attaches: the profile that priced it


CHILD = """
import sys, time
from pathlib import Path
sys.path.insert(0, {root!r})
from tests.native.test_profile_cache import _model, _write, _elsewhere
from workbench.native.fingerprint import host_profile

def calibrate(path):
    print("calibrating", flush=True)
    time.sleep(4)  # a first-use calibration takes a while; the other job must wait, not measure too
    return _write(path)

while not Path({go!r}).exists():
    time.sleep(0.01)
prof = host_profile(_model(Path({weights!r})), "calibrate", reference=_elsewhere(Path({tmp!r})), calibrate=calibrate)
print("profile", prof.file, flush=True)
"""


def test_two_jobs_on_an_empty_cache_calibrate_once(tmp_path, weights):
    go = tmp_path / "go"
    code = CHILD.format(root=str(ROOT), go=str(go), weights=str(weights), tmp=str(tmp_path))
    procs = [subprocess.Popen([sys.executable, "-c", code], cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True, env=os.environ.copy()) for _ in range(2)]
    time.sleep(3)  # both imported and waiting for the start line
    go.touch()
    outs = [p.communicate(timeout=300) for p in procs]
    assert [p.returncode for p in procs] == [0, 0], [e[-2000:] for _, e in outs]
    assert sum(o.count("calibrating") for o, _ in outs) == 1  # one measured, the other waited
    assert sum("waiting for another job's calibration" in e for _, e in outs) == 1
    files = {ln.split(" ", 1)[1] for o, _ in outs for ln in o.splitlines() if ln.startswith("profile ")}
    assert len(files) == 1  # both priced with the same profile


def test_a_profile_dir_of_its_own_keeps_a_run_off_this_machines_calibrations(monkeypatch, tmp_path):
    """``$AS2D_PROFILE_DIR`` (the test suite's reduced demo sets it): calibrations are cached and found
    there, not under ``$AS2D_CACHE/host_profiles``, which stays as it was."""
    from workbench.native.fingerprint import profile_cache_dir

    monkeypatch.setenv("AS2D_CACHE", str(tmp_path / "cache"))
    monkeypatch.delenv(PROFILE_DIR_ENV, raising=False)
    assert profile_cache_dir() == tmp_path / "cache" / "host_profiles"
    monkeypatch.setenv(PROFILE_DIR_ENV, str(tmp_path / "own"))
    model = _model(tmp_path / "weights")
    (tmp_path / "weights").mkdir()
    path = cached_profile_path(machine_fingerprint(), model)
    assert path.parent == tmp_path / "own" and not (tmp_path / "cache" / "host_profiles").exists()

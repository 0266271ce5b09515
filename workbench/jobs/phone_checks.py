"""The phone jobs' checks before an MLflow run exists: config, runner build, model folders, the phone.

Each problem is one ``ConfigError`` line naming the setting and its fix; a run never opens to fail
on something these checks can see.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from omegaconf import DictConfig, OmegaConf

from .base import ConfigError


def phone_cfg(cfg: DictConfig) -> Any:
    from phone_runner.session import PhoneConfig

    block = cfg.get("phone")
    if block is None:
        raise ConfigError("phone", "missing: use an experiment that sets it (experiment=native_phone | "
                                   "calibrate_phone | phone_info)")
    try:
        pc = PhoneConfig.from_mapping(OmegaConf.to_container(block, resolve=True))
        pc.argv()
    except ValueError as err:
        raise ConfigError("phone", str(err)) from None
    return pc


def validate(cfg: DictConfig) -> None:
    """Config and phone problems fail here, as one line, before an MLflow run exists."""
    pc = phone_cfg(cfg)
    if not isinstance(cfg.phone.get("producer_probe", False), bool):
        raise ConfigError("phone.producer_probe", f"must be true or false, got {cfg.phone.get('producer_probe')!r}")
    _check_phone(cfg, pc)
    if cfg.job == "calibrate_phone" and not cfg.phone.get("name"):
        raise ConfigError("phone.name", "name the profile to write, e.g. phone.name=my_phone")
    if cfg.job == "calibrate_phone" and pc.engine.get("kind") == "reference" \
            and not cfg.phone.get("write_protocol_check"):
        raise ConfigError("phone.engine.kind", "the reference engine echoes the base profile's prices, so its "
                          "calibration is a protocol check, not a measurement", fix="calibrate with "
                          "phone.engine.kind=torch (or mnn), or set phone.write_protocol_check=true to write it anyway")
    missing = pc.missing_binary() if cfg.job != "phone_info" else None  # phone_info pushes no runner
    if missing is not None:
        raise missing
    if pc.runner == "cpp" and pc.engine.get("kind") == "torch":
        raise ConfigError("phone.engine.kind", "the C++ runner has the reference and mnn engines, not torch",
                          fix="use phone.engine.kind=mnn with phone.runner=cpp, or phone.runner=python for torch")
    if pc.runner == "cpp" and pc.engine.get("kind") == "mnn" and cfg.model.target.get("family") != "whisper":
        raise ConfigError("model.target.family", f"{cfg.model.target.get('family')!r}: the C++ runner's MNN "
                          "engine runs Whisper targets (the host sends their prompt ids and log-mel features)",
                          fix="use a Whisper pair (model=whisper_base) or phone.runner=python")
    _check_models(cfg, pc)
    if cfg.job == "native_phone":
        from .config import budget, device_profile, methods

        budget(cfg)
        methods(cfg)
        device_profile(cfg.device)
        if pc.repetitions < 1:
            raise ConfigError("phone.repetitions", "need at least 1")


def _check_models(cfg: DictConfig, pc: Any) -> None:
    """Every ``phone.models.<role>`` is a local folder. The C++ runner's MNN engine loads only pushed
    folders: the target's for every run, and the producer's too for ``calibrate_phone``, whose native
    As²d run on the calibration window prices the producer as it ran beside the target."""
    for role, folder in pc.models.items():
        if folder is not None and not Path(str(folder)).is_dir():
            raise ConfigError(f"phone.models.{role}", f"{folder!r} is not a folder: give the local model folder "
                              "to push (an exported MNN model holds config.json)")
    if pc.runner != "cpp" or pc.engine.get("kind") != "mnn" or cfg.job == "phone_info":  # phone_info runs no model
        return
    for role in ("target", "producer") if cfg.job == "calibrate_phone" else ("target",):
        if not pc.models.get(role):
            why = " (calibrate_phone runs As²d natively beside the target)" if role == "producer" else ""
            raise ConfigError(f"phone.models.{role}", f"not set: the C++ runner's MNN engine runs the {role} "
                              f"from its exported model folder{why}", fix=f"add phone.models.{role}=<export "
                              "folder> (`python -m workbench.models.mnn.export` prints it; a producer shares "
                              "the target's vocabulary)")


def _check_phone(cfg: DictConfig, pc: Any) -> None:
    """No phone, several phones without a serial, an unauthorized or offline phone, a full disk."""
    from phone_runner.adb import PhoneError, client, select_device
    from phone_runner.deploy import free_kb

    try:
        c = client()
        if cfg.job == "phone_info" and pc.serial is None and any(i.state == "device" for i in c.list()):
            return  # phone_info reads every usable phone
        dev = select_device(pc.serial, c)
        have = free_kb(dev) if cfg.job != "phone_info" else None
        need = int(cfg.phone.get("min_free_mb", 64)) * 1024
    except PhoneError as err:
        raise ConfigError("phone.serial", str(err)) from None
    if cfg.job != "phone_info" and have is not None and have < need:
        raise ConfigError("phone.min_free_mb", f"device {dev.serial} is full: {have // 1024} MB free under "
                          f"/data/local/tmp, {need // 1024} MB needed; free space on the phone, then rerun")

"""Config access and validation for the Hydra jobs: methods and their settings, budget, devices, models.

Jobs read keys as attributes (``cfg.native.repeats``): every default lives in ``conf/`` (the base
``config.yaml``, the groups) and, for scheme settings, in the decoding core's scheme catalog.
A bad value is one ``ConfigError`` naming the key, raised before any work starts.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from omegaconf import DictConfig, OmegaConf

from workbench.decoding import CATALOG, scheme_spec
from workbench.decoding.schemes import MAX_BUDGET
from workbench.native.noise_floor import RepeatRule
from workbench.replay.profile import DeviceProfile, MissingWidthError, load_profile, parse_profile
from workbench.replay.result import ReplayConfig

from .base import ConfigError

CONF = Path(__file__).resolve().parents[2] / "conf"
# Method-file keys that are not scheme settings: the name, and each list a paper row averages (SD's widths, D.1.3).
JOB_KEYS = ("name", *dict.fromkeys(s.averages for s in CATALOG.values() if s.averages))


def method_file(cfg: DictConfig, name: str) -> dict[str, Any]:
    """The ``conf/method`` mapping of ``name``: the composed ``method`` group if it is that one, else its file."""
    if cfg.method.name == name:
        return OmegaConf.to_container(cfg.method, resolve=True)
    path = CONF / "method" / f"{name}.yaml"
    if not path.is_file():
        known = sorted(p.stem for p in (CONF / "method").glob("*.yaml"))
        raise ConfigError("methods", f"unknown method {name!r}; choose from {known}")
    return OmegaConf.to_container(OmegaConf.load(path), resolve=True)


def method_settings(cfg: DictConfig, name: str, device_budget: int | None = None) -> dict[str, Any]:
    """Every scheme setting of method ``name``: catalog defaults, its ``conf/method`` values, ``model.budget``
    (or ``device_budget``: one device's own budget, ``jobs.budgets.device_budget``, A.2)."""
    m = {k: v for k, v in method_file(cfg, name).items() if k not in JOB_KEYS}
    spec = scheme_spec(name)
    if "budget" in spec.defaults:  # the proposal budget: the model pair's, or the device's deployed one (D.2.6)
        m["budget"] = budget(cfg) if device_budget is None else device_budget
    try:
        return spec.settings(**m)
    except ValueError as err:
        raise ConfigError(f"method.{name}" if cfg.method.name != name else "method", str(err)) from err


def methods(cfg: DictConfig) -> list[str]:
    names = list(cfg.methods) if cfg.methods else [cfg.method.name]
    for n in names:
        method_settings(cfg, n)
    return names


def budget(cfg: DictConfig) -> int:
    b = cfg.model.budget
    if isinstance(b, bool) or not isinstance(b, int) or not 1 <= b <= MAX_BUDGET:
        raise ConfigError("model.budget", f"must be an integer proposal budget in [1, {MAX_BUDGET}], got {b!r}")
    return b


def replay_configs(cfg: DictConfig, name: str, source: str | None,
                   profile: DeviceProfile | None = None, device_budget: int | None = None) -> list[ReplayConfig]:
    """The replay configurations behind one method; standard SD averages its widths (D.1.3).

    ASP's cap is per device, as in the paper (24 on K70, 14 where K16+ was never measured,
    D.2.3): a cap beyond the profile's widest priced width is lowered to fit, and the config
    label (``asp/cap14``) says so.
    """
    s = method_settings(cfg, name, device_budget)
    spec = scheme_spec(name)
    if profile is not None and "cap" in s:
        s["cap"] = min(int(s["cap"]), max(profile.verifier.widths()) - 1)
    if spec.averages and spec.chain_setting:  # the paper's row averages these values of the chain setting
        values = method_file(cfg, name).get(spec.averages) or [s[spec.chain_setting]]
        return [ReplayConfig(name, **{**s, spec.chain_setting: int(k)}) for k in values]
    return [ReplayConfig(name, source=source if spec.decoupled else None, **s)]


def repeat_rule(node: DictConfig, key: str = "native", reps: str = "repeats",
                max_reps: str = "max_repeats") -> RepeatRule:
    """Measured repetitions per window (``noise_floor.RepeatRule``) from ``<key>.<reps>``,
    ``<key>.<max_reps>`` and ``<key>.noise_goal_pct``; one config error line when they do not make one."""
    n, cap, goal = node.get(reps), node.get(max_reps), node.get("noise_goal_pct")
    if not isinstance(n, int) or isinstance(n, bool) or n < 1:
        raise ConfigError(f"{key}.{reps}", f"need an integer >= 1, got {n!r}")
    if cap is not None and (not isinstance(cap, int) or isinstance(cap, bool) or cap < n):
        raise ConfigError(f"{key}.{max_reps}", f"need null or an integer >= {key}.{reps} ({n}), got {cap!r}")
    if isinstance(goal, bool) or not isinstance(goal, int | float) or not goal > 0:
        raise ConfigError(f"{key}.noise_goal_pct", f"need a positive percentage, got {goal!r}")
    return RepeatRule(n, cap, float(goal))


def check_models(cfg: DictConfig, roles: Sequence[str] = ("target", "drafter", "serial_drafter")) -> None:
    """Fail before any work if a model's weights cannot be found (one error, three remedies)."""
    from workbench.models.registry import MissingWeightsError, ModelSpec, resolve_weights

    for role in roles:
        if cfg.model.get(role) is None:  # serial_drafter is optional: a shared-vocabulary producer serves SD/ASP
            continue
        try:
            resolve_weights(ModelSpec.from_dict(OmegaConf.to_container(cfg.model[role], resolve=True)))
        except MissingWeightsError as err:
            raise ConfigError(f"model.{role}", str(err)) from err


def device_profile(name_or_cfg: str | DictConfig, cfg: DictConfig | None = None) -> DeviceProfile:
    """A device profile. With the run's ``cfg`` (host replay: ``devices``, the demo), ``host`` is this
    machine's (``workbench.native.fingerprint.host_profile``): never another machine's costs --
    calibrate first or refuse, as ``calibration.on_mismatch`` says. Without it (a phone job's protocol
    base), the file as written."""
    name = name_or_cfg if isinstance(name_or_cfg, str) else str(name_or_cfg.get("name"))
    if name == "host" and cfg is not None:
        return _host_profile(cfg)
    if isinstance(name_or_cfg, str):
        try:
            return load_profile(name_or_cfg)
        except FileNotFoundError as err:
            from workbench.replay.profile import DEVICE_DIR

            known = sorted(p.stem for p in DEVICE_DIR.glob("*.yaml"))
            raise ConfigError("devices", f"no device profile {name_or_cfg!r} (conf/device/{name_or_cfg}.yaml)",
                              fix=f"choose from {', '.join(known)}") from err
    raw = OmegaConf.to_container(name_or_cfg, resolve=True)
    return parse_profile(raw, file=f"conf/device/{raw['name']}.yaml")


def _host_profile(cfg: DictConfig) -> DeviceProfile:
    from workbench.models.registry import MissingWeightsError
    from workbench.native.fingerprint import HostProfileMismatch, host_profile

    model = OmegaConf.to_container(cfg.model, resolve=True)
    policy = str(cfg.calibration.get("on_mismatch", "calibrate"))
    try:
        return host_profile(model, policy, attempts=int(cfg.calibration.attempts))  # type: ignore[arg-type]
    except MissingWeightsError as err:  # a fresh machine calibrates with the pair's weights first
        raise ConfigError("model.target", str(err)) from None
    except HostProfileMismatch as err:
        raise ConfigError("calibration.on_mismatch", str(err)) from None
    except ValueError as err:
        raise ConfigError("calibration.on_mismatch", str(err)) from None


def kernel_plan_profile(cfg: DictConfig) -> DeviceProfile | None:
    """This machine's host profile when one is already calibrated (never calibrates), for a job that
    only needs the target's kernel plan (``kernels: auto``): every method, target-only included, then
    runs the fastest kernel per width this machine measured. None, with one line saying how to get
    one, when the machine has no profile yet: the target keeps its configured kernels. The plan is
    torch's (MNN chooses its own kernels): with ``model.engine=mnn`` it is the torch calibration's, for
    the torch target-only that run compares against."""
    from workbench.native.fingerprint import HostProfileMismatch, host_profile

    model = {**OmegaConf.to_container(cfg.model, resolve=True), "engine": "torch"}  # type: ignore[dict-item]
    if (model.get("target") or {}).get("kernels") != "auto":  # type: ignore[union-attr]
        return None
    try:
        return host_profile(model, "refuse")  # type: ignore[arg-type]
    except HostProfileMismatch:
        print("no host calibration of this machine yet: the target runs its plain kernels; "
              "`python -m workbench.run experiment=calibrate_host` gives it this machine's kernel plan")
        return None


def devices(cfg: DictConfig) -> list[DeviceProfile]:
    """``devices: [..]`` for multi-device jobs, else the composed ``device`` group; each under the run's
    model pair's own cost block where the profile carries one (``replay.targets``: Omni on K70, D.1.2)."""
    from workbench.replay.targets import MissingTargetCosts, for_model

    found = [device_profile(str(d), cfg) for d in cfg.devices] if cfg.devices else [device_profile(cfg.device, cfg)]
    try:
        return [for_model(p, str(cfg.model.name)) for p in found]
    except MissingTargetCosts as err:
        raise ConfigError("devices" if cfg.devices else "device", str(err)) from None


def check_widths(profile: DeviceProfile, names: Sequence[str], cfg: DictConfig,
                 device_budget: int | None = None) -> None:
    """Fail before any work if a method needs a physical width the profile does not price."""
    for name in names:
        for rc in replay_configs(cfg, name, None, profile, device_budget):
            try:
                profile.verify_ms(rc.widest_width)
            except MissingWidthError as err:
                raise ConfigError("model.budget" if "as2d" in name else "method",
                                  f"{name} needs physical width K={rc.widest_width}, but device {profile.name!r} "
                                  f"does not price it ({err})") from err


def source_roles(cfg: DictConfig) -> dict[str, list[str]]:
    """Role -> profile source names to try: the pair's own producer model, then ``source_roles``."""
    roles = {k: [v] for k, v in OmegaConf.to_container(cfg.source_roles, resolve=True).items()}
    roles.setdefault("producer", []).insert(0, str(cfg.model.drafter.name))  # e.g. the host's measured tiny.en
    return roles


__all__ = ["CONF", "budget", "check_models", "check_widths", "device_profile", "devices", "method_file",
           "method_settings", "methods", "replay_configs", "source_roles"]

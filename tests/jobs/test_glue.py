"""Jobs are glue: scheme facts come from the catalog, goals and fallbacks from conf/, no device name in code."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import polars as pl
import pytest
from hydra import compose, initialize_config_dir
from omegaconf import OmegaConf

from workbench.decoding import CATALOG
from workbench.decoding.schemes.catalog import BEYOND_PAPER, HOST_ONLY, ON_PHONE
from workbench.jobs import adaptive
from workbench.jobs.base import ConfigError
from workbench.jobs.config import JOB_KEYS
from workbench.replay import adaptive as A

ROOT = Path(__file__).resolve().parents[2]
CONF = ROOT / "conf"
JOBS = sorted((ROOT / "workbench" / "jobs").glob("*.py"))
# Phone profiles are data (conf/device); the host's own profile is the concept "this machine", not a device.
DEVICES = sorted(p.stem for p in (CONF / "device").glob("*.yaml") if p.stem != "host")


def _cfg(*overrides: str):
    with initialize_config_dir(config_dir=str(CONF), version_base=None):
        return compose("config", overrides=["experiment=adaptive", *overrides])


def test_no_device_name_in_job_code():
    assert DEVICES and JOBS
    pattern = re.compile(r"\b(" + "|".join(map(re.escape, DEVICES)) + r")\b")
    found = []
    for path in [*JOBS, ROOT / "workbench" / "replay" / "adaptive.py"]:
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and pattern.search(node.value):
                found.append(f"{path.relative_to(ROOT)}:{node.lineno}: {pattern.search(node.value).group(0)}")
    assert not found, "device names belong in conf/, not in code:\n" + "\n".join(found)


def test_the_goals_are_the_experiment_configs():
    table = pl.DataFrame({"device": ["a", "b", "a"], "method": ["as2d_adaptive", "as2d_adaptive", "as2d"],
                          "of_oracle": [0.985, 0.985, 0.5], "vs_fixed": [0.0, -0.02, 0.0]})
    met = adaptive.goals(table, _cfg("+adaptive.goals.of_oracle_by_device.a=0.98"))
    assert met.to_dicts() == [{"device": "a", "oracle_goal_met": True, "fixed_goal_met": True},
                              {"device": "b", "oracle_goal_met": False, "fixed_goal_met": False}]
    stricter = adaptive.goals(table, _cfg("adaptive.goals.of_oracle=0.98", "adaptive.goals.vs_fixed=-0.05"))
    assert stricter["oracle_goal_met"].to_list() == [True, True] and stricter["fixed_goal_met"].all()
    yaml = OmegaConf.load(CONF / "experiment" / "adaptive.yaml").adaptive.goals
    assert adaptive.goals_of(_cfg()) == A.Goals(yaml.of_oracle, dict(yaml.of_oracle_by_device), yaml.vs_fixed)


def test_a_bad_goal_is_named():
    with pytest.raises(ConfigError, match="adaptive.goals"):
        adaptive.validate(_cfg("adaptive.goals.of_oracle=high"))


def test_scheme_facts_come_from_the_catalog():
    assert A.VARIANTS == BEYOND_PAPER and A.ORDER[2:-2] == BEYOND_PAPER
    assert {n for n in A.VARIANTS if CATALOG[n].needs_costs} == {"as2d_online", "as2d_sources", "as2d_adaptive"}
    assert {n for n in A.VARIANTS if CATALOG[n].multi_source} == {"as2d_sources", "as2d_adaptive"}
    assert set(ON_PHONE) | set(HOST_ONLY) == set(CATALOG) and not set(ON_PHONE) & set(HOST_ONLY)
    assert JOB_KEYS == ("name", "widths")  # sd.yaml's widths: the paper's row averages K = 5-8 (D.1.3)

"""conf/method/*.yaml and the scheme catalog state the same defaults (the catalog is their one source)."""

from __future__ import annotations

from pathlib import Path

import pytest
from omegaconf import OmegaConf

from workbench.decoding import CATALOG
from workbench.jobs.config import JOB_KEYS

METHODS = Path(__file__).resolve().parents[2] / "conf" / "method"


def test_every_catalog_scheme_has_a_method_file():
    assert sorted(p.stem for p in METHODS.glob("*.yaml")) == sorted(CATALOG)


@pytest.mark.parametrize("name", sorted(CATALOG))
def test_a_method_file_equals_the_catalog_defaults(name):
    raw = OmegaConf.to_container(OmegaConf.load(METHODS / f"{name}.yaml"), resolve=True)
    spec = CATALOG[name]
    assert raw.pop("name") == name
    if spec.averages:  # a list of chain-setting values the paper's row averages, the default among them
        assert spec.defaults[spec.chain_setting] in raw.pop(spec.averages)
    assert not set(raw) & set(JOB_KEYS)
    unknown = sorted(set(raw) - set(spec.defaults))
    assert not unknown, f"conf/method/{name}.yaml: {unknown} are not settings of {name}"
    differ = {k: (v, spec.defaults[k]) for k, v in raw.items()
              if v != spec.defaults[k] or isinstance(v, bool) != isinstance(spec.defaults[k], bool)}
    assert not differ, f"conf/method/{name}.yaml disagrees with the catalog (yaml, catalog): {differ}"

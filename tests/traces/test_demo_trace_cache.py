"""The demo's traces on the real offline Whisper pair: a changed cap or quantization re-collects.

A cache keyed on ``model.name`` only would replay old traces after a ``model.max_new_tokens``
change; the key holds every setting that changes a trace. One short clip and a small cap keep
this to a few model forwards.
"""

from __future__ import annotations

import logging
import shutil
import uuid
from pathlib import Path

import pytest
from hydra import compose, initialize_config_dir

from workbench.jobs.demo_traces import demo_windows
from workbench.models.cache import cache_root

CONF = Path(__file__).resolve().parents[2] / "conf"


def _cfg(name: str, *overrides: str):
    with initialize_config_dir(str(CONF), version_base="1.3"):
        return compose("config", overrides=["experiment=demo", "dataset.max_windows=1", f"model.name={name}",
                                            "model.external_sources=[]", "model.serial_drafter=null", *overrides])


@pytest.fixture
def pair_name():
    name = f"test-trace-key-{uuid.uuid4().hex[:8]}"
    yield name
    traces = cache_root() / "traces"
    for d in [*traces.glob(f"{name}-*"), *(traces / "quarantine").glob(f"{name}-*")]:
        shutil.rmtree(d, ignore_errors=True)  # only this test's folders: the cache is shared


def test_changed_cap_recollects_and_says_so_then_reuses(pair_name, caplog):
    caplog.set_level(logging.WARNING)
    w6 = demo_windows(_cfg(pair_name, "model.max_new_tokens=6"))
    assert w6[0].max_output == 6 and len(w6[0].reference) <= 6
    w4 = demo_windows(_cfg(pair_name, "model.max_new_tokens=4"))
    assert w4[0].max_output == 4 and len(w4[0].reference) <= 4
    assert "key changed (cap: 6 -> 4" in caplog.text
    assert len(list((cache_root() / "traces").glob(f"{pair_name}-*"))) == 2
    caplog.clear()
    again = demo_windows(_cfg(pair_name, "model.max_new_tokens=6"))  # valid entries are reused silently
    assert again[0].reference == w6[0].reference and caplog.text == ""

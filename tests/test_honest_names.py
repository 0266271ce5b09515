"""No paper model name on data it did not make: run params, run names and figure legends.

A phone profile prices this workbench's producer (Whisper tiny.en) and chunk source (PocketSphinx)
with the paper's Qwen and Parakeet costs. Only the pricing params (``priced_as``, ``source_roles.*``)
may say so; a source is named by what produced it everywhere else. Real jobs run into a real store
(synthetic windows, made by no model), and the configuration records of the speech demo are built
from its composed config.
"""

from __future__ import annotations

import re
import sqlite3
import subprocess
import sys
from pathlib import Path

import polars as pl
from hydra import compose, initialize_config_dir

from workbench.tracking.run_records import child_records, source_names
from workbench.tracking.store import flatten

ROOT = Path(__file__).resolve().parents[1]
PAPER_MODELS = re.compile(r"qwen|parakeet", re.IGNORECASE)
PRICING_KEYS = {"priced_as", "source_roles.producer", "source_roles.chunk"}  # what priced a trace, by name


def _run(*args: str) -> None:
    done = subprocess.run([sys.executable, "-m", "workbench.run", *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]


def test_runs_and_figures_of_synthetic_jobs_name_no_paper_model(tmp_path: Path) -> None:
    db = tmp_path / "mlflow.db"
    _run("experiment=replay", "dataset.n_windows=3", "+devices=[k70_pro]", "methods=[target_only,as2d]",
         f"tracking.uri=sqlite:///{db}", f"out_dir={tmp_path / 'replay'}")
    _run("experiment=oracle", "dataset.n_windows=6", "budgets=[2,3]", "+devices=[k70_pro]",
         f"tracking.uri=sqlite:///{db}", f"out_dir={tmp_path / 'oracle'}")
    with sqlite3.connect(db) as con:
        params = con.execute("select r.name, p.key, p.value from params p join runs r on r.run_uuid = p.run_uuid"
                             ).fetchall()
        tags = con.execute("select r.name, t.key, t.value from tags t join runs r on r.run_uuid = t.run_uuid"
                           ).fetchall()
        names = [n for (n,) in con.execute("select name from runs")]
    # the pricing params are there, and say what priced the producer's trace
    assert ("as2d-b3-k70_pro-replay-synthetic", "priced_as", "qwen") in params
    assert ("as2d-b3-k70_pro-replay-synthetic", "source", "synthetic producer") in params
    bad = [(n, k, v) for n, k, v in params + tags if k not in PRICING_KEYS and PAPER_MODELS.search(v)]
    assert not bad, f"paper model names on runs of synthetic data: {bad}"
    assert all(n.endswith("-synthetic") for n in names), names  # synthetic runs say so in their name
    legends = {f: f.read_text() for f in tmp_path.glob("*/figures/*.svg")}
    assert any("budget_tradeoff" in f.name for f in legends), sorted(legends)
    named = [f.name for f, text in legends.items() if PAPER_MODELS.search(text)]
    assert not named, f"figure legends naming a paper model: {named}"


def test_speech_configuration_runs_name_the_producer() -> None:
    with initialize_config_dir(config_dir=str(ROOT / "conf"), version_base="1.3"):
        cfg = compose("config", overrides=["experiment=demo"])
    names = source_names(flatten(cfg))
    assert names["qwen"] == str(cfg.model.drafter.name) and not PAPER_MODELS.search(" ".join(names.values()))
    summary = pl.DataFrame({"device": ["xiaomi_14", "xiaomi_14"], "method": ["target_only", "as2d"],
                            "tps": [20.0, 30.0], "speedup": [1.0, 1.5]})
    windows = pl.DataFrame({"device": ["xiaomi_14"] * 2, "method": ["target_only", "as2d"],
                            "config": ["target_only", "as2d/qwen/b3"]})
    selection = pl.DataFrame({"device": ["xiaomi_14"], "selected": ["parakeet/b7"]})
    metrics = {"xiaomi_14.selected_budget": 7.0, "xiaomi_14.tps_selected": 31.0, "xiaomi_14.tps_oracle": 32.0,
               "xiaomi_14.oracle_gap": 3.1}
    records = child_records(summary, metrics, {"windows": windows, "selection": selection}, cfg)
    as2d, sel = records[1], records[2]
    assert as2d["params"]["config"] == f"as2d/{cfg.model.drafter.name}/b3" and as2d["params"]["priced_as"] == "qwen"
    # a configuration run logs only its own configuration's numbers; the dev-split verdict has its own run
    assert "oracle_gap" not in as2d["metrics"] and "tps_selected" not in as2d["metrics"]
    assert sel["role"] == "selection" and sel["metrics"]["oracle_gap"] == 3.1
    assert not PAPER_MODELS.search(sel["params"]["selected"]) and sel["params"]["selected"].endswith("/b7")
    for rec in records:
        assert rec["description"] and not PAPER_MODELS.search(rec["name"] + rec["description"])
        assert not [k for k, v in rec["params"].items() if k not in PRICING_KEYS and PAPER_MODELS.search(v)]

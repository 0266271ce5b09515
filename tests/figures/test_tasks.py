"""Table 3 (task speed beside quality) and B.1 (per-corpus acceptance) from a real MLflow store.

Runs are logged the way the jobs log them (params, ``quality.*`` metrics, ``tables/<name>.parquet``);
the numbers in the tables are small enough to check by hand. The notebooks run against the same
store with nbclient (as ``pytest --nbmake`` would).
"""

from __future__ import annotations

from pathlib import Path

import mlflow
import nbformat
import polars as pl
import pytest

from tests.notebook_exec import execute_notebook
from workbench.figures import tasks
from workbench.figures.runs import MissingTable, NoRuns

NOTEBOOKS = Path(__file__).resolve().parents[2] / "notebooks"


def _log_run(uri: str, experiment: str, tables: dict[str, pl.DataFrame], params: dict[str, str],
             metrics: dict[str, float], tmp: Path) -> None:
    mlflow.set_tracking_uri(uri)
    mlflow.set_experiment(experiment)
    with mlflow.start_run():
        mlflow.set_tags({"as2d.role": "job", "job": experiment.removeprefix("as2d-")})
        mlflow.log_params(params)
        mlflow.log_metrics(metrics)
        for name, frame in tables.items():
            path = tmp / f"{name}.parquet"
            frame.write_parquet(path)
            mlflow.log_artifact(str(path), "tables")


def _windows(dataset: str) -> pl.DataFrame:
    rows = []
    # two windows; target_only 10 tokens in 1 s each; SD two widths; As²d faster
    for wid in ("w1", "w2"):
        rows.append(dict(method="target_only", config="target_only", window_id=wid, tokens=10, time=1.0))
        rows.append(dict(method="sd", config="sd/k5", window_id=wid, tokens=10, time=2.0))
        rows.append(dict(method="sd", config="sd/k8", window_id=wid, tokens=10, time=0.8))
        rows.append(dict(method="as2d", config="as2d/b3", window_id=wid, tokens=10, time=0.5))
    return pl.DataFrame(rows).with_columns(pl.lit("k70_pro").alias("device"), pl.lit(dataset).alias("dataset"),
                                           (pl.col("tokens") / pl.col("time")).alias("tps"),
                                           (pl.col("tokens") - 2).alias("useful_tokens"))  # each ends with EOS


@pytest.fixture(scope="module")
def store(tmp_path_factory) -> str:
    root = tmp_path_factory.mktemp("tasks_store")
    uri = f"sqlite:///{root / 'mlflow.db'}"
    quality = pl.DataFrame({"window_id": ["w1", "w2"], "dataset": ["covost2_en_zh"] * 2, "task": ["translation"] * 2,
                            "language": ["en"] * 2, "reference": ["a", "b"], "output": ["a", "c"],
                            "score": [80.0, 40.0]})
    _log_run(uri, "as2d-replay", {"windows": _windows("covost2_en_zh"), "quality": quality},
             {"dataset.name": "covost2_en_zh"}, {"quality.bleu": 31.5, "quality.chrf": 60.0}, root)
    probe = pl.DataFrame({"block_id": ["a", "b", "c", "d", "e"], "dataset": ["ami"] * 3 + ["librispeech"] * 2,
                          "stale_acceptance": [0.0, 0.5, 1.0, 0.25, None], "fresh_acceptance": [0.5] * 5})
    _log_run(uri, "as2d-context_probe", {"context_probe": probe}, {"dataset.name": "mixed"}, {}, root)
    return uri


def test_task_tps_pools_per_configuration_and_gains_over_the_fastest_baseline() -> None:
    t = tasks.task_tps(_windows("spoken_squad"))
    tps = {r["method"]: r["tps"] for r in t.iter_rows(named=True)}
    # over useful tokens (10 - first - EOS = 8 per window, D.1.2):
    # SD: K5 pools 16/4 = 4, K8 pools 16/1.6 = 10 -> mean 7; target-only 8; As²d 16
    assert tps == pytest.approx({"as2d": 16.0, "sd": 7.0, "target_only": 8.0})
    (gain,) = t.filter(pl.col("method") == "as2d")["gain_pct"].to_list()
    assert gain == pytest.approx(100.0)  # over target-only, the fastest baseline here
    with pytest.raises(MissingTable, match="useful_tokens"):  # a run logged before task TPS counted them
        tasks.task_tps(_windows("spoken_squad").drop("useful_tokens"))


def test_table3_reads_speed_and_quality_from_the_run(store: str) -> None:
    result = tasks.table3_tasks("as2d-replay", uri=store)
    speed = next(v for k, v in result.tables.items() if "pooled TPS" in k)
    row = speed.row(0, named=True)
    assert row["dataset"] == "covost2_en_zh" and row["as2d"] == 16.0 and row["gain_pct"] == pytest.approx(100.0)
    quality = next(v for k, v in result.tables.items() if "task quality" in k).row(0, named=True)
    assert quality["windows"] == 2 and quality["mean_score"] == 60.0 and quality["bleu"] == 31.5
    paper = next(v for k, v in result.tables.items() if k.startswith("paper"))
    assert paper.filter(pl.col("method") == "as2d")["EN→ZH"].item() == 9.52  # Table 3, K70 Pro


def test_b1_distribution_per_corpus_beside_the_paper_medians(store: str) -> None:
    result = tasks.b1_acceptance("as2d-context_probe", uri=store)
    dist = next(v for k, v in result.tables.items() if k.startswith("this run"))
    ami = dist.filter(pl.col("dataset") == "ami").row(0, named=True)
    assert ami["blocks"] == 3 and ami["median_acceptance"] == 0.5 and ami["zero_share"] == pytest.approx(1 / 3)
    assert ami["paper_median"] == 0.55
    libri = dist.filter(pl.col("dataset") == "librispeech").row(0, named=True)
    assert libri["blocks"] == 1 and libri["paper_median"] is None  # a block without a proposal is left out


def test_missing_runs_and_tables_name_the_command(store: str) -> None:
    with pytest.raises(MissingTable, match="experiment=replay model=qwen2_5_omni dataset=covost2_en_zh"):
        tasks.table3_tasks("as2d-context_probe", uri=store)
    with pytest.raises(MissingTable, match="experiment=context_probe"):
        tasks.b1_acceptance("as2d-replay", uri=store)
    with pytest.raises(NoRuns):
        tasks.b1_acceptance("as2d-nothing", uri=store)


def _execute(name: str, env: dict[str, str], monkeypatch: pytest.MonkeyPatch) -> str:
    for k, v in env.items():
        monkeypatch.setenv(k, v)  # the kernel inherits the environment at launch
    nb = nbformat.read(NOTEBOOKS / f"{name}.ipynb", as_version=4)
    execute_notebook(nb, NOTEBOOKS)
    return "".join(o.get("text", "") for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", [])
                   if o.get("output_type") == "stream" and o.get("name") == "stdout")


@pytest.mark.parametrize(("name", "experiment", "png"), [("table3_tasks", "as2d-replay", "table3_tasks_tps.png"),
                                                         ("b1_acceptance", "as2d-context_probe",
                                                          "b1_acceptance_acceptance.png")])
def test_notebook_renders_this_run(name, experiment, png, store, tmp_path, monkeypatch):
    """With runs: this run's figure, nothing reported missing. (Without runs each notebook prints one
    'no ...' line and writes no figure: tests/test_demo.py runs them against the demo store, CANNOT_FEED.)"""
    out = _execute(name, {"MLFLOW_TRACKING_URI": store, "AS2D_NOTEBOOK_EXPERIMENT": experiment,
                          "AS2D_FIGURES_DIR": str(tmp_path)}, monkeypatch)
    assert (tmp_path / png).stat().st_size > 1000, out[-2000:]
    assert not [ln for ln in out.splitlines() if ln.startswith("no ")]

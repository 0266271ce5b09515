"""Figures of jobs the demo does not run (on-demand requests, streaming, cost sensitivity) draw the runs
their selector names, against a real sqlite MLflow store.

Each experiment holds an older and a newer job run whose tables differ, so every assertion can tell
which run was drawn: the default draws the newest, an explicit RUN the one it names (even with a newer
run beside it), and the chart's subtitle and the printed selection name what was drawn.
"""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest
from mlflow.tracking import MlflowClient

from workbench.figures import adaptive, native_jobs, report, sensitivity
from workbench.figures.runs import MissingTable, NoRuns
from workbench.figures.selection import Selector


def _job(client: MlflowClient, exp: str, name: str, tables: dict[str, pl.DataFrame], tmp: Path) -> str:
    exp_id = (client.get_experiment_by_name(exp) or client.get_experiment(client.create_experiment(
        exp, artifact_location=(tmp / "artifacts" / exp).as_uri()))).experiment_id
    run = client.create_run(exp_id, run_name=name, tags={"job": exp.removeprefix("as2d-"), "as2d.role": "job",
                                                         "synthetic": "False"})
    for table, frame in tables.items():
        path = tmp / run.info.run_id / f"{table}.parquet"
        path.parent.mkdir(parents=True, exist_ok=True)
        frame.write_parquet(path)
        client.log_artifact(run.info.run_id, str(path), "tables")
    client.set_terminated(run.info.run_id, "FINISHED")
    return run.info.run_id


def _requests(tps: float, energy: bool) -> pl.DataFrame:
    frame = pl.DataFrame({"method": ["target_only", "as2d"], "checkpoint_s": [30.0, 30.0],
                          "request_tps": [tps, 2 * tps], "latency_s": [2.0, 1.0], "ttft_s": [0.5, 0.5],
                          "decode_tps": [tps, 2 * tps], "peak_rss_mb": [900.0, 950.0], "exact": [True, True],
                          "word_agreement": [True, True], "tokens": [20, 20]})
    return frame.with_columns(pl.Series("energy_j", [10.0, 4.0])) if energy else frame


def _sensitivity(gap: float) -> dict[str, pl.DataFrame]:
    oracle = pl.DataFrame({"device": "k70_pro", "scenario": ["nominal", "low", "high"], "ratio": [0.5, 0.4, 0.6],
                           "selected": "qwen/b3", "tps_selected": 10.0, "tps_oracle": 10.2,
                           "oracle_gap": [gap, gap + 1, gap + 2]})
    ablation = pl.DataFrame({"device": "k70_pro", "scenario": ["nominal", "high"], "ratio": [0.5, 0.6],
                             "method": "as2d_wo_bc", "tps": [20.0, 19.0], "change_pct": [0.0, -5.0]})
    return {"sensitivity_oracle": oracle, "sensitivity_ablation": ablation}


def _adaptive(of_oracle: float) -> pl.DataFrame:
    return pl.DataFrame({"device": "xiaomi_14", "method": ["as2d_fixed", "as2d_adaptive"], "config": ["f", "a"],
                         "tps": [20.0, 21.0], "slower_than_target": [0.0, 0.0], "of_oracle": [0.97, of_oracle],
                         "vs_fixed": [0.0, 0.05]})


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    tmp = tmp_path_factory.mktemp("jobs")
    uri = f"sqlite:///{tmp / 'mlflow.db'}"
    client = MlflowClient(uri)
    ids = {"uri": uri}
    ids["ondemand_old"] = _job(client, "as2d-ondemand", "ondemand-old", {"requests": _requests(5.0, True)}, tmp)
    ids["ondemand_new"] = _job(client, "as2d-ondemand", "ondemand-new", {"requests": _requests(9.0, False)}, tmp)
    ids["sens_old"] = _job(client, "as2d-sensitivity", "sens-old", _sensitivity(1.0), tmp)
    ids["sens_new"] = _job(client, "as2d-sensitivity", "sens-new", _sensitivity(3.0), tmp)
    ids["adaptive_old"] = _job(client, "as2d-adaptive", "adaptive-old", {"adaptive": _adaptive(0.99)}, tmp)
    ids["adaptive_new"] = _job(client, "as2d-adaptive", "adaptive-new", {"adaptive": _adaptive(0.95)}, tmp)
    ids["demo"] = _job(client, "as2d-demo", "demo", {}, tmp)  # a demo run logs neither table
    return ids


@pytest.fixture(autouse=True)
def _at_store(store: dict[str, str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MLFLOW_TRACKING_URI", store["uri"])
    monkeypatch.delenv("AS2D_NOTEBOOK_EXPERIMENT", raising=False)


def _subtitle(chart) -> str:  # noqa: ANN001 -- an Altair chart
    sub = chart.to_dict()["title"]["subtitle"]
    return sub if isinstance(sub, str) else "\n".join(sub)


def test_ondemand_defaults_to_its_own_jobs_newest_run_not_the_demo(store: dict[str, str]) -> None:
    result = native_jobs.fig7_ondemand(Selector())
    assert [r.info.run_id for r in result.runs] == [store["ondemand_new"]]
    assert result.selection is not None and result.selection.experiment == "as2d-ondemand"
    # the printed selection names the one run the table came from, and the older one as left out
    assert [r.info.run_id for r in result.selection.runs] == [store["ondemand_new"]]
    assert result.selection.title().startswith(f"run {store['ondemand_new'][:8]} (ondemand-new)")
    assert "left out: 1 other run(s) of experiment as2d-ondemand" in result.selection.describe()
    latency = next(iter(result.tables.values()))
    assert latency.filter(pl.col("method") == "as2d")["request_tps_p50"].item() == 18.0  # the newer run's numbers


def test_an_explicit_run_draws_that_run_beside_a_newer_one_and_the_title_names_it(store: dict[str, str]) -> None:
    old = store["ondemand_old"]
    result = native_jobs.fig7_ondemand(Selector(run=old[:8]))
    assert [r.info.run_id for r in result.runs] == [old]
    latency = next(iter(result.tables.values()))
    assert latency.filter(pl.col("method") == "as2d")["request_tps_p50"].item() == 10.0  # the older run's numbers
    title = result.selection.title()
    assert f"run {old[:8]} (ondemand-old)" in title and "as2d-ondemand" in title
    assert title in _subtitle(result.charts["ondemand"])
    assert result.selection.describe().startswith(f"selection: {title}")
    # Table 15 from the same selector: the older run logged energy, the newer did not.
    energy = native_jobs.table15_energy(Selector(run=old))
    (table,) = energy.tables.values()
    assert table["j_per_token"].to_list() == [0.5, 0.2] and energy.selection.title() == title
    newest = native_jobs.table15_energy()
    assert not newest.tables and newest.notes[0].startswith(f"no energy columns in run {store['ondemand_new'][:8]}")


def test_sensitivity_draws_the_selected_run_and_names_it(store: dict[str, str]) -> None:
    default = sensitivity.sensitivity()
    assert [r.info.run_id for r in default.runs] == [store["sens_new"]]
    old = sensitivity.sensitivity(Selector(run=store["sens_old"]))
    assert [r.info.run_id for r in old.runs] == [store["sens_old"]]
    gaps = old.tables["this run: oracle gap range over the scenarios"].row(0, named=True)
    assert (gaps["gap_min_pct"], gaps["gap_max_pct"]) == (1.0, 3.0)  # the older run's gaps, not 3..5
    title = old.selection.title()
    assert f"run {store['sens_old'][:8]}" in title
    assert all(title in _subtitle(c) for c in old.charts.values())


def test_without_the_table_one_line_names_the_command(store: dict[str, str], capsys: pytest.CaptureFixture) -> None:
    with pytest.raises(MissingTable, match="this figure needs `python -m workbench.run experiment=streaming"):
        native_jobs.fig9_streaming(Selector(run=store["ondemand_new"]))
    with pytest.raises(MissingTable, match="this figure needs `python -m workbench.run experiment=sensitivity"):
        sensitivity.sensitivity(Selector(experiment="as2d-demo"))
    with pytest.raises(NoRuns, match="run `python -m workbench.run experiment=streaming duration_s=600` first"):
        native_jobs.table16_streaming()
    assert report.guarded(native_jobs.fig9_streaming, Selector()) is None
    (line,) = capsys.readouterr().out.splitlines()
    assert line.startswith("no runs in experiment 'as2d-streaming'") and "experiment=streaming" in line


def test_adaptive_draws_the_named_run_and_says_its_dev_choices_are_missing(store: dict[str, str]) -> None:
    result = adaptive.adaptive(Selector(run=store["adaptive_old"]))
    assert [r.info.run_id for r in result.runs] == [store["adaptive_old"]]
    (met,) = result.tables["this run: goals of the combination (docs/adaptive.md)"]["oracle goal met"].to_list()
    assert met  # 0.99 >= Xiaomi 14's 98% goal; the newer run (0.95) misses it
    assert result.selection.title() in _subtitle(result.charts["ablation"])
    assert any("to log the dev choices" in n for n in result.notes)
    newest = adaptive.adaptive().tables["this run: goals of the combination (docs/adaptive.md)"]
    assert newest["oracle goal met"].to_list() == [False]  # the default draws the newer run

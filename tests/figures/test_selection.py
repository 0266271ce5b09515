"""Notebook selection (workbench/figures/selection.py) against a real sqlite MLflow store.

The store holds what a researcher's store holds after ``make demo``, a budget sweep and a synthetic
replay: a demo job run, a sweep parent with two job runs (budgets 3 and 7, one of them with a
target-only), and a synthetic replay run. Each test asks a selector and checks which runs it draws,
what its title says, and that a table is drawn once per device x method.
"""

from __future__ import annotations

import polars as pl
import pytest
from mlflow.tracking import MlflowClient

from workbench.figures.runs import NoRuns, tables_by_device
from workbench.figures.selection import SPEECH, SYNTHETIC, Selector, select


def _job(client: MlflowClient, exp: str, name: str, job: str, synthetic: bool, budget: int | None,
         windows: pl.DataFrame | None = None, sweep: str | None = None, tmp=None) -> str:
    tags = {"job": job, "as2d.role": "job", "synthetic": str(synthetic)}
    if sweep:
        tags.update({"sweep_parent": sweep, "mlflow.parentRunId": sweep})
    run = client.create_run(client.get_experiment_by_name(exp).experiment_id, run_name=name, tags=tags)
    if budget is not None:
        client.log_param(run.info.run_id, "model.budget", str(budget))
    if windows is not None:
        path = tmp / f"{run.info.run_id}" / "windows.parquet"
        path.parent.mkdir(parents=True)
        windows.write_parquet(path)
        client.log_artifact(run.info.run_id, str(path), "tables")
    client.set_terminated(run.info.run_id, "FINISHED")
    return run.info.run_id


def _windows(device: str, methods: list[str], tps: float) -> pl.DataFrame:
    return pl.DataFrame({"device": device, "method": methods, "config": methods, "window_id": "w0",
                         "dataset": "demo", "tokens": 10, "time": [10 / tps] * len(methods), "tps": tps})


@pytest.fixture(scope="module")
def store(tmp_path_factory, ) -> dict[str, str]:
    tmp = tmp_path_factory.mktemp("sel")
    uri = f"sqlite:///{tmp / 'mlflow.db'}"
    client = MlflowClient(uri)
    for exp in ("as2d-demo", "as2d-replay"):
        client.create_experiment(exp, artifact_location=(tmp / "artifacts" / exp).as_uri())
    ids = {"demo": _job(client, "as2d-demo", "demo", "demo", False, 3,
                        _windows("xiaomi_14", ["target_only", "as2d"], 20.0), tmp=tmp)}
    parent = client.create_run(client.get_experiment_by_name("as2d-replay").experiment_id, run_name="sweep",
                               tags={"as2d.role": "sweep", "sweep_dir": str(tmp / "multirun")})
    ids["sweep"] = parent.info.run_id
    ids["b3"] = _job(client, "as2d-replay", "replay-b3", "replay", False, 3,
                     _windows("xiaomi_14", ["target_only", "as2d"], 30.0), sweep=ids["sweep"], tmp=tmp)
    ids["b7"] = _job(client, "as2d-replay", "replay-b7", "replay", False, 7,
                     _windows("xiaomi_14", ["as2d"], 40.0), sweep=ids["sweep"], tmp=tmp)
    client.set_terminated(ids["sweep"], "FINISHED")
    ids["synthetic"] = _job(client, "as2d-replay", "replay-synthetic", "replay", True, 3,
                            _windows("k70_pro", ["target_only", "as2d"], 50.0), tmp=tmp)
    ids["uri"] = uri
    return ids


@pytest.fixture(autouse=True)
def _at_store(store: dict[str, str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MLFLOW_TRACKING_URI", store["uri"])
    monkeypatch.delenv("AS2D_NOTEBOOK_EXPERIMENT", raising=False)


def test_default_is_the_latest_demo_even_after_a_sweep_and_a_synthetic_run(store: dict[str, str]) -> None:
    sel = select(Selector(), "as2d-replay")
    assert [r.info.run_id for r in sel.runs] == [store["demo"]]
    assert sel.data == SPEECH and sel.budgets == [3]
    title = sel.title()
    assert "latest `make demo` run" in title and "as2d-demo" in title and "speech" in title and "b=3" in title


def test_an_experiment_never_pools_speech_with_synthetic(store: dict[str, str]) -> None:
    sel = select(Selector(experiment="as2d-replay"))
    # the synthetic run is the newest: its kind is drawn, the two speech sweep jobs are left out and said so
    assert [r.info.run_id for r in sel.runs] == [store["synthetic"]] and sel.data == SYNTHETIC
    assert "SYNTHETIC" in sel.title() and any("never pooled" in why for why in sel.left_out)
    speech = select(Selector(experiment="as2d-replay", data="speech"))
    assert {r.info.run_id for r in speech.runs} == {store["b3"], store["b7"]}


def test_a_sweep_draws_its_jobs_each_device_and_method_once(store: dict[str, str]) -> None:
    sel = select(Selector(run=store["sweep"][:8]))
    assert {r.info.run_id for r in sel.runs} == {store["b3"], store["b7"]} and sel.what.startswith("sweep ")
    frame, used = tables_by_device(sel, "windows")
    pairs = frame.select("device", "method").rows()
    assert sorted(pairs) == [("xiaomi_14", "as2d"), ("xiaomi_14", "target_only")]  # drawn once each
    # as2d from the newest job (b7), target-only from the only job that ran it (b3)
    by = dict(zip(frame["method"], frame["run_id"], strict=True))
    assert by == {"as2d": store["b7"], "target_only": store["b3"]} and len(used) == 2
    assert "b=3,7" in sel.title()
    # the chart draws As²d from the b7 job only, and its title says so
    assert "b=7 drawn of b=3,7" in sel.title(frame)
    assert "drawn" not in select(Selector(sweep=store["sweep"], budget=3)).title(frame.filter(
        pl.col("run_id") == store["b3"]))


def test_a_budget_picks_one_job_of_a_sweep(store: dict[str, str]) -> None:
    sel = select(Selector(sweep=store["sweep"], budget=3))
    assert [r.info.run_id for r in sel.runs] == [store["b3"]] and "b=3" in sel.title()
    assert any("not 3" in why for why in sel.left_out)


def test_unknown_run_and_bad_data_kind_say_so(store: dict[str, str]) -> None:
    with pytest.raises(NoRuns, match="matches 0 runs"):
        select(Selector(run="ffffffff"))
    with pytest.raises(ValueError, match="DATA='audio'"):
        Selector(data="audio")


def test_an_experiment_selection_names_its_experiment_once(store: dict[str, str]) -> None:
    title = select(Selector(experiment="as2d-replay")).title()
    assert title.startswith("experiment as2d-replay (") and title.count("as2d-replay") == 1

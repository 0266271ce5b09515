"""The sweep summary divides each configuration by the target-only of its own data and profile.

Runs in a real sqlite MLflow store, with the params and tags a sweep's configuration runs carry: a sweep
over the data (two keys) keeps two target-only rows, and a target-only reused from another job of the
sweep gives way to the run that replayed it.
"""

from __future__ import annotations

import mlflow
import pytest
from mlflow.tracking import MlflowClient

from workbench.tracking.sweep_summary import sweep_rows


def _config(client: MlflowClient, exp: str, name: str, tps: float, **params: str) -> None:
    run = client.create_run(exp, run_name=name, tags={"as2d.role": "config"})
    for k, v in {"device": "k70_pro", "clock": "replay", "synthetic": "True", **params}.items():
        client.log_param(run.info.run_id, k, v)
    client.log_metric(run.info.run_id, "tps", tps)
    client.set_terminated(run.info.run_id)


def test_speedup_over_the_target_only_of_the_same_key(tmp_path):
    mlflow.set_tracking_uri(f"sqlite:///{tmp_path / 'm.db'}")
    client = MlflowClient()
    exp = client.create_experiment("keys", artifact_location=str(tmp_path / "art"))
    _config(client, exp, "target_only-a", 10.0, method="target_only", target_only_key="a")
    _config(client, exp, "target_only-a-reused", 10.0, method="target_only", target_only_key="a",
            reused_from="run x")
    _config(client, exp, "as2d-a", 15.0, method="as2d", budget="3", target_only_key="a")
    _config(client, exp, "target_only-b", 20.0, method="target_only", target_only_key="b")
    _config(client, exp, "as2d-b", 25.0, method="as2d", budget="3", target_only_key="b")
    frame = sweep_rows(client.search_runs([exp]))
    speedup = dict(zip(frame["run"], frame["speedup"], strict=True))
    assert speedup["as2d-a"] == pytest.approx(1.5) and speedup["as2d-b"] == pytest.approx(1.25)
    targets = sorted(frame.filter(frame["method"] == "target_only")["run"].to_list())
    assert targets == ["target_only-a", "target_only-b"]  # once per key, the run that replayed it

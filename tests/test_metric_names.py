"""Metric names from method labels reach a real MLflow store (``target_only@1t`` used to fail the batch)."""

from __future__ import annotations

import math

from mlflow import MlflowClient
from mlflow.entities import Metric

from workbench.tracking import clean_metrics


def test_clean_metrics_keeps_finite_numbers_and_mlflow_names(tmp_path):
    raw = {"native.target_only@1t.tps": 37.9, "native.as2d/whisper-tiny.en@batch4.tps": 58.9,
           "plain": 1, "nan": math.nan, "none": None, "flag": True, "text": "x"}
    out = clean_metrics(raw)
    assert out == {"native.target_only_1t.tps": 37.9, "native.as2d/whisper-tiny.en_batch4.tps": 58.9, "plain": 1.0}
    client = MlflowClient(f"sqlite:///{tmp_path / 'mlflow.db'}")  # no global run or experiment state
    run = client.create_run(client.create_experiment("metric-names"))
    client.log_batch(run.info.run_id, metrics=[Metric(k, v, 0, 0) for k, v in out.items()])  # every name accepted
    assert client.get_run(run.info.run_id).data.metrics == out

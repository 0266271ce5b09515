"""Metric names from method labels reach a real MLflow store (``target_only@1t`` used to fail the batch)."""

from __future__ import annotations

import math

import mlflow
from mlflow import MlflowClient

from workbench.tracking import clean_metrics


def test_clean_metrics_keeps_finite_numbers_and_mlflow_names(tmp_path):
    raw = {"native.target_only@1t.tps": 37.9, "native.as2d/whisper-tiny.en@batch4.tps": 58.9,
           "plain": 1, "nan": math.nan, "none": None, "flag": True, "text": "x"}
    out = clean_metrics(raw)
    assert out == {"native.target_only_1t.tps": 37.9, "native.as2d/whisper-tiny.en_batch4.tps": 58.9, "plain": 1.0}
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    mlflow.set_tracking_uri(uri)
    try:
        with mlflow.start_run() as run:
            mlflow.log_metrics(out)  # the real store accepts every cleaned name
        logged = MlflowClient(uri).get_run(run.info.run_id).data.metrics
    finally:
        mlflow.set_tracking_uri(None)
    assert logged == out

"""Jobs that fail on purpose once their MLflow run exists: ``python tests/error_job.py K1,K2 RUN_DIR [overrides]``.

The replay job's ``run`` is replaced by one that raises the named error of the workbench's family
(``workbench.errors`` and the project's own subclasses); everything else is the real entry point.
"""

from __future__ import annotations

import runpy
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import workbench.jobs.replay as replay_job  # noqa: E402
from workbench import errors  # noqa: E402
from workbench.data.datasets.base import DatasetLayoutError  # noqa: E402
from workbench.models.pair import PairError  # noqa: E402
from workbench.models.registry import MissingWeightsError  # noqa: E402
from workbench.native.driver import ProducerError  # noqa: E402
from workbench.replay.profile import ProfileError  # noqa: E402
from workbench.traces.schema import TraceSchemaError  # noqa: E402

ERRORS = {
    "config": lambda: errors.ConfigError("model.budget", "injected config fault", fix="set model.budget"),
    "data": lambda: errors.DataError("injected data fault", where="corpus/x.txt", fix="add the transcript"),
    "audio": lambda: errors.AudioError("injected audio fault", where="corpus/a.flac", fix="re-encode it"),
    "model": lambda: errors.ModelError("injected model fault", where="model.target", fix="supply weights"),
    "profile": lambda: errors.ProfileError("injected profile fault", where="conf/device/x.yaml"),
    "phone": lambda: errors.PhoneError("device 123: injected phone fault; replug the cable"),
    "protocol": lambda: errors.ProtocolError("injected protocol fault", where="line 3"),
    "runner": lambda: errors.RunnerError("injected runner fault", where="as2d_runner"),
    "missing_weights": lambda: MissingWeightsError("model.target: injected missing weights"),
    "pair": lambda: PairError("model.producer.family", "injected pair fault"),
    "trace_schema": lambda: TraceSchemaError("traces/w.parquet: injected schema fault"),
    "layout": lambda: DatasetLayoutError("librispeech", "/nowhere", "injected layout fault", "SPEAKER/CHAPTER/"),
    "device_profile": lambda: ProfileError("conf/device/x.yaml", "costs.verify", "injected field fault"),
    "producer_kept": lambda: ProducerError("window w0: injected producer fault", kept="3 windows in tables/partial"),
    "bug": lambda: ZeroDivisionError("injected bug"),
}


KINDS, RUN_DIR = sys.argv[1].split(","), sys.argv[2]  # the rest of argv: the entry point's overrides
OVERRIDES = sys.argv[3:]
KIND = ""


def failing_run(cfg, out):  # noqa: ANN001, ANN201 - the job signature
    if KIND == "mismatch":  # a job whose own audit found a scheme of ours off the greedy output
        import polars as pl

        from workbench.jobs.base import JobResult

        return JobResult({"exactness_mismatches": 1.0}, {"runs": pl.DataFrame({"matched": [True, False]})})
    raise ERRORS[KIND]()


replay_job.run = failing_run
for KIND in KINDS:  # one process, many jobs: each marks its stderr section and exit status
    print(f"=== {KIND}", file=sys.stderr, flush=True)
    sys.argv = ["workbench.run", *OVERRIDES, f"hydra.run.dir={RUN_DIR}/{KIND}"]
    try:
        runpy.run_module("workbench.run", run_name="__main__")  # as `python -m workbench.run`
        code = 0
    except SystemExit as done:
        code = done.code
    except ZeroDivisionError:  # an unexpected exception: Hydra printed its traceback and re-raised it
        code = 1
    print(f"=== rc {code}", file=sys.stderr, flush=True)

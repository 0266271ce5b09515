"""The producer under a Hydra sweep's joblib (loky) worker: it starts, and a start-up failure is one
line within seconds (the parent holds no copy of the child's pipe end)."""

from __future__ import annotations

import time

import numpy as np
from joblib import Parallel, delayed

from workbench.errors import WorkbenchError


def _start(drafter: dict) -> tuple[str, float, str]:
    """In a loky worker: start a NativeHost's producer and prepare one window."""
    import multiprocessing as mp

    from workbench.native.driver import NativeHost, ProducerError
    from workbench.native.messages import PrepareWindow, Ready
    from workbench.native.producer import ProducerSpec

    method = mp.get_start_method(allow_none=True)
    t0 = time.monotonic()
    try:
        with NativeHost(ProducerSpec(drafter=drafter)) as host:
            audio = (0.3 * np.sin(2 * np.pi * 220 * np.arange(16000) / 16000)).astype(np.float32)
            host._conn.send(PrepareWindow("w0", audio, 4))
            host._recv(Ready, 600, "preparing w0")
            outcome = "ready"
    except ProducerError as err:
        assert isinstance(err, WorkbenchError)
        outcome = err.headline()
    return outcome, time.monotonic() - t0, str(method)


def _drafter(**change) -> dict:
    from workbench.models.registry import load_model_config

    return {**load_model_config("whisper_base")["drafter"], "quantize": None, "vocabulary": "shared", **change}


def test_the_producer_starts_in_a_loky_worker_or_fails_in_one_line_within_seconds(tmp_path):
    broken = _drafter(offline_package=None, local_path=str(tmp_path / "none"), hub_id=None)
    (good, _, method), (bad, seconds, _) = Parallel(n_jobs=2, backend="loky")(  # two workers, as a sweep runs
        delayed(_start)(d) for d in (_drafter(), broken))
    assert method == "loky"  # the worker's own start method, which a spawned child cannot set up
    assert good == "ready"
    # the producer's own error (no weights, with its three remedies), long before the 600 s ready timeout
    assert bad.startswith("producer error: producer failed while loading its model: MissingWeightsError")
    assert "local dir" in bad and "Traceback" not in bad and "cannot find context" not in bad and seconds < 120

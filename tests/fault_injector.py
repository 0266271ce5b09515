"""SIGKILL fault injection: ``python tests/fault_injector.py DB TRACE_ROOT TRIALS SEED``.

Imports once, then per trial forks a tiny tracked job (start a run, log params, collect trace
windows into a keyed cache, finish) and SIGKILLs it after a random delay -- before, during or
after any of those steps. Prints one JSON line: how many trials were killed and how many ran to
the end. The test then checks the store and the cache (tests/test_reliability_faults.py).
"""

from __future__ import annotations

import json
import os
import random
import signal
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from workbench.traces.cache import TraceCache  # noqa: E402
from workbench.traces.cache_key import TraceKey  # noqa: E402
from workbench.traces.schema import rows_to_frame, write_window  # noqa: E402
from workbench.tracking import tracked_run  # noqa: E402

WINDOWS = [f"w{i:02d}" for i in range(8)]
MAX_DELAY_S = 1.5  # a loaded machine stretches the job; kills still land in its first 1.5 s
KEY = TraceKey({"fault": "injection"}, "f" * 64)


def window_rows(wid: str) -> list[dict]:
    n = 3 + int(wid[1:]) % 5
    return [dict(kind="reference", source_id="target", position=i, token=10 + i) for i in range(n)] + [
        dict(kind="producer", source_id="producer", position=i, token=10 + i, batch=i // 2) for i in range(n)]


def job(db: str, root: str, trial: int) -> None:
    with tracked_run("faults", f"trial{trial}", cfg={"trial": trial}, uri=f"sqlite:///{db}"):
        cache = TraceCache(root, "pair", KEY).open()
        for wid in WINDOWS:
            if not cache.ready(wid, "audio", 100):
                write_window(cache.dir, wid, rows_to_frame(window_rows(wid)), cache.manifest_fields("audio"))
                time.sleep(0.02)  # spread the writes so kills land between and inside them


def main() -> None:
    db, root, trials, seed = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
    rng = random.Random(seed)
    killed = finished = 0
    t0 = time.perf_counter()
    job(db, root, -1)  # one full job first: its duration sets the range of kill points
    span = time.perf_counter() - t0
    for p in (Path(root) / f"pair-{KEY.short}").glob("w*"):
        p.unlink()  # the trials start from an empty cache folder
    for trial in range(trials):
        pid = os.fork()
        if pid == 0:
            try:
                job(db, root, trial)
            finally:
                os._exit(0)
        time.sleep(rng.uniform(0.0, min(1.1 * span, MAX_DELAY_S)))
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        _, status = os.waitpid(pid, 0)
        if os.WIFSIGNALED(status):
            killed += 1
        else:
            finished += 1
        if trial % 5 == 4 and rng.random() < 0.5:  # sometimes start over from an empty cache folder
            for p in (Path(root) / f"pair-{KEY.short}").glob("w0*"):
                p.unlink()
    print(json.dumps({"killed": killed, "finished": finished, "span_s": span}), flush=True)


if __name__ == "__main__":
    main()

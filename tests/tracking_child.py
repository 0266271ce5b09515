"""A tiny tracked job for the lifecycle tests: ``python tests/tracking_child.py MODE DB [START_AT]``.

Modes: ``sleep`` (print the run id, then sleep until signalled), ``double`` (block SIGTERM and
SIGINT, wait until the test has sent both, then unblock: the second one arrives while the first
one's cleanup runs), ``race`` (touch ``<DB>.ready.<pid>``, wait for ``<DB>.go``, then open the
fresh store and end at once: several of these race on MLflow's schema creation).
"""

from __future__ import annotations

import os
import signal
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from workbench.tracking import tracked_run  # noqa: E402

mode, db = sys.argv[1], sys.argv[2]
if mode == "race":
    Path(f"{db}.ready.{os.getpid()}").touch()
    while not Path(f"{db}.go").exists():
        time.sleep(0.001)
with tracked_run("lifecycle", mode, cfg={"mode": mode}, uri=f"sqlite:///{db}") as run:
    both = {signal.SIGTERM, signal.SIGINT}
    if mode == "double":
        signal.pthread_sigmask(signal.SIG_BLOCK, both)
    print(run.info.run_id, flush=True)
    if mode == "double":
        while signal.sigpending() != both:
            time.sleep(0.01)
        signal.pthread_sigmask(signal.SIG_UNBLOCK, both)
    while mode != "race":
        time.sleep(0.05)

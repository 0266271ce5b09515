"""A parent that starts the real native producer, gets "ready" for a window, then waits to be killed.

``python tests/producer_parent.py [ready|run]`` prints the producer's PID once it is ready
(tests/test_reliability_producer.py); with ``run`` it first starts the window, so the producer is
generating when the parent dies.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from workbench.models.registry import load_model_config  # noqa: E402
from workbench.native.driver import NativeHost  # noqa: E402
from workbench.native.messages import PrepareWindow, Ready  # noqa: E402
from workbench.native.producer import ProducerSpec  # noqa: E402


def main() -> None:
    drafter = {**load_model_config("whisper_base")["drafter"], "quantize": None, "vocabulary": "shared"}
    t = np.arange(16000) / 16000
    audio = (0.3 * np.sin(2 * np.pi * 220 * t)).astype(np.float32)
    host = NativeHost(ProducerSpec(drafter=drafter)).__enter__()
    running = sys.argv[1:] == ["run"]
    host._conn.send(PrepareWindow("w0", audio, 200 if running else 4))
    host._recv(Ready, 600, "preparing w0")
    if running:
        host.start_evt.set()  # the producer is generating into shared memory from here on
    print(host._proc.pid, flush=True)
    while True:  # the test SIGKILLs this process: the producer must notice and exit
        time.sleep(1)


if __name__ == "__main__":  # spawn re-imports this module in the producer
    main()

"""Messages between the verifier and a producer process (one pipe, both directions).

Plain frozen dataclasses (picklable across ``spawn``), matched by type, never read as ``msg[1]``.
The serving producer (``producer.producer_main``) and calibration's load producer
(``sweep.ProducerLoad``) speak the same protocol::

    parent                                    producer process
                                         <--  Loaded(placement)        model loaded, placement applied
    PrepareWindow(window_id, audio, cap, -->  audio prefill, own prompt prefill (before the clock),
                  instruction)                with the request's instruction (audio LMs)
                                         <--  Ready(window_id)
    (start event) ... (stop event)            generate and publish into the shared buffer
                                         <--  Done(forwards)           drafter forwards this window
    RunPasses(n)                         -->  calibration only: n timed passes (None: until stop)
                                         <--  Passes(passes, has_confidence)
    Quit()                               -->  exit
                                         <--  Failed(error, traceback) on any exception, then exit 1
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Loaded:
    placement: dict[str, Any]  # threads, cpus, pid as applied in the producer process


@dataclass(frozen=True)
class PrepareWindow:
    window_id: str
    audio: Any
    cap: int  # most tokens the producer may generate for this window
    instruction: str | None = None  # the request's instruction (translation, QA question); None: the pair's prompt


@dataclass(frozen=True)
class Ready:
    window_id: str


@dataclass(frozen=True)
class Done:
    forwards: int  # drafter forwards (own tokens generated) in this window


@dataclass(frozen=True)
class RunPasses:
    n: int | None  # timed passes; None: back to back until the stop event


@dataclass(frozen=True)
class Passes:
    # (operations, seconds) per pass, prompt prefill excluded: drafter forwards, or tokens where uncounted
    passes: list[tuple[int, float]]
    has_confidence: bool


@dataclass(frozen=True)
class Quit:
    pass


@dataclass(frozen=True)
class Failed:
    error: str
    traceback: str = ""


Message = Loaded | PrepareWindow | Ready | Done | RunPasses | Passes | Quit | Failed

"""The reference engine of the on-device runner: the workbench's replay engine, unchanged.

A window's greedy reference and producer trajectory answer every target call (the replay
premise); costs come from the request's resolved ``pricing``. ``replay`` does not hand out its
publication buffer, so the producer is advanced again over the recorded round times -- idle
outside target calls, at the coexistence rate inside them, then drained -- which reproduces the
same publication times (the producer's progress depends only on those intervals).
"""

from __future__ import annotations

from typing import Any

from workbench.decoding import PublicationBuffer
from workbench.replay.engine import DECOUPLED, ReplayConfig, producer_plan, replay
from workbench.replay.producer import Producer
from workbench.replay.profile import DeviceProfile
from workbench.replay.trajectory import Window


def replay_config(scheme: dict[str, Any]) -> ReplayConfig:
    return ReplayConfig(scheme["name"], source=scheme.get("source"), **(scheme.get("settings") or {}))


def run_window(window: Window, cfg: ReplayConfig, profile: DeviceProfile, drain: str = "boundary"
               ) -> tuple[Any, PublicationBuffer | None]:
    """One audited replay and, for decoupled schemes, the producer's publication buffer."""
    if cfg.scheme not in DECOUPLED:
        return replay(window, cfg, profile, drain=drain), None  # type: ignore[arg-type]
    plan = producer_plan(window, cfg.source, profile)
    result = replay(window, cfg, profile, plan=plan, drain=drain)  # type: ignore[arg-type]
    if plan.static is not None:
        return result, plan.static
    producer = Producer(plan)
    for t_decide, t_start, t_end in zip(result.t_decide, result.t_start, result.t_end, strict=True):
        producer.advance(t_decide, slowed=False)
        producer.advance(t_start, slowed=False)
        if producer.busy():
            producer.advance(t_end, slowed=True)
    producer.drain(result.t_eos, full=drain == "full")
    return result, producer.buffer

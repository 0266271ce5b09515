"""The reference engine of the on-device runner: the workbench's replay engine, unchanged.

A window's greedy reference and producer trajectory answer every target call (the replay
premise); costs come from the request's resolved ``pricing``, in its own unit (seconds: the clock
adds exactly the numbers the C++ runner adds, never a value converted to ms and back). ``replay``
does not hand out its publication buffer, so the producer is advanced again over the recorded round
times -- idle outside target calls, at the coexistence rate inside them, then drained, in the
clock's own steps -- which reproduces the same publication times to the bit.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from workbench.decoding import PublicationBuffer
from workbench.replay.engine import DECOUPLED, ReplayConfig, producer_plan, replay
from workbench.replay.pricing import Pricing
from workbench.replay.producer import Producer, ProducerPlan, SourcePrice
from workbench.replay.profile import DeviceProfile
from workbench.replay.trajectory import Window

from .payloads import profile_from_pricing
from .protocol import Request


def priced_profile(p: Mapping[str, Any]) -> DeviceProfile:
    """The request's ``pricing`` as a profile whose clock prices are the request's seconds as given.

    The profile itself (milliseconds, ``profile_from_pricing``) only words errors and names the
    serial drafter; ``pricing_for`` returns the seconds installed here."""
    profile = profile_from_pricing(p)
    f = float  # JSON may spell a price as an integer; the C++ runner reads every price as a double
    sources = {n: SourcePrice(s["kind"], f(s["op_s"]), f(s["publication_s"]), f(s["startup_s"]),
                              f(s["concurrent_factor"]), s["batch_tokens"]) for n, s in p["sources"].items()}
    asp = p.get("asp")
    profile.derived["pricing"] = Pricing(
        name=profile.name, profile=profile, step_s=f(p["step_s"]), loop_s=f(p["loop_s"]), queue_s=f(p["queue_s"]),
        align_s=f(p["align_s"]), idle_s={int(k): f(x) for k, x in p["verify_idle_s"].items()},
        conc_s={int(k): f(x) for k, x in p["verify_concurrent_s"].items()},
        forward_s=sources[p["serial_drafter"]].op_s,
        paired_s=None if not asp else f(asp["paired_branch_s"]), prob_row_s=None if not asp else f(asp["prob_row_s"]),
        refresh_s={} if not asp else {int(k): f(x) for k, x in asp["kv_refresh_s"].items()}, sources=sources)
    return profile


def replay_config(req: Request) -> ReplayConfig:
    """The request's scheme as replay runs it; a decoupled scheme reads the source ``Request.source``
    names (``scheme.source``, else ``producer.source``, as the C++ runner reads it)."""
    name = req.scheme["name"]
    return ReplayConfig(name, source=req.source if name in DECOUPLED else req.scheme.get("source"), **req.settings)


def run_window(window: Window, cfg: ReplayConfig, profile: DeviceProfile, drain: str = "boundary"
               ) -> tuple[Any, PublicationBuffer | None]:
    """One audited replay and, for decoupled schemes, the producer's publication buffer."""
    if cfg.scheme not in DECOUPLED:
        return replay(window, cfg, profile, drain=drain), None  # type: ignore[arg-type]
    plan = producer_plan(window, cfg.source, profile)
    # parse_request refuses several resident sources ('a+b', host replay only) before any window runs
    assert isinstance(plan, ProducerPlan), cfg.source
    result = replay(window, cfg, profile, plan=plan, drain=drain)  # type: ignore[arg-type]
    if plan.static is not None:
        return result, plan.static
    producer = Producer(plan)
    for t_decide, t_start, t_end in zip(result.t_decide, result.t_start, result.t_end, strict=True):
        producer.advance(t_decide, slowed=False)
        producer.advance(t_start, slowed=False)
        if producer.busy():
            # The same steps as the replay clock: a producer that finishes inside the call is
            # advanced to its end first. A publication time depends on the step it falls in, so
            # other steps would move it by an ulp.
            p_end = producer.finish_time_if(slowed=True)
            if t_end > p_end:
                producer.advance(p_end, slowed=True)
            producer.advance(t_end, slowed=True)
    producer.drain(result.t_eos, full=drain == "full")
    return result, producer.buffer

"""D.3 decomposition: where a window's replay-vs-native error comes from, term by term.

The native run's own events (every call's start, end and width; the producer's publication times and
when it stopped) are compared with the replay of the same trajectory. Both clocks obey one identity:
the decode time is the sum of the target calls, the loop work between them (alignment before a call,
queue after it) and the drain after EOS, ``T = sum(calls) + loop + drain``. The error is split into
terms that add up exactly:

* ``publication``: replay with its modelled producer against replay fed the native publication
  times (``native_curve_window``): what mispricing the producer's publication curve costs;
* then, between that replay and the native run:
  * ``readiness``: the calls the replay made against the calls the native run made, both priced by
    the profile: different widths and round counts because candidates were ready at other times
    (stalls, K=1 rounds);
  * ``verify_concurrent`` / ``verify_idle``: the profile's price of each native call against its
    measured duration, for calls that started while the producer ran / after it finished;
  * ``loop``: alignment and queue work;
  * ``drain``: the producer's work after target EOS, charged once.

Each term is in signed-TPS-error points, ``-100 * dT / T_replay``: they sum to the window's signed
error ``100 (TPS_replay / TPS_native - 1)``. Beside them: the mean publication lag (replayed minus
native publication time of the tokens published before native EOS), the first token's lag (a constant
offset, such as operation 0 charged on the clock for a prefill that ran before it, moves both alike; a
mispriced rate moves the mean away from the first) and both readiness shares.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from types import MappingProxyType
from typing import Any

from workbench.replay.engine import replay
from workbench.replay.pricing import pricing_for
from workbench.replay.producer import Producer, ProducerPlan
from workbench.replay.profile import DeviceProfile
from workbench.replay.result import ReplayConfig, ReplayResult
from workbench.replay.trajectory import SourceTrack, Window, operations_of

from .driver import NativeResult
from .episodes import publication_groups

TERMS = ("publication", "readiness", "verify_concurrent", "verify_idle", "loop", "drain")
DECOMPOSITION_COLUMNS = ("window_id", "signed_error_pct", *TERMS, "publication_lag_ms", "first_publication_lag_ms",
                         "readiness_native",
                         "readiness_replay", "calls_native", "calls_replay", "concurrent_calls_native")


@dataclass(frozen=True, slots=True)
class ClockTotals:
    """One run on one clock: ``time = calls + loop + drain`` (seconds)."""

    time: float
    calls: float
    loop: float
    drain: float

    @classmethod
    def of(cls, time: float, t_eos: float, starts: Sequence[float], ends: Sequence[float]) -> ClockTotals:
        calls = sum(e - s for s, e in zip(starts, ends, strict=True))
        return cls(time, calls, t_eos - calls, time - t_eos)


class _Held:
    """A producer plan whose ``producer()`` is one held ``Producer``: its buffer's publication times
    can be read after the replay (``engine.replay`` builds producers of several-source plans this way)."""

    def __init__(self, plan: ProducerPlan) -> None:
        self.held = Producer(plan)

    def producer(self) -> Producer:
        return self.held


def replay_held(window: Window, settings: Mapping[str, Any], profile: DeviceProfile,
                source: str) -> tuple[ReplayResult, list[float]]:
    """Replay As²d on ``window`` and the publication time of every token its producer published."""
    plan = ProducerPlan.build(window.sources[source], profile.source(source), window.vocab_size)
    held = _Held(plan)
    res = replay(window, ReplayConfig("as2d", source=source, **settings), profile, plan=held)  # type: ignore[arg-type]
    buf = held.held.buffer
    return res, [buf.publish_time_of(i) for i in range(len(buf))]


def native_window(run: NativeResult, reference: Sequence[int], *, source: str, eos_id: int | None,
                  vocab_size: int, max_output: int, window_id: str | None = None) -> Window:
    """One native As²d run's trajectory as a replay window: the reference and the producer stream it
    published. The host prices its producer per operation: each drafter forward the native run counted
    (``NativeResult.producer_ops``; ``operations_of``), so a Tok_T word is released by the forward that
    completed it, as a trace's forward counts release it. A run that did not count them is priced per
    token, a word published at once (``publication_groups``) released together."""
    tokens = tuple(run.producer_tokens)
    if len(run.producer_ops) == len(tokens):
        ops = operations_of(run.producer_ops)
    else:
        ops = tuple(n for size in publication_groups(run.producer_times) for n in (*(0,) * (size - 1), size))
    track = SourceTrack(source, tokens, None, ops if sum(ops) == len(tokens) else (1,) * len(tokens))
    return Window(window_id or run.window_id, "host", tuple(reference), eos_id, vocab_size, max_output, None,
                  {source: track}).validate()


def replay_native_run(run: NativeResult, reference: Sequence[int], profile: DeviceProfile, *, source: str,
                      settings: Mapping[str, Any], eos_id: int | None, vocab_size: int, max_output: int,
                      window_id: str | None = None) -> tuple[Window, ReplayResult]:
    """Replay one native As²d run's trajectory (``native_window``) under ``profile``, with the settings the
    native run used."""
    w = native_window(run, reference, source=source, eos_id=eos_id, vocab_size=vocab_size, max_output=max_output,
                      window_id=window_id)
    return w, replay(w, ReplayConfig("as2d", source=source, **settings), profile)


def operation_ms(op_tokens: Sequence[int], times: Sequence[float]) -> tuple[float, ...]:
    """Each operation's time (ms) such that every token is released at its time in ``times`` (s): an
    operation that releases tokens ends at their publication; the operations before it that release
    none (the forwards a Tok_T word waited) share the gap evenly."""
    ends: list[float] = []
    k, prev, waiting = 0, 0.0, 0
    for n in op_tokens:
        waiting += 1
        if n:
            k += n
            ends += [1000 * (times[k - 1] - prev) / waiting] * waiting
            prev, waiting = times[k - 1], 0
    return tuple(ends + [0.0] * waiting)


def native_curve_window(window: Window, run: NativeResult, source: str,
                        profile: DeviceProfile) -> tuple[Window, DeviceProfile]:
    """``window`` with its producer's operations timed as the native run published them (token i at
    the native publication time, the prompt-prefill token at 0), and ``profile`` without a startup for
    that source: replay then publishes on the native curve (measured times carry their contention)."""
    t = [max(0.0, x) for x in run.producer_times]
    t = [max(t[: i + 1]) for i in range(len(t))]  # publication order is time order
    old = window.sources[source]
    track = SourceTrack(source, old.tokens, old.confidences, old.op_tokens, operation_ms(old.op_tokens, t))
    sources = {**profile.sources, source: replace(profile.source(source), startup_ms=0.0)}
    return replace(window, sources={**window.sources, source: track}), replace(profile,
                                                                              sources=MappingProxyType(sources))


def model_call_s(profile: DeviceProfile, width: int, start: float, producer_end: float, pos: int,
                 first: bool) -> float:
    """The profile's price of one call as replay charges it: concurrent while the producer runs (the
    rest at the idle rate once it ends mid-call), plus the context line and the cold first call."""
    price = pricing_for(profile)
    idle = price.verify(width, False)
    if start >= producer_end:
        dur = idle
    else:
        conc = price.verify(width, True)
        dur = conc if start + conc <= producer_end else (
            producer_end - start + (1.0 - (producer_end - start) / conc) * idle)
    fit = profile.verifier.context
    if fit is not None:
        slope = fit.slope(width, start < producer_end)
        extra = (slope * (pos - fit.ref_tokens) + (fit.cold_ms if first else 0.0)) / 1e3
        dur += max(extra, -0.5 * dur)
    return dur


def _native_calls(run: NativeResult, profile: DeviceProfile) -> tuple[float, float, float, float, int]:
    """(model price of the concurrent calls, their measured time, the same for idle calls, count of
    concurrent calls) over the native run's calls."""
    end = run.producer_end
    pos, out = 1, [0.0, 0.0, 0.0, 0.0]
    n_conc = 0
    for i, r in enumerate(run.records):
        conc = r.t_start < end
        m = model_call_s(profile, r.width, r.t_start, end, pos, i == 0)
        j = 0 if conc else 2
        out[j] += m
        out[j + 1] += r.t_end - r.t_start
        n_conc += conc
        pos += len(r.committed)
    return out[0], out[1], out[2], out[3], n_conc


def concurrent_call_ratio(profile: DeviceProfile, run: NativeResult) -> float | None:
    """Measured over priced: the run's target calls that started while its producer ran, their summed
    duration over ``profile``'s price of the same calls (``model_call_s``); ``None`` when none did. On a
    drift probe's As²d run it says how the contention between the two processes moved since calibration
    (``replay/drift.py``, the verifier beside the producer)."""
    m_conc, a_conc, _, _, n_conc = _native_calls(run, profile)
    return a_conc / m_conc if n_conc and m_conc > 0 else None


def _readiness(records: Sequence[Any]) -> float:
    return sum(r.ready == 0 for r in records) / len(records) if records else 0.0


def decompose(window: Window, run: NativeResult, profile: DeviceProfile, source: str,
              settings: Mapping[str, Any]) -> dict[str, Any]:
    """The D.3 terms of one window (``DECOMPOSITION_COLUMNS``): ``run`` is the native As²d run that
    ``window`` (reference + its published stream) was built from, ``profile`` the one judged."""
    res, pub = replay_held(window, settings, profile, source)
    cw, cp = native_curve_window(window, run, source, profile)
    cur = replay(cw, ReplayConfig("as2d", source=source, **settings), cp)
    nat = ClockTotals.of(run.time, run.t_eos, [r.t_start for r in run.records], [r.t_end for r in run.records])
    cur_t = ClockTotals.of(cur.time, cur.t_eos, cur.t_start, cur.t_end)
    m_conc, a_conc, m_idle, a_idle, n_conc = _native_calls(run, cp)
    d = {"publication": res.time - cur.time, "readiness": cur_t.calls - (m_conc + m_idle),
         "verify_concurrent": m_conc - a_conc, "verify_idle": m_idle - a_idle,
         "loop": cur_t.loop - nat.loop, "drain": cur_t.drain - nat.drain}
    lag = [p - max(0.0, t) for p, t in zip(pub, run.producer_times, strict=False) if t <= run.t_eos]
    return {"window_id": window.window_id, "signed_error_pct": 100 * (run.time / res.time - 1),
            **{k: -100 * v / res.time for k, v in d.items()},
            "publication_lag_ms": 1000 * sum(lag) / len(lag) if lag else 0.0,
            "first_publication_lag_ms": 1000 * lag[0] if lag else 0.0,
            "readiness_native": _readiness(run.records), "readiness_replay": _readiness(res.untimed),
            "calls_native": len(run.records), "calls_replay": len(res.untimed), "concurrent_calls_native": n_conc}


def dominant_term(rows: Sequence[Mapping[str, Any]]) -> str:
    """The term with the largest mean absolute contribution over windows: what carries the error."""
    return max(TERMS, key=lambda t: sum(abs(r[t]) for r in rows) / max(1, len(rows)))


__all__ = ["DECOMPOSITION_COLUMNS", "TERMS", "ClockTotals", "concurrent_call_ratio", "decompose", "dominant_term",
           "model_call_s", "native_curve_window", "replay_held"]

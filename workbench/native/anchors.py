"""Drift anchors priced by the profile itself (D.3 on a drifting host).

A drift ratio is a probe now over an anchor (``replay/drift.py``). The anchor the calibration measured
(``anchor_ms``: the median target-only round of its three runs on the anchor window, within one minute;
``anchor_producer_ms`` likewise for the producer) and the profile's prices (pooled over the whole
calibration) describe different moments. On a host whose speed moves within the calibration the ratio
then carries the gap between that minute and the pooled fit into every window of a run, one way.

The **priced anchor** is the profile's own price of the probe's statistic, on the probe's own runs:
target-only replayed on the anchor window's output (time per round), and the producer's published
stream of the As²d probe run replayed (interval per operation, ``episodes.producer_token_ms``). A probe
over its priced anchor says how much slower this machine runs now than the profile charges, which is
the factor that scaling the profile needs. It reads only the anchor window (a calibration window) and
the frozen profile: no held-out window's timing. Agreement judges with priced anchors; the calibration's
measured anchors are reported beside (``calibrated_anchor_signed_error_pct``).
"""

from __future__ import annotations

import dataclasses
import statistics
from collections.abc import Iterable

from workbench.replay.engine import replay
from workbench.replay.profile import DeviceProfile
from workbench.replay.result import ReplayConfig
from workbench.replay.sources import profile_source
from workbench.replay.trajectory import Window

from .decomposition import native_window, replay_held
from .driver import NativeResult
from .episodes import producer_token_ms
from .run_store import ReplayInputs


def target_only_round_ms(profile: DeviceProfile, window: Window) -> float:
    """The profile's price of target-only's statistic on ``window``: replayed time per round (ms)."""
    res = replay(window, ReplayConfig("target_only"), profile)
    return 1000 * res.time / max(1, len(res.untimed))


def priced_round_ms(profile: DeviceProfile, run: NativeResult, inputs: ReplayInputs) -> float:
    """The profile's price of a target-only run's statistic: replayed time per round (ms) of its output."""
    return target_only_round_ms(profile, Window(run.window_id, "host", tuple(run.output), inputs.eos_id,
                                                inputs.vocab_size, inputs.max_output, None).validate())


def priced_producer_ms(profile: DeviceProfile, run: NativeResult, reference: tuple[int, ...],
                       inputs: ReplayInputs) -> float | None:
    """The profile's price of an As²d run's producer statistic: its published stream replayed beside the
    target, interval per operation after the first publication (``producer_token_ms`` of the replayed
    publication times; the tokens the native run published before its clock stay before it)."""
    source = profile_source(profile, "producer", {"producer": [inputs.source]}) or inputs.source
    window = native_window(run, reference, source=source, eos_id=inputs.eos_id, vocab_size=inputs.vocab_size,
                           max_output=inputs.max_output)
    _, published = replay_held(window, inputs.settings, profile, source)
    times = [0.0 if native <= 0 else t for t, native in zip(published, run.producer_times, strict=False)]
    return producer_token_ms(times, run.producer_ops[: len(times)])


def priced_anchors(profile: DeviceProfile, probe_runs: Iterable[tuple[NativeResult, ...]],
                   inputs: ReplayInputs) -> DeviceProfile | None:
    """``profile`` with ``anchor_ms`` (and ``anchor_producer_ms`` where it has one and the probes ran As²d)
    replaced by their prices under ``profile``, the median over ``probe_runs`` (target-only, then As²d,
    as ``Episodes.probe_runs`` keeps them); ``None`` without an anchor or probe runs."""
    runs = list(probe_runs)
    if profile.anchor_ms is None or not runs:
        return None
    target = statistics.median(priced_round_ms(profile, rs[0], inputs) for rs in runs)
    producer = None
    if profile.anchor_producer_ms is not None:
        xs = [x for rs in runs if len(rs) > 1
              for x in [priced_producer_ms(profile, rs[1], tuple(rs[0].output), inputs)] if x is not None]
        producer = statistics.median(xs) if xs else None
    return dataclasses.replace(profile, anchor_ms=target,
                               anchor_producer_ms=producer if producer is not None else profile.anchor_producer_ms)


__all__ = ["priced_anchors", "priced_producer_ms", "priced_round_ms", "target_only_round_ms"]

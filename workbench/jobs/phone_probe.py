"""The phone's drift probe (D.3 on a device whose speed moves between calibration and run).

``native_phone`` replays each configuration under the profile ``calibrate_phone`` measured, and also
under that profile scaled to the device's speed *now* (``workbench.replay.drift``). The speed is read
on the profile's anchor window (the calibration window): target-only, ``PROBE_REPS`` runs, their median
time per round over the profile's own price of it (``workbench.native.anchors``).

**Bracketed probes.** Target-only also runs on the anchor window in requests of its own, before *and
after* each configuration, and the profile scaled by the geometric mean of the two ratios is replayed
beside the verdict (``probe_anchored_error_pct``): a drift linear over the configuration's span cancels,
and one probe's transient counts half. The probe after one configuration is the probe before the next,
so a job of ``n`` configurations runs ``n + 1`` target probes.

**The configuration's own anchors.** Each runner request is a fresh process on the device, and the
same forwards can run at a different speed in each process (``benchmarks/process_speed.py`` sets that
spread beside the spread of a window's ratio to the anchor timed in the same process). A probe in
another process carries its own process's speed, not the configuration's; and inside one process the
speed still moves between windows (the runner runs window after window, every repetition of one before
the next). So the anchor window also rides in every configuration's own request, before, between and
after its windows (copies ``<anchor>@<i>``, ``interleaved``). Each copy's native median over its replay
under the profile (the configuration itself replayed on the anchor window: target-only on its output,
As²d on its own published stream) is a ratio (``own_anchor_ratio``); a window's judged anchored replay
scales by the geometric mean of the copies right before and after it (``own_anchor_ratios``): a drift
linear over that span cancels. The bracketed probes are reported beside it.

**The producer's core.** Before a configuration that runs a producer, where the profile anchors it
(``anchor_producer_ms``) and ``phone.producer_probe`` is on, As²d also runs on the anchor window,
audited for exactness against the probe's own target-only output; its producer's interval per token
over the anchor is that core's drift, reported beside the verdict (``producer_anchored_error_pct``).
"""

from __future__ import annotations

import dataclasses
import math
import statistics
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import polars as pl
from omegaconf import DictConfig, OmegaConf

PROBE_REPS = 3  # runs on the anchor window per probe (target-only, then As²d where probed); their median


def round_ms(fr: dict[str, pl.DataFrame]) -> list[float]:
    """Decode time per round (ms) of each window-repetition of a target-only phone run."""
    per = fr["rounds"].group_by("window_id", "repetition").len("rounds")
    runs = fr["windows"].join(per, on=["window_id", "repetition"])
    return [1000 * t / n for t, n in zip(runs["time"], runs["rounds"], strict=True) if n]


def calibration_window(cfg: DictConfig) -> list[Any]:
    """The one window a real-engine calibration decodes (the demo corpus's first dev window), which is
    also the drift anchor's window ``native_phone`` probes."""
    from workbench.native.windows import demo_windows

    return demo_windows(float(cfg.phone.get("max_seconds") or 25.0),
                        model=OmegaConf.to_container(cfg.model, resolve=True))[0][:1]


def anchor_entries(cfg: DictConfig, dev: Any, profile: Any, out: Path, decode: Any) -> list[Any]:
    """The request entry of the profile's anchor window (the calibration window) when the profile has a
    drift anchor measured on it; else none (the configurations are replayed under the frozen profile)."""
    if profile.anchor_ms is None:
        return []
    calib = calibration_window(cfg)
    if not calib or calib[0].window_id != profile.anchor_window:
        print(f"no drift probe: profile {profile.file} was anchored on {profile.anchor_window!r}, this run's "
              f"calibration window is {calib[0].window_id if calib else None!r} (phone.max_seconds differs?)")
        return []
    from phone_runner.session import audio_entries

    return audio_entries(dev, calib, out / "probes", decode)


@dataclass(frozen=True)
class DriftProbe:
    """The probes around one configuration: the target's ratio before and after it, and the producer's
    own where the configuration runs one and the profile anchors it.

    Both are reported beside the judged error, which scales by the configuration's own anchor
    (``own_anchor_ratio``): ``target`` at the bracket's geometric mean, ``each_core`` with the producer by
    its own core's ratio (three As²d runs of a short window time the producer over few tokens)."""

    before: float  # target-only time per round over the profile's price of it, before the configuration
    after: float | None  # the same right after it (None: not probed after)
    producer_ratio: float | None  # the producer's interval per token now over anchor_producer_ms

    @property
    def ratio(self) -> float:
        """The target's drift over the configuration: the geometric mean of the bracket."""
        return self.before if self.after is None else math.sqrt(self.before * self.after)

    def target(self, profile: Any) -> Any:
        """The profile at the target's speed over the configuration (every time by one ratio)."""
        from workbench.replay.drift import scaled

        return scaled(profile, self.ratio)

    def each_core(self, profile: Any) -> Any | None:
        """The profile with each process at its own core's speed; ``None`` without a producer ratio."""
        from workbench.replay.drift import scaled

        return None if self.producer_ratio is None else scaled(profile, self.ratio, source_ratio=self.producer_ratio)


@dataclass
class Prober:
    """Runs the probes of one ``native_phone`` job on the anchor window (``entries``), on the job's
    device and runner settings; ``raw`` collects the runner's output files (MLflow artifacts)."""

    dev: Any
    pc: Any
    entries: list[Any]
    profile: Any
    models: Any
    serial_hash: str
    max_output: int
    raw: list[Path]
    refs: dict[str, Any] = dataclasses.field(default_factory=dict)  # the probe's own target-only output

    def _run(self, rc: Any, out: Path, *, rest: bool) -> Any:
        """``rc`` on the anchor window, ``PROBE_REPS`` runs, in a private resume folder (never reused)."""
        from phone_runner.session import build_request, new_run_id, run_config

        own = dataclasses.replace(self.pc, repetitions=PROBE_REPS, warmups=max(1, self.pc.warmups),
                                  state_dir=str(out / "phone_state"))
        req = build_request(new_run_id(), rc, self.entries, self.profile, own, max_output=self.max_output,
                            models=self.models)
        res = run_config(self.dev, own, req, None, self.profile, out, serial_hash=self.serial_hash, rest=rest)
        self.raw.extend([res.raw] if res.raw else [])
        return res

    def target(self, out: Path) -> float:
        """Target-only on the anchor window (after a rest): the median time per round over the profile's
        price of it (its output replayed target-only), the device's speed now over the profile's."""
        from dataclasses import replace

        from phone_runner.session import phone_windows
        from workbench.native.anchors import target_only_round_ms
        from workbench.replay.drift import drift_ratio
        from workbench.replay.result import ReplayConfig

        res = self._run(ReplayConfig("target_only"), out, rest=True)
        self.refs = self.refs or phone_windows(res.frames, None, self.max_output)
        at_price = replace(self.profile, anchor_ms=target_only_round_ms(self.profile,
                                                                        next(iter(self.refs.values()))))
        return drift_ratio(at_price, statistics.median(round_ms(res.frames)))

    def producer(self, as2d: Any, out: Path) -> float | None:
        """``as2d`` on the anchor window right after a target probe, audited against that probe's output:
        the median interval per token of its producer over ``anchor_producer_ms``; ``None`` where the
        profile does not anchor the producer or nothing was published."""
        from phone_runner.calibration import producer_interval_ms
        from phone_runner.records import audit
        from workbench.replay.drift import producer_drift_ratio

        if self.profile.anchor_producer_ms is None:
            return None
        got = self._run(as2d, out, rest=False)
        audit(got.run, self.refs, self.profile)  # exactness (C.4): the probe is an As²d run like any other
        beside = producer_interval_ms(got.frames["publications"], self.profile.anchor_window)
        return producer_drift_ratio(self.profile, statistics.median(beside)) if beside else None


def bracketed(prober: Prober | None, configs: Iterable[Any], as2d: Any | None, out: Path,
              run: Callable[[Any], Any]) -> Iterator[tuple[Any, Any, DriftProbe | None]]:
    """Runs each configuration through ``run(rc)`` between two target probes (the probe after one is
    the probe before the next; ``as2d``: the producer probe before a configuration with a source),
    yielding ``(rc, run's result, its probes)`` as each one's bracket closes. Without a prober, ``run``
    alone and no probes."""
    if prober is None:
        for rc in configs:
            yield rc, run(rc), None
        return
    before = prober.target(out / "0")
    for i, rc in enumerate(configs):
        prod = prober.producer(as2d, out / str(i) / "as2d") if as2d is not None and rc.source is not None else None
        res = run(rc)
        after = prober.target(out / f"{i + 1}")
        yield rc, res, DriftProbe(before, after, prod)
        before = after


def anchor_copy(window_id: str, i: int) -> str:
    """The id of the ``i``-th copy of the anchor window in a configuration's request."""
    return f"{window_id}@{i}"


def interleaved(anchor: dict[str, Any], entries: list[Any]) -> list[Any]:
    """The request's windows with a copy of the anchor entry before, between and after them: ``n``
    windows ride between ``n + 1`` copies (the same audio, ids ``anchor_copy``)."""
    copies = [{**anchor, "window_id": anchor_copy(anchor["window_id"], i)} for i in range(len(entries) + 1)]
    return [x for c, e in zip(copies, entries, strict=False) for x in (c, e)] + copies[len(entries):]


def own_anchor_ratios(fr: dict[str, pl.DataFrame], windows: dict[str, Any], ids: list[str], rc: Any,
                      profile: Any) -> tuple[dict[str, float], list[float]]:
    """Per window of ``ids`` (request order, between the ``interleaved`` copies): the geometric mean of the
    own-anchor ratios of the copies right before and after it; and every copy's ratio, in order.
    ``windows``: the run's replay windows, the copies' included."""
    r = [own_anchor_ratio(fr, windows[anchor_copy(profile.anchor_window, i)], rc, profile)
         for i in range(len(ids) + 1)]
    return {wid: math.sqrt(r[i] * r[i + 1]) for i, wid in enumerate(ids)}, r


def window_times(fr: dict[str, pl.DataFrame], window_id: str) -> list[float]:
    """One window's native times (s) over its repetitions, sorted (the median is the middle one)."""
    return sorted(fr["windows"].filter(pl.col("window_id") == window_id)["time"].to_list())


def without_anchors(fr: dict[str, pl.DataFrame], window_id: str) -> dict[str, pl.DataFrame]:
    """A run's frames without the rows of the anchor window's copies riding in a configuration's request."""
    return {k: (v.filter(~pl.col("window_id").str.starts_with(f"{window_id}@")) if "window_id" in v.columns else v)
            for k, v in fr.items()}


def own_anchor_ratio(fr: dict[str, pl.DataFrame], window: Any, rc: Any, profile: Any) -> float:
    """The configuration's native median time on the anchor window over its replay there under
    ``profile`` (``window``: the anchor as a replay ``Window``, with the run's own published stream for
    a decoupled configuration): how much slower (> 1) this process runs than the profile prices."""
    from workbench.replay.engine import replay

    times = window_times(fr, window.window_id)
    if not times:
        raise ValueError(f"anchor window {window.window_id!r} is missing from the run's records")
    return times[len(times) // 2] / replay(window, rc, profile).time


__all__ = ["PROBE_REPS", "DriftProbe", "Prober", "anchor_copy", "anchor_entries", "bracketed", "calibration_window",
           "interleaved", "own_anchor_ratio", "own_anchor_ratios", "round_ms", "window_times", "without_anchors"]

"""The device-condition protocol (paper D.2.3-D.2.4): before and during every measured run.

Before: all cores online, every configured frequency ceiling at or above its minimum (e.g. CPU4
>= 1.8816 GHz), then rest a configured time and wait until every thermal zone is below the
threshold. During: a 1 Hz monitor samples online cores, frequencies, temperatures and battery
current/voltage into a time series (parquet). A violated condition flags the run and the
windows it overlaps; nothing is dropped.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import adbutils
import polars as pl

from .info import parse_cpulist, read, sample, zones


@dataclass(frozen=True)
class ConditionPolicy:
    min_ceiling_khz: Mapping[int, int] = field(default_factory=dict)  # core -> minimum scaling_max_freq
    all_online: bool = True
    rest_s: float = 15.0
    max_temp_c: float | None = 40.0
    cool_timeout_s: float = 600.0
    monitor_hz: float = 1.0

    @classmethod
    def from_config(cls, cfg: Mapping[str, Any]) -> ConditionPolicy:
        ghz = cfg.get("min_ceiling_ghz") or {}
        return cls({int(k): int(round(float(v) * 1e6)) for k, v in ghz.items()}, bool(cfg.get("all_online", True)),
                   float(cfg.get("rest_s", 15.0)),
                   None if cfg.get("max_temp_c") is None else float(cfg["max_temp_c"]),
                   float(cfg.get("cool_timeout_s", 600.0)), float(cfg.get("monitor_hz", 1.0)))


def violations(row: Mapping[str, Any], cores: Iterable[int], policy: ConditionPolicy) -> list[str]:
    """What is wrong in one sample (empty: conditions hold)."""
    out = []
    online = set(parse_cpulist(row.get("online") or ""))
    if policy.all_online:
        off = sorted(set(cores) - online)
        if off:
            out.append(f"cores offline: {off}")
    for core, need in policy.min_ceiling_khz.items():
        have = row.get(f"cpu{core}_ceiling_khz")
        if have is None or have < need:
            out.append(f"cpu{core} ceiling {have} kHz < {need} kHz")
    if policy.max_temp_c is not None:
        hot = {k: v for k, v in row.items() if k.endswith("_temp_c") and k.startswith("zone") and v is not None
               and v >= policy.max_temp_c}
        if hot:
            out.append("hot: " + ", ".join(f"{k[:-7]} {v:.1f} C" for k, v in sorted(hot.items())))
    return out


class Conditions:
    """Reads and checks one phone's conditions; ``prepare`` before a run, ``monitor`` during it."""

    def __init__(self, dev: adbutils.AdbDevice, policy: ConditionPolicy) -> None:
        self.dev = dev
        self.policy = policy
        self.cores = parse_cpulist(read(dev, "/sys/devices/system/cpu/possible") or "0")
        self.zone_ids = [i for i, _ in zones(dev)]

    def sample(self) -> dict[str, Any]:
        return sample(self.dev, self.cores, self.zone_ids)

    def prepare(self, sleep: Callable[[float], None] = time.sleep) -> list[str]:
        """Rest, then wait for the temperature to fall below the threshold; returns what still fails."""
        sleep(self.policy.rest_s)
        deadline = time.monotonic() + self.policy.cool_timeout_s
        while True:
            bad = violations(self.sample(), self.cores, self.policy)
            if not any(b.startswith("hot") for b in bad) or time.monotonic() >= deadline:
                return bad
            sleep(min(5.0, max(0.1, deadline - time.monotonic())))

    def monitor(self) -> Monitor:
        return Monitor(self)


class Monitor:
    """A 1 Hz sampler thread; ``stop()`` returns the series with a ``violations`` column."""

    def __init__(self, cond: Conditions) -> None:
        self.cond = cond
        self.rows: list[dict[str, Any]] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True, name="phone-monitor")
        self.error: str | None = None

    def __enter__(self) -> Monitor:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _loop(self) -> None:
        period = 1.0 / self.cond.policy.monitor_hz
        while not self._stop.is_set():
            t = time.monotonic()
            try:
                row = self.cond.sample()
            except (adbutils.AdbError, OSError) as err:  # the phone went away: the run notices too
                self.error = str(err)
                return
            row["violations"] = "; ".join(violations(row, self.cond.cores, self.cond.policy))
            self.rows.append(row)
            self._stop.wait(max(0.0, period - (time.monotonic() - t)))

    def stop(self) -> pl.DataFrame:
        """Stop sampling and take one last sample (the state at the end of the run)."""
        if self._stop.is_set():
            return self.frame()  # already stopped
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(10)
        if self.error is None and self._thread.ident is not None:
            try:
                row = self.cond.sample()
                row["violations"] = "; ".join(violations(row, self.cond.cores, self.cond.policy))
                self.rows.append(row)
            except (adbutils.AdbError, OSError) as err:
                self.error = str(err)
        return self.frame()

    def frame(self) -> pl.DataFrame:
        return pl.DataFrame(self.rows, infer_schema_length=None) if self.rows else pl.DataFrame(
            schema={"t_unix": pl.Float64, "online": pl.Utf8, "violations": pl.Utf8})


def flag_windows(series: pl.DataFrame, spans: Mapping[Any, tuple[float, float]]) -> dict[Any, str]:
    """Windows whose wall-clock span ``(t0, t1)`` saw a violation -> the first one seen.

    Conditions are levels, so the samples inside the span count, and so does the first sample at
    or after ``t1`` (it describes the phone when the window ended, however late the monitor ran;
    ``Monitor.stop`` always takes one after the run)."""
    if not series.height:
        return {}
    t = series["t_unix"].to_list()
    v = series["violations"].to_list()
    out: dict[Any, str] = {}
    for key, (t0, t1) in spans.items():
        after = next((i for i, x in enumerate(t) if x >= t1), None)
        hits = [v[i] for i, x in enumerate(t) if t0 <= x <= t1 and v[i]]
        if after is not None and v[after]:
            hits.append(v[after])
        if hits:
            out[key] = hits[0]
    return out


def write_series(series: pl.DataFrame, path: Path) -> Path:
    from workbench.io import atomic_write_parquet

    return atomic_write_parquet(path, series)

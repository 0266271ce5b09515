"""Request energy (Table 15, D.6.1): host RAPL counters or phone battery samples, trapezoid rule.

Host: Intel/AMD RAPL package counters under ``/sys/class/powercap`` when readable. Where they are
absent or unreadable (VMs, containers, non-root) ``host_meter()`` returns ``None`` and callers print
``UNAVAILABLE`` once; nothing fake is logged.

Phones: the phone_runner monitor (``phone_runner.conditions``) writes a parquet time series with
``t_unix``, ``battery_current_ma`` and ``battery_voltage_v``. The paper estimates request energy as
E = integral of I(t) V(t) dt by the trapezoid rule from the request origin to the time both model
workers have finished; no idle power is subtracted (the estimate covers the whole phone).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import polars as pl

POWERCAP = Path("/sys/class/powercap")
UNAVAILABLE = "energy unavailable on this machine (no readable RAPL counters under /sys/class/powercap)"


def trapezoid_energy(t: Sequence[float], current_a: Sequence[float], voltage_v: Sequence[float],
                     t0: float | None = None, t1: float | None = None) -> float:
    """Joules of ``|I| * V`` over ``[t0, t1]`` (default: the samples' span), trapezoid rule.

    Samples must be in time order. The interval ends are interpolated linearly between the
    neighbouring samples (the gauge's own resolution is coarser, ~1 s, D.6.1). A discharging
    battery reports a negative current on some phones, so the magnitude is used."""
    if not (len(t) == len(current_a) == len(voltage_v)):
        raise ValueError(f"t, current and voltage need the same length, got {len(t)}, {len(current_a)}, "
                         f"{len(voltage_v)}")
    if len(t) < 2:
        raise ValueError("energy needs at least two power samples")
    if any(b < a for a, b in zip(t, t[1:], strict=False)):
        raise ValueError("power samples must be in time order (sort by t first)")
    p = [abs(i) * v for i, v in zip(current_a, voltage_v, strict=True)]
    lo = t[0] if t0 is None else t0
    hi = t[-1] if t1 is None else t1
    if not t[0] <= lo <= hi <= t[-1]:
        raise ValueError(f"interval [{lo}, {hi}] is not inside the samples' span [{t[0]}, {t[-1]}]")

    def power_at(x: float) -> float:
        for k in range(1, len(t)):
            if x <= t[k]:
                a, b = t[k - 1], t[k]
                return p[k] if b == a else p[k - 1] + (p[k] - p[k - 1]) * (x - a) / (b - a)
        return p[-1]

    pts = [(lo, power_at(lo))] + [(x, y) for x, y in zip(t, p, strict=True) if lo < x < hi] + [(hi, power_at(hi))]
    return sum((b[0] - a[0]) * (a[1] + b[1]) / 2 for a, b in zip(pts, pts[1:], strict=False))


@dataclass(frozen=True)
class RequestEnergy:
    joules: float
    seconds: float
    tokens: int

    @property
    def mean_w(self) -> float:
        return self.joules / self.seconds if self.seconds > 0 else math.nan

    @property
    def j_per_token(self) -> float:
        return self.joules / self.tokens if self.tokens > 0 else math.nan

    def row(self) -> dict[str, float]:
        return {"energy_j": self.joules, "mean_w": self.mean_w, "energy_s": self.seconds,
                "tokens": float(self.tokens), "j_per_token": self.j_per_token}


def request_energy(samples: pl.DataFrame, t0: float, t1: float, tokens: int) -> RequestEnergy:
    """Energy of one request from a phone_runner monitor series (``t_unix`` seconds, mA, V)."""
    need = {"t_unix", "battery_current_ma", "battery_voltage_v"}
    if missing := need - set(samples.columns):
        raise ValueError(f"monitor series lacks {sorted(missing)}: record it with phone_runner's monitor "
                         "(phone_runner.conditions), which samples battery current and voltage")
    s = samples.drop_nulls(sorted(need)).sort("t_unix")
    j = trapezoid_energy(s["t_unix"].to_list(), [ma / 1000 for ma in s["battery_current_ma"].to_list()],
                         s["battery_voltage_v"].to_list(), t0, t1)
    return RequestEnergy(j, t1 - t0, tokens)


# ------------------------------------------------------------------------------ host RAPL
class RaplMeter:
    """Cumulative energy of the host's top-level RAPL domains (packages), wrap-around handled."""

    def __init__(self, domains: Sequence[Path]) -> None:
        self.domains = list(domains)
        self._max = [_read_int(d / "max_energy_range_uj") for d in self.domains]

    def read_uj(self) -> list[int]:
        return [_read_int(d / "energy_uj") for d in self.domains]

    def joules_between(self, before: Sequence[int], after: Sequence[int]) -> float:
        total = 0
        for a, b, top in zip(before, after, self._max, strict=True):
            total += b - a if b >= a else b + top - a  # the counter wrapped once
        return total / 1e6


def _read_int(path: Path) -> int:
    return int(path.read_text().strip())


def host_meter(root: Path = POWERCAP) -> RaplMeter | None:
    """A meter over the readable top-level RAPL domains, or ``None`` (then print ``UNAVAILABLE``)."""
    try:
        domains = sorted(d for d in root.glob("intel-rapl:*") if d.name.count(":") == 1)
        if not domains:
            return None
        meter = RaplMeter(domains)
        meter.read_uj()
        return meter
    except (OSError, ValueError):
        return None


__all__ = ["POWERCAP", "UNAVAILABLE", "RaplMeter", "RequestEnergy", "host_meter", "request_energy",
           "trapezoid_energy"]

"""Which dev window a held-out window's drift probes run on (paper D.3's duration matching).

The paper calibrates each validation window on separate training audio cropped or padded to the *same
duration*, matching its initial KV length. Here the drift probes play that part: a probe over its priced
anchor (``anchors.py``) says how fast this machine runs the probe's *shape* of work now. A packed 25 s
calibration window's calls sit late in a long stream, beside a producer deep in its window; a 2 s clip's
calls sit early, beside a producer still starting. The same machine moment prices the two differently,
so a probe of one shape misprices windows of the other.

``ProbeChoice.matched`` picks, for each held-out window, the dev window nearest to it in duration
(ties: the earlier one, the profile's anchor window first). The duration is the audio's, known before
any run, so the choice reads no held-out timing. Every candidate must be a dev window (``dev_only``):
the probes are measurements, and test windows are never measured to price anything. Because the
anchors are priced on the probe runs themselves, any dev window can serve; the calibration need not
have measured it. ``ProbeChoice.fixed`` keeps one window for all (the profile's anchor window).
"""

from __future__ import annotations

import enum
from collections.abc import Sequence
from dataclasses import dataclass

from workbench.errors import ConfigError

from .windows import AudioWindow, dev_only


class ProbeRule(enum.Enum):
    """How a held-out window's probe window is chosen (``--probe``, ``native.probe``)."""

    MATCHED = "matched"  # the dev window nearest in duration (paper D.3)
    ANCHOR = "anchor"  # the profile's calibration window, for every held-out window

    @classmethod
    def parse(cls, value: ProbeRule | str) -> ProbeRule:
        """``value`` as a rule; an unknown one is one config line naming the key and the choices."""
        try:
            return cls(value)
        except ValueError:
            raise ConfigError("native.probe", f"unknown probe rule {value!r}",
                              fix="choose " + " or ".join(r.value for r in cls)) from None


@dataclass(frozen=True)
class ProbeChoice:
    """The dev windows drift probes may run on, the profile's anchor window first, and the rule."""

    windows: tuple[AudioWindow, ...]
    rule: ProbeRule = ProbeRule.MATCHED

    def __post_init__(self) -> None:
        if not self.windows:
            raise ValueError("a drift probe needs at least one dev window")
        dev_only(self.windows, "drift probes")

    @classmethod
    def of(cls, anchor: AudioWindow, more: Sequence[AudioWindow], rule: ProbeRule | str) -> ProbeChoice:
        """``anchor`` (the profile's calibration window) and, for the matched rule, ``more`` dev windows;
        a window id given twice is kept once."""
        rule = ProbeRule.parse(rule)
        chosen = {anchor.window_id: anchor}
        if rule is ProbeRule.MATCHED:
            for w in more:
                chosen.setdefault(w.window_id, w)
        return cls(tuple(chosen.values()), rule)

    @property
    def anchor(self) -> AudioWindow:
        return self.windows[0]

    def for_window(self, window: AudioWindow) -> AudioWindow:
        """The probe window for ``window`` under this rule."""
        if self.rule is ProbeRule.ANCHOR:
            return self.anchor
        return min(self.windows, key=lambda p: abs(p.seconds - window.seconds))  # min keeps the first tie


__all__ = ["ProbeChoice", "ProbeRule"]

"""Export Altair charts to PNG and SVG with vl-convert (no browser, no network)."""

from __future__ import annotations

from pathlib import Path

import altair as alt
import vl_convert as vlc

from workbench.io import atomic_write_bytes


def save_chart(chart: alt.TopLevelMixin, stem: str | Path, scale: float = 2.0) -> list[Path]:
    """Write ``<stem>.png`` and ``<stem>.svg`` atomically; return both paths."""
    stem = Path(stem)
    stem.parent.mkdir(parents=True, exist_ok=True)
    spec = chart.to_json()
    out = []
    for suffix, data in (
        (".svg", vlc.vegalite_to_svg(spec).encode()),
        (".png", vlc.vegalite_to_png(spec, scale=scale)),
    ):
        path = stem.with_suffix(suffix)
        out.append(atomic_write_bytes(path, data))
    return out

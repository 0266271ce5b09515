"""Export Altair charts to PNG and SVG with vl-convert (no browser, no network)."""

from __future__ import annotations

import os
from pathlib import Path

import altair as alt
import vl_convert as vlc


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
        tmp = path.with_name(f".{path.name}.tmp{os.getpid()}")
        tmp.write_bytes(data)
        os.replace(tmp, path)
        out.append(path)
    return out

"""One colour per method in every figure: the shared palette (``figures.paper.method_color``)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import polars as pl

from workbench.figures.cross_device import same_input_chart
from workbench.figures.paper import METHOD_LABEL, tps_cdf

FIGURES = Path(__file__).resolve().parents[2] / "workbench" / "figures"


def _colour_scales(spec: Any) -> Iterator[dict[str, str]]:
    """Every colour encoding's domain -> range mapping in a chart's Vega-Lite spec."""
    if isinstance(spec, dict):
        color = spec.get("color")
        if isinstance(color, dict) and "domain" in color.get("scale", {}):
            yield dict(zip(color["scale"]["domain"], color["scale"]["range"], strict=True))
        for v in spec.values():
            yield from _colour_scales(v)
    elif isinstance(spec, list):
        for v in spec:
            yield from _colour_scales(v)


def _colours(chart) -> dict[str, str]:
    out: dict[str, str] = {}
    for scale in _colour_scales(chart.to_dict()):
        out.update(scale)
    return out


def test_a_method_has_one_colour_in_the_cdf_and_the_cross_device_bars() -> None:
    methods = ["target_only", "sd", "asp", "as2d"]
    cdf = tps_cdf(pl.DataFrame({"device": ["k70_pro"] * 8, "method": methods * 2,
                                "tps": [float(i + 1) for i in range(8)]}))
    cases = pl.DataFrame({"dataset": ["ls"], "window_id": ["w0"], "device": ["k70_pro"],
                          **{m: [float(i + 1)] for i, m in enumerate(methods)}})
    bars = same_input_chart(cases, "test")
    a, b = _colours(cdf), _colours(bars)
    labels = [METHOD_LABEL[m] for m in methods]
    assert all(label in a and label in b for label in labels)
    assert [a[x] for x in labels] == [b[x] for x in labels]
    assert len({a[x] for x in labels}) == len(labels)  # distinct methods, distinct colours


def test_no_figure_colours_methods_outside_the_shared_palette() -> None:
    own = re.compile(r"alt\.Color\(\s*[\"'](method|Method)[:\"']|color\s*=\s*[\"'](method|Method)[:\"']")
    found = [f"{p.name}:{i}" for p in sorted(FIGURES.glob("*.py"))
             for i, line in enumerate(p.read_text().splitlines(), 1) if own.search(line)]
    assert not found, f"method colours outside figures.paper.method_color: {found}"

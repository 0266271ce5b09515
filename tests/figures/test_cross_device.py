"""D.4.5: the same input on every device, picked by Table 1's rule on one reference device."""

from __future__ import annotations

import polars as pl
import pytest

from workbench.figures.cross_device import same_input
from workbench.figures.runs import MissingTable


def _per_window(tokens: int) -> pl.DataFrame:
    rows = []
    for device, scale in (("xiaomi_14", 1.0), ("k70_pro", 0.5)):
        for w, ratio in (("a", 1.2), ("b", 1.5), ("c", 2.0)):
            for method, tps in (("target_only", 10.0), ("sd", 9.0), ("asp", 10.0), ("as2d", 10.0 * ratio)):
                rows.append({"device": device, "window_id": w, "dataset": "libri", "method": method,
                             "tps": scale * tps, "tokens": tokens})
    return pl.DataFrame(rows)


def test_the_reference_devices_median_window_is_shown_on_every_device():
    cases = same_input(_per_window(80), "xiaomi_14")
    assert cases["window_id"].unique().to_list() == ["b"]  # the median ratio 1.5 of a, b, c
    assert sorted(cases["device"].to_list()) == ["k70_pro", "xiaomi_14"]
    assert cases.filter(pl.col("reference"))["device"].to_list() == ["xiaomi_14"]


def test_no_qualifying_window_is_one_line_not_an_empty_chart():
    with pytest.raises(MissingTable, match=r"^no window on xiaomi_14 has the >= 64 target tokens.*longest has 40"):
        same_input(_per_window(40), "xiaomi_14")

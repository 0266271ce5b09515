"""The D.3 error chart draws each window's noise floor as a whisker when the frame has it."""

from __future__ import annotations

import polars as pl

from workbench.figures.paper import replay_error


def _marks(spec: dict) -> list[str]:
    return [(layer["mark"]["type"] if isinstance(layer["mark"], dict) else layer["mark"]) for layer in spec["layer"]]


def test_the_floor_is_a_whisker_per_window_that_has_one():
    df = pl.DataFrame({"window_id": ["w2", "w1", "w3"], "signed_error_pct": [5.0, -3.0, 12.0],
                       "noise_floor_pct": [4.0, float("nan"), 3.0]})
    spec = replay_error(df).to_dict()
    assert _marks(spec) == ["bar", "rule", "tick", "tick"]
    assert "noise floor" in str(spec["title"]["subtitle"])
    assert spec["layer"][0]["encoding"]["x"]["sort"] == ["w2", "w1", "w3"]  # the frame's order, every layer
    floors = {r["window_id"]: r["noise_floor_pct"] for r in spec["datasets"][spec["layer"][1]["data"]["name"]]}
    assert floors == {"w2": 4.0, "w3": 3.0}  # a window measured once has no whisker
    assert _marks(replay_error(df.drop("noise_floor_pct")).to_dict()) == ["bar"]


def test_a_frame_measured_once_exports(tmp_path):
    """One repetition per window: every floor is NaN, which JSON cannot carry; the chart still exports."""
    from workbench.figures.export import save_chart

    df = pl.DataFrame({"window_id": ["w1"], "signed_error_pct": [5.0], "noise_floor_pct": [float("nan")],
                       "drift_ratio": [float("nan")]})
    assert _marks(replay_error(df).to_dict()) == ["bar"]
    assert {p.suffix for p in save_chart(replay_error(df), tmp_path / "err")} >= {".png", ".svg"}

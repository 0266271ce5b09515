"""F.6 agreement and the cost table's side-by-side shape (pure data: no model needed)."""

from __future__ import annotations

import polars as pl

from workbench.models.mnn.compare import COST_SCHEMA, first_difference, greedy_agreement, side_by_side


def test_first_difference_reports_the_first_parting_position_or_none():
    assert first_difference([1, 2, 3], [1, 2, 3]) is None
    assert first_difference([1, 2, 3], [1, 5, 3]) == 1
    assert first_difference([1, 2, 3], [1, 2]) == 2  # MNN stopped early: parts at the missing token
    assert first_difference([], [7]) == 0


def test_greedy_agreement_names_the_tokens_where_engines_part():
    df = greedy_agreement({"w0": ([4, 5, 6], [4, 5, 6]), "w1": ([4, 5, 6, 9], [4, 8, 6])})
    rows = {r["window_id"]: r for r in df.iter_rows(named=True)}
    assert rows["w0"]["equal"] and rows["w0"]["first_difference"] is None
    assert not rows["w1"]["equal"]
    assert (rows["w1"]["first_difference"], rows["w1"]["torch_token"], rows["w1"]["mnn_token"]) == (1, 5, 8)
    assert (rows["w1"]["torch_tokens"], rows["w1"]["mnn_tokens"]) == (4, 3)


def test_side_by_side_divides_mnn_by_torch_per_model_and_width():
    costs = pl.DataFrame([{"engine": "torch", "model": "base", "width": 1, "ms": 20.0, "reps": 3},
                          {"engine": "mnn", "model": "base", "width": 1, "ms": 15.0, "reps": 3},
                          {"engine": "torch", "model": "base", "width": 8, "ms": 60.0, "reps": 3},
                          {"engine": "mnn", "model": "base", "width": 8, "ms": 30.0, "reps": 3}], schema=COST_SCHEMA)
    t = side_by_side(costs)
    assert t["width"].to_list() == [1, 8]
    assert t["mnn_over_torch"].to_list() == [0.75, 0.5]

"""Native D.3 medians across runs: a speed shared by a whole run moves the raw difference but not the
normalized one, a single window's move is the per-window scatter, windows whose outputs differ are left
out, and the command files its table or refuses a lone store with one line."""

from __future__ import annotations

import math

import pytest

from workbench.native.driver import NativeResult
from workbench.native.episodes import Episodes
from workbench.native.reproducibility import SECTION, RunMedians, main, pair_rows, run_medians, window_differences
from workbench.native.run_store import ReplayInputs, save_runs

OUT = (5, 6, 7, 0)
TIMES = {"w1": (0.20, 0.40), "w2": (0.30, 0.50), "w3": (0.25, 0.45)}  # window -> (As²d, target-only) median (s)


def episodes(scale: float = 1.0, as2d: dict[str, float] | None = None,
             outputs: dict[str, tuple[int, ...]] | None = None) -> Episodes:
    """Three repetitions per method and window around the medians in ``TIMES``: every time times ``scale``,
    a window's As²d times ``as2d[w]`` more, its output ``outputs[w]`` instead of ``OUT``."""
    ep = Episodes()
    for w, (a2, to) in TIMES.items():
        out = (outputs or {}).get(w, OUT)
        for rep, jitter in enumerate((0.98, 1.0, 1.03)):
            t_to, t_a2 = to * scale * jitter, a2 * scale * jitter * (as2d or {}).get(w, 1.0)
            ep.results += [(w, "target_only", rep, NativeResult(w, "target_only", out, (), (), t_to, 0.0)),
                           (w, "as2d", rep, NativeResult(w, "as2d", out, (), (), t_a2, 0.0))]
    return ep


def test_medians_are_taken_per_window_and_method():
    med = run_medians(episodes())
    assert med["w2"].as2d == pytest.approx(0.30) and med["w2"].target_only == pytest.approx(0.50)
    assert med["w1"].output == OUT and med["w1"].as2d_noise_pct > 0


def test_a_run_wide_speed_moves_the_raw_difference_and_not_the_normalized_one():
    d = window_differences(run_medians(episodes()), run_medians(episodes(scale=1.1)))
    assert d["as2d_pct"].to_list() == pytest.approx([100 * (1 / 1.1 - 1)] * 3)
    assert d["target_only_pct"].to_list() == pytest.approx([100 * (1 / 1.1 - 1)] * 3)
    assert d["normalized_pct"].to_list() == pytest.approx([0.0] * 3, abs=1e-9)


def test_one_windows_move_is_the_per_window_scatter_and_its_floor():
    plan = ((1, "packed", 1),)
    pairs = pair_rows([RunMedians("run 1", run_medians(episodes()), plan),
                       RunMedians("run 2", run_medians(episodes(scale=1.1, as2d={"w2": 1.25})), plan),
                       RunMedians("run 3", run_medians(episodes()), ((1, "packed", 3),))])
    row = pairs.row(0, named=True)
    assert pairs["same_plan"].to_list() == [True, False, False]  # run 3 pads one-token steps to 3 rows
    w2 = 100 * (1 / 1.25 - 1)  # run 2's TPS on w2 against run 1's, once the run-wide 1.1 is divided out
    assert row["windows"] == 3 and row["normalized_mean_pct"] == pytest.approx(w2 / 3)
    assert row["window_scatter_pct"] == pytest.approx((abs(w2 - w2 / 3) + 2 * abs(w2 / 3)) / 3)
    assert row["window_floor_pct"] == pytest.approx(row["window_scatter_pct"] / math.sqrt(2))
    assert row["cross_run_floor_pct"] == pytest.approx(row["as2d_mae_pct"] / math.sqrt(2))
    assert row["as2d_mean_pct"] < 0 and row["within_run_floor_pct"] > 0


def test_a_window_whose_outputs_differ_is_left_out():
    d = window_differences(run_medians(episodes()), run_medians(episodes(outputs={"w3": (9, 0)})))
    assert sorted(d["window_id"].to_list()) == ["w1", "w2"]


def test_the_command_files_the_pairs_and_refuses_a_lone_store(tmp_path, capsys):
    inputs = ReplayInputs("producer", {}, 0, 16, 8)
    paths = [str(save_runs(tmp_path / f"r{i}" / "native_runs.json", episodes(scale=s), inputs))
             for i, s in enumerate((1.0, 1.05, 0.97))]
    doc = tmp_path / "results.md"
    main([*paths, "--markdown", str(doc)])
    text = doc.read_text()
    assert f"<!-- {SECTION} -->" in text
    assert sum(line.startswith("| run ") for line in text.splitlines()) == 3  # the three pairs of three runs
    assert "python -m workbench.native.reproducibility" in text and paths[2] in text
    main([*paths[:2], "--markdown", str(doc), "--section", "d3-reproducibility-other"])
    assert "<!-- d3-reproducibility-other -->" in doc.read_text() and f"<!-- {SECTION} -->" in doc.read_text()
    with pytest.raises(SystemExit) as stop:
        main(paths[:1])
    assert "one run store compares with nothing" in str(stop.value) and paths[0] in str(stop.value)
    capsys.readouterr()

"""Execute every notebook (as nbmake would) against runs of the real jobs on SYNTHETIC windows.

A session fixture runs replay (two device profiles), ablation and oracle into a temporary sqlite
store; each notebook then runs in a fresh kernel with ``MLFLOW_TRACKING_URI`` pointing there and
must finish and write its PNGs. One more run points a notebook at an empty store and expects the
one-line "no runs" message instead of a traceback. The .py/.ipynb pairs must agree and carry no
outputs. Equivalent CLI once a store has runs: ``pytest --nbmake notebooks/``.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

from tests.notebook_exec import execute_notebook

REPO = Path(__file__).resolve().parents[1]
NOTEBOOKS = REPO / "notebooks"

# notebook -> PNG stems it must write (figure name prefix + chart stem)
EXPECTED = {
    "fig1_6_timeline": ["fig1_6_excerpt1"],
    "fig3a_drafting_share": ["fig3a_drafting_share"],
    "fig5_tps_cdf": ["fig5_tps_cdf", "fig5_pooled_tps"],
    "fig8_batching_saving": ["fig8_batching_saving"],
    "table1_cases": ["table1_cases"],
    "table2_oracle": ["table2_oracle_gap"],
    "table4_12_slowdowns": ["table4_12_slowdowns"],
    "table5_8_full": ["table5_8_pooled_tps"],
    "table9_10_sd": ["table9_10_fixed_width_sd"],
    "table13_14_tradeoff": ["table13_14_budget_tradeoff", "table13_14_paper_table14"],
    "d27_decomposition": ["d27_decomposition"],
    "d26_validation_grid": ["d26_validation_grid"],  # D.2.6: the full grid ranked on validation
    "d45_same_input": ["d45_same_input"],  # D.4.5: the same window on every device of the replay run
    "d3_agreement": ["d3_paper_table7"],  # the host agreement panel needs the native demo run
    "sensitivity": ["sensitivity_oracle_gap", "sensitivity_ablation_tps"],  # D.4.3 / D.5
}

JOBS = [  # small and SYNTHETIC: the machine is shared; each finishes in well under a minute
    ["experiment=replay", "dataset.n_windows=8", "+devices=[k70_pro,xiaomi_14]"],
    ["experiment=ablation", "dataset.n_windows=8"],
    ["experiment=oracle", "dataset.n_windows=12", "budgets=[2,3,7]", "+devices=[k70_pro,redmi_note_9_pro]",
     "validation_fraction=0.25", "validation_shortlist=null"],  # D.2.6's full grid (older: table2 reads the next)
    ["experiment=oracle", "dataset.n_windows=8", "budgets=[2,3,5,7]", "+devices=[k70_pro,xiaomi_14]"],
    ["experiment=sensitivity", "dataset.n_windows=8", "budgets=[2,3,5,7]"],
]


@pytest.fixture(scope="session")
def store(tmp_path_factory: pytest.TempPathFactory) -> str:
    root = tmp_path_factory.mktemp("mlstore")
    uri = f"sqlite:///{root / 'mlflow.db'}"
    env = {k: v for k, v in os.environ.items() if k != "MLFLOW_TRACKING_URI"}
    for i, args in enumerate(JOBS):
        cmd = [sys.executable, "-m", "workbench.run", *args, f"tracking.uri={uri}", f"out_dir={root / f'job{i}'}"]
        done = subprocess.run(cmd, cwd=REPO, env=env, capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, f"{' '.join(args)} failed:\n{done.stderr[-3000:]}"
    return uri


def execute(name: str, env: dict[str, str], monkeypatch: pytest.MonkeyPatch) -> nbformat.NotebookNode:
    for k, v in env.items():
        monkeypatch.setenv(k, v)  # the kernel inherits the environment at launch
    nb = nbformat.read(NOTEBOOKS / f"{name}.ipynb", as_version=4)
    return execute_notebook(nb, NOTEBOOKS)


def _stdout(nb: nbformat.NotebookNode) -> str:
    return "".join(o.get("text", "") for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", [])
                   if o.get("output_type") == "stream" and o.get("name") == "stdout")


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_notebook_runs_and_writes_pngs(name: str, store: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("AS2D_NOTEBOOK_EXPERIMENT", raising=False)
    nb = execute(name, {"MLFLOW_TRACKING_URI": store, "AS2D_FIGURES_DIR": str(tmp_path)}, monkeypatch)
    for stem in EXPECTED[name]:
        png = tmp_path / f"{stem}.png"
        assert png.is_file() and png.stat().st_size > 5000, f"{name} did not write {png.name}: {_stdout(nb)[-2000:]}"
        assert (tmp_path / f"{stem}.svg").is_file()


def test_empty_experiment_says_so_in_one_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    uri = f"sqlite:///{tmp_path / 'empty.db'}"
    nb = execute("fig5_tps_cdf", {"MLFLOW_TRACKING_URI": uri, "AS2D_NOTEBOOK_EXPERIMENT": "as2d-nothing-here",
                                  "AS2D_FIGURES_DIR": str(tmp_path / "figs")}, monkeypatch)
    lines = [ln for ln in _stdout(nb).splitlines() if ln.strip()]
    assert lines == [f"no runs in experiment 'as2d-nothing-here' at {uri}: run `make demo` (feeds every "
                     "notebook) or `python -m workbench.run experiment=<name>` first"], lines
    assert not any(o.get("output_type") == "error" for c in nb.cells for o in c.get("outputs", []))
    assert not (tmp_path / "figs").exists()


def test_without_setup_a_notebook_reads_the_demo_experiment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """After `make demo` only `as2d-demo` has runs: with no env var naming it, fig5 shows that run's data."""
    root = tmp_path / "store"
    uri = f"sqlite:///{root / 'mlflow.db'}"
    env = {k: v for k, v in os.environ.items() if k not in ("MLFLOW_TRACKING_URI", "AS2D_NOTEBOOK_EXPERIMENT")}
    done = subprocess.run([sys.executable, "-m", "workbench.run", "experiment=replay", "dataset.n_windows=3",
                           "methods=[target_only,as2d]", "tracking.experiment=as2d-demo", f"tracking.uri={uri}",
                           f"out_dir={root / 'job'}"], cwd=REPO, env=env, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]
    monkeypatch.delenv("AS2D_NOTEBOOK_EXPERIMENT", raising=False)
    nb = execute("fig5_tps_cdf", {"MLFLOW_TRACKING_URI": uri, "AS2D_FIGURES_DIR": str(tmp_path / "figs")},
                 monkeypatch)
    out = _stdout(nb)
    assert "no runs" not in out and (tmp_path / "figs" / "fig5_tps_cdf.png").is_file(), out[-2000:]
    # The charts are PNG images in the notebook itself (offline; no Vega from a CDN), and no red warning.
    outputs = [o for c in nb.cells for o in c.get("outputs", [])]
    assert sum("image/png" in o.get("data", {}) for o in outputs) >= 2
    assert not any("application/vnd.vegalite" in k or "cdn.jsdelivr" in str(v)
                   for o in outputs for k, v in o.get("data", {}).items())
    assert not any("IProgress" in o.get("text", "") for o in outputs if o.get("name") == "stderr")


@pytest.mark.parametrize("name", sorted(p.stem for p in NOTEBOOKS.glob("*.py")))
def test_pairs_in_sync_without_outputs(name: str) -> None:
    import jupytext

    py = jupytext.read(NOTEBOOKS / f"{name}.py")
    ipynb = nbformat.read(NOTEBOOKS / f"{name}.ipynb", as_version=4)
    assert [c.source for c in py.cells] == [c.source for c in ipynb.cells], "run `jupytext --sync notebooks/*.py`"
    for c in ipynb.cells:
        assert not c.get("outputs") and not c.get("execution_count"), f"{name}.ipynb has outputs; clear them"
    assert ipynb.metadata["kernelspec"]["name"] == "python3"  # opens with a kernel, no picker


def test_a_notebook_run_leaves_nothing_in_the_temporary_folder(tmp_path: Path,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    """The kernel's sockets and its connection file live in one temporary folder that is removed with
    the kernel: a suite of notebook runs must not fill the system's temporary folder."""
    import tempfile

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("print(6 * 7)")])
    out = execute_notebook(nb, tmp_path, timeout=60)
    assert out.cells[0].outputs[0]["text"].strip() == "42"
    assert list(tmp_path.iterdir()) == []

"""What a notebook shows and saves: a :class:`Result` of charts and labelled tables.

``guarded`` runs a family builder and turns "no runs" / "no table" into one printed line, so a
notebook pointed at an empty store finishes cleanly; ``show`` renders; ``export`` writes PNG+SVG
to ``notebooks/figures/`` (or ``$AS2D_FIGURES_DIR``) and attaches them to the runs they came from.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import altair as alt
import polars as pl
from mlflow.entities import Run

from .export import save_chart
from .runs import MissingTable, NoRuns, log_files
from .selection import Selection

FIGURES_ENV = "AS2D_FIGURES_DIR"
REPO = Path(__file__).resolve().parents[2]


@dataclass
class Result:
    """One figure/table family: charts by file stem, tables by label, and where the data came from."""

    name: str
    charts: dict[str, alt.TopLevelMixin] = field(default_factory=dict)
    tables: dict[str, pl.DataFrame] = field(default_factory=dict)  # labels begin "paper (phones)" / "this run"
    runs: list[Run] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    selection: Selection | None = None  # which runs were drawn; printed first by ``show``


def run_subtitle(runs: list[Run]) -> str:
    """Chart subtitle naming the runs and whether their windows were synthetic."""
    if not runs:
        return "paper values only"
    parts = []
    for r in {r.info.run_id: r for r in runs}.values():  # a run feeding two tables is named once
        synthetic = r.data.tags.get("synthetic") == "True"
        parts.append(f"{r.data.tags.get('job', '?')} run {r.info.run_id[:8]}"
                     + (" (SYNTHETIC windows, not speech)" if synthetic else ""))
    return "this run: " + "; ".join(parts)


def guarded(build: Callable[..., Result], *args: Any, **kwargs: Any) -> Result | None:
    """Call a family builder; missing runs/tables print their one-line message and give ``None``."""
    try:
        return build(*args, **kwargs)
    except (NoRuns, MissingTable) as err:
        print(err)
        return None


def optional(build: Callable[[], Any], notes: list[str]) -> Any:
    """A part of a family that may be absent (e.g. native tables): note it in one line, carry on."""
    try:
        return build()
    except (NoRuns, MissingTable) as err:
        notes.append(str(err))
        return None


def figures_dir() -> Path:
    return Path(os.environ.get(FIGURES_ENV) or REPO / "notebooks" / "figures")


def show(result: Result | None) -> None:
    """Notes, then each labelled table, then each chart (rich output in Jupyter, text elsewhere)."""
    if result is None:
        return
    if result.selection is not None:
        print(result.selection.describe())
    try:
        from IPython.display import Markdown, display
    except ImportError:  # plain python: print instead
        display, Markdown = print, str  # type: ignore[assignment]
    for note in result.notes:
        print(note)
    with pl.Config(tbl_rows=40, tbl_cols=20, float_precision=2, tbl_hide_dataframe_shape=True):
        for label, df in result.tables.items():
            display(Markdown(f"**{label}**"))
            display(df)
    for chart in result.charts.values():
        display(as_image(chart))


def as_image(chart: alt.TopLevelMixin) -> Any:
    """The chart as a PNG rendered here by vl-convert: no Vega from a CDN, so it shows offline (JupyterLab
    without internet), and an executed notebook keeps the figure as an image."""
    import vl_convert as vlc

    try:
        from IPython.display import Image
    except ImportError:
        return chart
    return Image(data=vlc.vegalite_to_png(chart.to_json(), scale=1.5))


def export(result: Result | None, out_dir: Path | None = None, log: bool = True) -> list[Path]:
    """Save every chart as ``<name>_<stem>.png/.svg``; attach them to the source runs' artifacts."""
    if result is None:
        return []
    out = out_dir or figures_dir()
    files: list[Path] = []
    for stem, chart in result.charts.items():
        files.extend(save_chart(chart, out / f"{result.name}_{stem}"))
    if log:
        for run in result.runs:
            log_files(run.info.run_id, files)
    for f in files:
        print(f"wrote {f}")
    return files

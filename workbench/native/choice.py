"""The As²d configuration chosen on dev: the one a test-split bench judges its goals on.

``choose_on_dev`` picks, among the As²d methods of a dev bench run that reproduced target-only
exactly on every window, the one with the highest pooled TPS. It refuses a run that timed any
window outside the dev split (``windows.dev_only``'s rule for native selection), so the choice
can never be fitted on test. The choice is written as JSON beside the dev run (``choice.json``) and
read back by the test run; producer, kernel, batch and online-rule variants are all choices here.
"""

from __future__ import annotations

import datetime
import json
from dataclasses import asdict, dataclass
from pathlib import Path

import polars as pl

from workbench.errors import DataError

CHOICE_FILE = "choice.json"


@dataclass(frozen=True, slots=True)
class Choice:
    method: str
    dev_tps: float
    dev_ratio_target_only: float
    dev_windows: int
    date: str
    machine: str


def choose_on_dev(frames: dict[str, pl.DataFrame], prefix: str = "as2d", machine: str = "") -> Choice:
    """The fastest exact As²d method (name starts with ``prefix``) of a **dev** bench run."""
    runs, summary = frames["runs"], frames["summary"]
    outside = runs.filter(pl.col("split").fill_null("") != "dev")["window_id"].unique().to_list()
    if outside:
        raise DataError(f"the As²d configuration choice was given {len(outside)} window(s) outside the dev split "
                        f"(first: {outside[0]!r}); selection sees dev windows only", where="bench --split",
                        fix="choose on a `--split dev` run; report test with the choice it wrote")
    exact = summary.filter(pl.col("method").str.starts_with(prefix) & (pl.col("matched_share") >= 1.0))
    if not exact.height:
        raise DataError(f"no exact {prefix}* method in this dev run: nothing to choose", where="bench")
    best = exact.sort("tps", descending=True).row(0, named=True)
    return Choice(best["method"], float(best["tps"]), float(best["ratio_target_only"]),
                  int(runs["window_id"].n_unique()), datetime.date.today().isoformat(), machine)


def write_choice(choice: Choice, out_dir: str | Path) -> Path:
    from workbench.io import atomic_write_text

    path = Path(out_dir) / CHOICE_FILE
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_text(path, json.dumps(asdict(choice), indent=1) + "\n")
    return path


def read_choice(path: str | Path) -> Choice | None:
    """The choice a dev run wrote, or None when there is none (a test run then judges no goal)."""
    p = Path(path)
    if not p.is_file():
        return None
    try:
        return Choice(**json.loads(p.read_text()))
    except (ValueError, TypeError) as e:
        raise DataError(f"{p} is not a bench choice ({e})", where=str(p),
                        fix="delete it and rerun the bench with --split dev") from None


__all__ = ["CHOICE_FILE", "Choice", "choose_on_dev", "read_choice", "write_choice"]

"""Which runs a notebook draws: an explicit selector, resolved to job runs, printed and put in every title.

* default -- the newest ``make demo`` run (experiment ``as2d-demo``); in a store without one, the
  newest runs of the notebook's own job experiment (the printed line says so);
* ``run=<id>`` -- one job run (a sweep parent's id selects that sweep; a configuration run, its job run);
* ``experiment=<name>`` -- that experiment's newest job runs;
* ``sweep=<id>`` -- the job runs of one sweep (its parent run id);
* ``budget=<b>`` keeps runs whose As²d replays used that proposal budget; ``data="speech"`` or
  ``"synthetic"`` picks the data kind. Speech and synthetic runs are never pooled: without ``data``, the
  kind of the newest matching run is drawn and the others are counted as left out.

Every table is then drawn once per device x method, from the newest selected run that has it
(``runs.tables_by_device``), so an older run never adds a second curve for the same pair.
``$AS2D_NOTEBOOK_EXPERIMENT`` is the experiment selector for every notebook at once.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field

import polars as pl
from mlflow.entities import Run

from workbench.tracking.run_records import BUDGETS_TAG

from .runs import (
    DEMO_EXPERIMENT,
    EXPERIMENT_ENV,
    OWN_HINTS,
    MissingTable,
    NoRuns,
    _client,
    _hint,
    find_runs,
    latest_table,
)

SPEECH, SYNTHETIC = "speech", "synthetic"
DATA_KINDS = (SPEECH, SYNTHETIC)


def data_kind(run: Run) -> str:
    """``synthetic`` when the run replayed synthetic trajectories (its ``synthetic`` tag), else ``speech``."""
    return SYNTHETIC if run.data.tags.get("synthetic") == "True" else SPEECH


def run_budgets(run: Run) -> set[int]:
    """The As²d proposal budgets a job run replayed: its devices' own budgets (the ``as2d.budgets`` tag: under
    ``budget_from: profile`` a phone replays its deployed budget, not ``model.budget``), else ``model.budget``."""
    tagged = run.data.tags.get(BUDGETS_TAG, "")
    if tagged:
        return {int(b) for b in tagged.split(",") if b.strip().isdigit()}
    raw = run.data.params.get("model.budget")
    return {int(raw)} if raw and raw.isdigit() else set()


@dataclass(frozen=True)
class Selector:
    """What to draw; every field ``None`` means the newest ``make demo`` run."""

    run: str | None = None
    experiment: str | None = None
    sweep: str | None = None
    budget: int | None = None
    data: str | None = None

    def __post_init__(self) -> None:
        if self.data is not None and self.data not in DATA_KINDS:
            raise ValueError(f"DATA={self.data!r}: choose one of {DATA_KINDS} (or None: the newest run's kind)")
        if sum(x is not None for x in (self.run, self.experiment, self.sweep)) > 1:
            raise ValueError("set one of RUN, EXPERIMENT and SWEEP (or none: the newest `make demo` run)")


@dataclass(frozen=True)
class Selection:
    """The job runs a selector resolved to (newest first) and how to name them."""

    what: str  # "latest `make demo` run 1a2b3c4d", "sweep 1a2b3c4d (4 job runs)", ...
    experiment: str
    runs: list[Run]
    data: str
    left_out: list[str] = field(default_factory=list)  # runs not drawn, and why

    @property
    def budgets(self) -> list[int]:
        return sorted(set().union(*(run_budgets(r) for r in self.runs)))

    def title(self, drawn: pl.DataFrame | None = None) -> str:
        """One line for a chart's subtitle: what was selected, the experiment, the data kind, the budget.

        ``drawn``: the table the chart draws (``runs.tables_by_device``, with its ``run_id`` column). When the
        selection spans budgets and the chart draws its speculative rows from fewer (each device x method from
        the newest job), the title names the budget drawn, the selection's budgets and how to draw another."""
        b = self.budgets
        budget = f"As²d budget b={','.join(map(str, b))}" if b else "budget not recorded"
        shown = self._drawn_budgets(drawn)
        if shown and shown != b:
            budget = (f"As²d budget b={','.join(map(str, shown))} drawn of b={','.join(map(str, b))} "
                      "(the newest job per device x method; BUDGET=<b> draws another)")
        data = "SYNTHETIC trajectories, not speech" if self.data == SYNTHETIC else "speech"
        where = [] if self.what.split(" (")[0].endswith(f"experiment {self.experiment}") else [self.experiment]
        return " · ".join([self.what, *where, data, budget])

    def _drawn_budgets(self, drawn: pl.DataFrame | None) -> list[int]:
        if drawn is None or "run_id" not in drawn.columns:
            return []
        rows = drawn.filter(pl.col("method") != "target_only") if "method" in drawn.columns else drawn
        ids = set(rows["run_id"].to_list())
        return sorted(set().union(*(run_budgets(r) for r in self.runs if r.info.run_id in ids)))

    def drawn(self, run: Run) -> Selection:
        """The selection narrowed to the one run a figure read its table from (the newest that logged it)."""
        if [r.info.run_id for r in self.runs] == [run.info.run_id]:
            return self
        others = [r for r in self.runs if r.info.run_id != run.info.run_id]
        left = [f"{len(others)} other run(s) of {self.what}: the table comes from the newest that logged it"]
        return Selection(f"run {run.info.run_id[:8]} ({run.info.run_name})", self.experiment, [run], self.data,
                         left + self.left_out)

    def describe(self) -> str:
        """The printed selection: the title line, each run drawn, and what was left out."""
        lines = [f"selection: {self.title()}"]
        lines += [f"  draws {r.info.run_name or r.data.tags.get('job', '?')} {r.info.run_id[:8]}"
                  f" ({r.data.tags.get('job', '?')}, {data_kind(r)})" for r in self.runs]
        lines += [f"  left out: {why}" for why in self.left_out]
        return "\n".join(lines)


def _name(run: Run) -> str:
    return f"{run.data.tags.get('job', '?')} run {run.info.run_id[:8]}"


def _filter(runs: list[Run], sel: Selector) -> tuple[list[Run], str, list[str]]:
    """Keep one data kind (``sel.data``, else the newest run's) and the budget asked for; say what went."""
    left: list[str] = []
    if sel.budget is not None:
        kept = [r for r in runs if sel.budget in run_budgets(r)]
        left += [f"{_name(r)} (budget {sorted(run_budgets(r)) or '?'}, not {sel.budget})"
                 for r in runs if r not in kept]
        runs = kept
    kind = sel.data or (data_kind(runs[0]) if runs else SPEECH)
    other = [r for r in runs if data_kind(r) != kind]
    if other:
        left.append(f"{len(other)} {'speech' if kind == SYNTHETIC else 'synthetic'} run(s), never pooled with "
                    f"{kind} (DATA={'speech' if kind == SYNTHETIC else 'synthetic'!r} draws them)")
    return [r for r in runs if data_kind(r) == kind], kind, left


def _resolve_run(run_id: str, uri: str | None) -> Run:
    client, u = _client(uri)
    if client is None:
        raise NoRuns(f"no run {run_id} at {u}: {_hint(DEMO_EXPERIMENT)}")
    if len(run_id) < 32:  # a printed 8-character prefix
        exps = [e.experiment_id for e in client.search_experiments()]
        hits = [r for r in client.search_runs(exps, "", max_results=5000) if r.info.run_id.startswith(run_id)]
        if len(hits) != 1:
            raise NoRuns(f"run id prefix {run_id!r} matches {len(hits)} runs at {u}: give the full run id")
        return hits[0]
    try:
        return client.get_run(run_id)
    except Exception as err:  # MlflowException: RESOURCE_DOES_NOT_EXIST
        raise NoRuns(f"no run {run_id} at {u}: copy a run id from the job's last lines or the MLflow UI") from err


def _sweep_runs(parent: Run, uri: str | None) -> list[Run]:
    client, _ = _client(uri)
    pid = parent.info.run_id
    runs = client.search_runs([parent.info.experiment_id], f"tags.sweep_parent = '{pid}' and "
                              "attributes.status = 'FINISHED'", order_by=["attributes.start_time DESC"],
                              max_results=1000)
    return [r for r in runs if r.data.tags.get("as2d.role", "job") == "job"]


Pick = Selector | str | None  # what a figure builder takes: a selector; a bare string is an experiment name


def resolve(pick: Pick, default_experiment: str, prefer_demo: bool = True, uri: str | None = None) -> Selection:
    """:func:`select` for a figure builder's argument: a bare string selects that experiment."""
    return select(Selector(experiment=pick) if isinstance(pick, str) else pick, default_experiment, uri, prefer_demo)


def job_table(pick: Pick, experiment: str, table: str) -> tuple[pl.DataFrame, Run, Selection]:
    """``table`` from the newest selected run that logged it (default: the job ``experiment``'s own runs,
    which the demo does not feed), and the selection narrowed to that run; a missing table names the
    job's command (``runs.OWN_HINTS``)."""
    selection = resolve(pick, experiment, prefer_demo=False)
    try:
        frame, run = latest_table(selection, table)
    except MissingTable as err:
        raise MissingTable(f"{err}; this figure needs `{OWN_HINTS[experiment]}`") from err
    return frame, run, selection.drawn(run)


def select(sel: Selector | None = None, default_experiment: str = DEMO_EXPERIMENT, uri: str | None = None,
           prefer_demo: bool = True) -> Selection:
    """Resolve ``sel`` to the job runs a notebook draws; :class:`NoRuns` (one line) when there are none.

    ``prefer_demo``: the default selection is the newest ``make demo`` run; notebooks whose tables the
    demo does not log (their own job's only) pass ``False`` and default to ``default_experiment``.
    """
    sel = sel or Selector()
    if sel.run is None and sel.experiment is None and sel.sweep is None and os.environ.get(EXPERIMENT_ENV):
        sel = Selector(experiment=os.environ[EXPERIMENT_ENV], budget=sel.budget, data=sel.data)
    if sel.run is not None or sel.sweep is not None:
        run = _resolve_run(sel.run or sel.sweep or "", uri)
        exp = _client(uri)[0].get_experiment(run.info.experiment_id).name
        role = run.data.tags.get("as2d.role")
        if role == "sweep" or "sweep_dir" in run.data.tags:
            runs, kind, left = _filter(_sweep_runs(run, uri), sel)
            what = f"sweep {run.info.run_id[:8]} ({run.info.run_name}, {len(runs)} job run(s))"
        else:
            if role == "config":  # a configuration's child run: draw the job run it belongs to
                run = _resolve_run(run.data.tags["mlflow.parentRunId"], uri)
            runs, kind, left = _filter([run], sel)
            what = f"run {run.info.run_id[:8]} ({run.info.run_name})"
        if not runs:
            raise NoRuns(f"{what} has no finished job run matching {sel}: {'; '.join(left) or 'none finished'}")
        return Selection(what, exp, runs, kind, left)
    if sel.experiment is None and prefer_demo:
        try:
            demo = find_runs(DEMO_EXPERIMENT, uri=uri)
        except NoRuns:
            demo = []
        made = [r for r in demo if r.data.tags.get("job") == "demo"] or demo
        runs, kind, left = _filter(made, sel)
        if runs:
            newest = runs[0]
            skipped = [f"{len(runs) - 1} older {DEMO_EXPERIMENT} run(s)"] if len(runs) > 1 else []
            what = ("latest `make demo` run" if newest.data.tags.get("job") == "demo" else "latest run") + \
                f" {newest.info.run_id[:8]}"
            return Selection(what, DEMO_EXPERIMENT, [newest], kind, skipped + left)
    exp = sel.experiment or default_experiment
    runs, kind, left = _filter(find_runs(exp, uri=uri), sel)
    if not runs:
        raise NoRuns(f"no finished runs in experiment '{exp}' match {sel}: {'; '.join(left)}")
    what = f"experiment {exp} ({len(runs)} newest job run(s), one per device x method)"
    if sel.experiment is None and prefer_demo:
        what = f"no `make demo` run in this store; {what}"
    return Selection(what, exp, runs, kind, left)

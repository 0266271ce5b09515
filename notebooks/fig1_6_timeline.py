# %% [markdown]
# # Fig. 1 / Fig. 6 — producer vs verifier timeline
#
# Two excerpts of one As²d window chosen by the rule of D.4.5: the first multi-candidate rejection and the
# first fully accepted widest call. Bars are completed stage intervals (producer, verifier, queue/other);
# labels give the physical width K and the candidates ready at the decision; markers flag rejections.
# Source: the native host trace logged by the `demo` job (`native_stages` / `native_rounds`); without one, a
# replay trace priced by a device profile, labelled as such.
#
# Numbers labelled **paper (phones)** are copied from the paper (`workbench/figures/paper_values.py`,
# each with its table or section); **this run** comes from your MLflow runs. They are shown side by
# side and never mixed. Runs come from `$MLFLOW_TRACKING_URI` (default `sqlite:///mlruns/mlflow.db`).
#
# Produce the runs first:
#
# ```
# python -m workbench.run job=demo   # native host trace; else experiment=replay
# ```

# %%
from workbench.figures import families, report, selection

# %% tags=["parameters"]
# Which runs to draw; the selection is printed below and named in every chart's subtitle. All None: the
# newest `make demo` run (in a store without one, this job's newest runs). $AS2D_NOTEBOOK_EXPERIMENT
# sets EXPERIMENT for every notebook.
RUN = None         # a job run id (8 characters are enough), or a sweep parent's id: that sweep's job runs
EXPERIMENT = None  # an experiment name: its newest job runs, each device x method drawn once
BUDGET = None      # only runs whose As²d replays used this proposal budget (e.g. one job of a budget sweep)
DATA = None        # "speech" or "synthetic": never pooled; None draws the newest selected run's kind

# %%
SELECT = selection.Selector(run=RUN, experiment=EXPERIMENT, budget=BUDGET, data=DATA)
result = report.guarded(families.fig1_timeline, SELECT)

# %% [markdown]
# Tables (paper and this run under separate labels), then the charts.

# %%
report.show(result)

# %% [markdown]
# PNG + SVG into `notebooks/figures/` (or `$AS2D_FIGURES_DIR`) and into the source runs' artifacts
# under `figures/notebooks/`.

# %%
files = report.export(result)

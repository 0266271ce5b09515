# %% [markdown]
# # Cost sensitivity — oracle gap and ablations under low and high concurrent ratios
#
# D.4.3 repeats the oracle search "under nominal, low-ratio, and high-ratio scenarios"; D.5.1–D.5.3
# replace the extrapolated concurrent/idle ratio by the profile's stated extremes. Only that ratio moves:
# idle costs, direct concurrent figures, source and publication costs stay as calibrated. The deployed
# (source, budget) is selected on the dev split under nominal costs and frozen (D.2.6).
#
# Numbers labelled **paper (phones)** are copied from D.4.3 / D.5; **this run** comes from your MLflow
# runs. They are shown side by side and never mixed. These are cost-model sensitivity ranges, not
# confidence intervals. Produce the run first:
#
# ```
# python -m workbench.run experiment=sensitivity '+devices=[k70_pro,xiaomi_14]'
# ```

# %%
from workbench.figures import report, selection, sensitivity

# %% tags=["parameters"]
# Which runs to draw; the selection is printed below and named in every chart's subtitle. All None:
# the newest runs of `as2d-sensitivity` (the demo does not run the cost scenarios).
# $AS2D_NOTEBOOK_EXPERIMENT sets EXPERIMENT for every notebook.
RUN = None         # a job run id (8 characters are enough), or a sweep parent's id: that sweep's job runs
EXPERIMENT = None  # an experiment name: its newest job runs
SWEEP = None       # a sweep parent's run id: that sweep's job runs
DATA = None        # "speech" or "synthetic": never pooled; None draws the newest selected run's kind

# %% [markdown]
# This run's oracle gap and ablation arms per scenario beside the paper's sensitivity figures (pooled
# TPS of the w/o-BC arm, D.5.1–D.5.3; oracle gap ranges, D.4.3), under separate labels, then the charts.

# %%
SELECT = selection.Selector(run=RUN, experiment=EXPERIMENT, sweep=SWEEP, data=DATA)
result = report.guarded(sensitivity.sensitivity, SELECT)

# %%
report.show(result)

# %% [markdown]
# PNG + SVG into `notebooks/figures/` (or `$AS2D_FIGURES_DIR`) and into the source runs' artifacts
# under `figures/notebooks/`.

# %%
files = report.export(result)

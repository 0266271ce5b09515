# %% [markdown]
# # D.4.5 — the same input on every device
#
# Table 1's rule picks, per dataset, the completed window nearest the median gain of As²d over the faster
# of SD and SpecASR (≥ 64 target tokens, ties by id) on Xiaomi 14. The paper then shows the K70 read-speech
# case on *the same audio*, "rather than selecting a second favorable input": a different device on one
# shared input. This notebook picks the cases once, on Xiaomi 14 when the runs have it, and shows the very
# same windows on every device of the replay runs.
#
# **paper (phones)**: Table 1's Xiaomi 14 values (the paper prints no other device's TPS on these inputs).
# **this run** comes from your MLflow runs; the two are shown side by side, never mixed.
#
# Produce the runs first (one replay over several devices):
#
# ```
# python -m workbench.run experiment=replay +devices=[xiaomi_14,k70_pro,xiaomi_11_pro,redmi_note_9_pro]
# python -m workbench.run experiment=replay dataset=demo +devices=[xiaomi_14,k70_pro]
# ```

# %%
from workbench.figures import report, selection
from workbench.figures.cross_device import cross_device

# %% tags=["parameters"]
# Which runs to draw; the selection is printed below and named in every chart's subtitle. All None:
# the newest runs of `as2d-replay` (the demo's clips are shorter than D.4.5's windows).
# $AS2D_NOTEBOOK_EXPERIMENT sets EXPERIMENT for every notebook.
RUN = None         # a job run id (8 characters are enough), or a sweep parent's id: that sweep's job runs
EXPERIMENT = None  # an experiment name: its newest job runs
SWEEP = None       # a sweep parent's run id: that sweep's job runs
BUDGET = None      # only runs whose As²d replays used this proposal budget
DATA = None        # "speech" or "synthetic": never pooled; None draws the newest selected run's kind

# %%
SELECT = selection.Selector(run=RUN, experiment=EXPERIMENT, sweep=SWEEP, budget=BUDGET, data=DATA)
result = report.guarded(cross_device, SELECT)

# %%
report.show(result)

# %% [markdown]
# PNG + SVG into `notebooks/figures/` (or `$AS2D_FIGURES_DIR`) and into the source runs' artifacts.

# %%
files = report.export(result)

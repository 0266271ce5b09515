# %% [markdown]
# # Fig. 3(b) — drafting need not wait for updated text (B.3.2)
#
# Per audio block, the producer proposes up to 32 tokens twice: with the preceding transcript as context
# (*with context*) and with none (*without context*); the target checks both under the same context.
# The chart is the distribution of the paired differences, without minus with, per corpus; the grey band
# is ±0.05, the paper's threshold for "changed".
#
# **paper (phones)** numbers are copied from B.3.2 (Qwen3-ASR 0.6B vs 1.7B, 480 blocks of AMI, GigaSpeech,
# SPGISpeech, Earnings22: median 0, 72.3% unchanged, 9.6% reduced and 15.6% increased by > 0.05).
# **this run** comes from your MLflow runs, with your pair and corpora; the two are shown side by side.
#
# Produce the runs first, one per corpus (`dataset.root` holds the corpus's own layout, see README):
#
# ```
# python -m workbench.run experiment=context_probe dataset=ami dataset.root=/data/ami
# python -m workbench.run experiment=context_probe dataset=demo probe.block_start=2 probe.block_seconds=2
# ```

# %%
from workbench.figures import report, selection
from workbench.figures.fig3b import fig3b_context, paper_fig3b

# %% tags=["parameters"]
# Which runs to draw; the selection is printed below and named in every chart's subtitle. All None:
# the newest runs of `as2d-context_probe` (the demo runs no context probe).
# $AS2D_NOTEBOOK_EXPERIMENT sets EXPERIMENT for every notebook.
RUN = None         # a job run id (8 characters are enough), or a sweep parent's id: that sweep's job runs
EXPERIMENT = None  # an experiment name: its newest job runs
SWEEP = None       # a sweep parent's run id: that sweep's job runs
DATA = None        # "speech" or "synthetic": never pooled; None draws the newest selected run's kind

# %% [markdown]
# The paper's B.3.2 numbers (always shown; they need no run).

# %%
paper_fig3b()

# %%
SELECT = selection.Selector(run=RUN, experiment=EXPERIMENT, sweep=SWEEP, data=DATA)
result = report.guarded(fig3b_context, SELECT)

# %%
report.show(result)

# %% [markdown]
# PNG + SVG into `notebooks/figures/` (or `$AS2D_FIGURES_DIR`) and into the source runs' artifacts.

# %%
files = report.export(result)

# %% [markdown]
# # B.1 — acceptance is content dependent (per-corpus distribution)
#
# Strict prefix acceptance per corpus: the producer's proposal without any preceding transcript (as the
# target-decoupled producer runs) against the target's greedy continuation on the same audio block, up to
# 32 tokens. Each row of a `context_probe` table is one block; this notebook takes, per dataset, the
# newest context-probe run that covers it and shows the distribution (median, quartiles, share at zero).
#
# **paper (phones)** medians are copied from Appendix B.1 (Parakeet 110M CTC proposer, Qwen3-ASR 1.7B
# target, K=32, 28,595 blocks: AMI 0.55, SPGISpeech 0.52, GigaSpeech 0.31, Earnings22 0). **this run**
# comes from your MLflow runs, with your pair and corpora; the two are shown side by side, never mixed.
#
# Produce the runs first, one per corpus (`dataset.root` holds the corpus's own layout, see README):
#
# ```
# python -m workbench.run experiment=context_probe dataset=ami dataset.root=/data/ami
# python -m workbench.run experiment=context_probe dataset=librispeech dataset.root=/data/LibriSpeech
# python -m workbench.run experiment=context_probe dataset=demo probe.block_start=2 probe.block_seconds=2
# ```

# %%
from workbench.figures import report, selection, tasks

# %% tags=["parameters"]
# Which runs to draw; the selection is printed below and named in every chart's subtitle. All None:
# the newest runs of `as2d-context_probe` (the demo runs no context probe).
# $AS2D_NOTEBOOK_EXPERIMENT sets EXPERIMENT for every notebook.
RUN = None         # a job run id (8 characters are enough), or a sweep parent's id: that sweep's job runs
EXPERIMENT = None  # an experiment name: its newest job runs
SWEEP = None       # a sweep parent's run id: that sweep's job runs
DATA = None        # "speech" or "synthetic": never pooled; None draws the newest selected run's kind

# %% [markdown]
# The paper's per-corpus medians (always shown; they need no run).

# %%
tasks.paper_b1()

# %%
SELECT = selection.Selector(run=RUN, experiment=EXPERIMENT, sweep=SWEEP, data=DATA)
result = report.guarded(tasks.b1_acceptance, SELECT)

# %%
report.show(result)

# %% [markdown]
# PNG + SVG into `notebooks/figures/` (or `$AS2D_FIGURES_DIR`) and into the source runs' artifacts.

# %%
files = report.export(result)

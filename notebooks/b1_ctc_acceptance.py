# %% [markdown]
# # B.1 — acceptance is content dependent, with chunk (CTC) proposers
#
# Strict prefix acceptance per corpus of proposals made from the audio block alone -- no transcript, as a
# chunk source runs -- against the target's greedy continuation of the same block, up to 32 tokens. The
# proposers are the workbench's external chunk sources: PocketSphinx en-US (offline) and a transformers
# `ParakeetForCTC` release (the paper's proposer family). Each box is one (corpus, proposer).
#
# **paper (phones)** medians are copied from Appendix B.1 (Parakeet 110M CTC proposer, Qwen3-ASR 1.7B
# target, K=32, 28,595 blocks: AMI 0.55, SPGISpeech 0.52, GigaSpeech 0.31, Earnings22 0). **this run**
# comes from your MLflow runs, with your target, proposers and corpora; the two are never mixed.
#
# Produce the runs first:
#
# ```
# python -m workbench.run experiment=ctc_probe probe.block_start=2 probe.block_seconds=2
# python -m workbench.run experiment=ctc_probe dataset=ami dataset.root=/data/ami \
#     probe.proposers=[pocketsphinx_en,parakeet_ctc] probe.parakeet_ctc.local_path=/path/parakeet-ctc-0.6b
# ```

# %%
from workbench.figures import report, selection
from workbench.figures.b1_ctc import b1_ctc
from workbench.figures.tasks import paper_b1

# %% tags=["parameters"]
# Which runs to draw; the selection is printed below and named in every chart's subtitle. All None:
# the newest runs of `as2d-ctc_probe` (the demo runs no CTC probe).
# $AS2D_NOTEBOOK_EXPERIMENT sets EXPERIMENT for every notebook.
RUN = None         # a job run id (8 characters are enough), or a sweep parent's id: that sweep's job runs
EXPERIMENT = None  # an experiment name: its newest job runs
SWEEP = None       # a sweep parent's run id: that sweep's job runs
DATA = None        # "speech" or "synthetic": never pooled; None draws the newest selected run's kind

# %% [markdown]
# The paper's per-corpus medians (always shown; they need no run).

# %%
paper_b1()

# %%
SELECT = selection.Selector(run=RUN, experiment=EXPERIMENT, sweep=SWEEP, data=DATA)
result = report.guarded(b1_ctc, SELECT)

# %%
report.show(result)

# %% [markdown]
# PNG + SVG into `notebooks/figures/` (or `$AS2D_FIGURES_DIR`) and into the source runs' artifacts.

# %%
files = report.export(result)

# %% [markdown]
# # Table 3 — translation and spoken QA: speed beside task quality
#
# Pooled TPS per method on each task cohort (CoVoST 2 en→zh and zh→en, Spoken SQuAD QA≥16), As²d's gain
# over the fastest baseline, and the target's task quality: BLEU/chrF (translation), token F1 (QA), WER/CER
# (ASR datasets). Quality describes the target: every speculative method reproduces its output token for
# token (each replay is audited), so there is one quality row per dataset.
#
# **paper (phones)** values are copied from the paper's Table 3 (Section 5.2, Redmi K70 Pro phone-cost
# replay, 80 samples per task, Qwen2.5-Omni-7B target and Omni-3B drafter) and its accompanying text
# (conditional acceptance, accepted-token coverage); the paper prints no quality scores for these cohorts.
# **this run** comes from your MLflow runs; the two are shown side by side and never mixed.
#
# Produce the runs first (one per task dataset; `dataset.root` holds the dataset's own layout, see README):
#
# ```
# python -m workbench.run experiment=replay model=qwen2_5_omni dataset=covost2_en_zh dataset.root=/data/cv
# python -m workbench.run experiment=replay model=qwen2_5_omni dataset=covost2_zh_en dataset.root=/data/cv
# python -m workbench.run experiment=replay model=qwen2_5_omni dataset=spoken_squad dataset.root=/data/spoken-squad
# ```

# %%
from workbench.figures import report, selection, tasks

# %% tags=["parameters"]
# Which runs to draw; the selection is printed below and named in every chart's subtitle. All None:
# the newest runs of `as2d-replay` (the demo logs no task quality).
# $AS2D_NOTEBOOK_EXPERIMENT sets EXPERIMENT for every notebook.
RUN = None         # a job run id (8 characters are enough), or a sweep parent's id: that sweep's job runs
EXPERIMENT = None  # an experiment name: its newest job runs
SWEEP = None       # a sweep parent's run id: that sweep's job runs
BUDGET = None      # only runs whose As²d replays used this proposal budget
DATA = None        # "speech" or "synthetic": never pooled; None draws the newest selected run's kind

# %% [markdown]
# The paper's Table 3 (always shown; it needs no run).

# %%
tasks.paper_table3()

# %%
SELECT = selection.Selector(run=RUN, experiment=EXPERIMENT, sweep=SWEEP, budget=BUDGET, data=DATA)
result = report.guarded(tasks.table3_tasks, SELECT)

# %%
report.show(result)

# %% [markdown]
# PNG + SVG into `notebooks/figures/` (or `$AS2D_FIGURES_DIR`) and into the source runs' artifacts.

# %%
files = report.export(result)

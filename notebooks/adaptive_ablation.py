# %% [markdown]
# # Adaptive As²d — ablation, variant by variant
#
# Beyond the paper (F.1, F.3). Per device profile, on the test split: target-only, fixed As²d with the
# dev-selected (source, budget) (D.2.6), each variant alone — online budget (`as2d_online`), guarded
# anchor (`as2d_guarded`), substitution guess (`as2d_subst`), hybrid candidates (`as2d_hybrid`), online
# source choice among resident sources (`as2d_sources`) — and their combination (`as2d_adaptive`). The
# resident source set of the multi-source methods is chosen on the dev split too (sources share the
# phone's drafting workers, so more sources are not free). Per method: pooled TPS, the share of windows
# slower than target-only, and the gap to the per-window hindsight oracle over the fixed catalog (D.4.3;
# negative when an adaptive method beats the best fixed choice per window). Beside it, the share of the
# same oracle over a stronger fixed catalog (guarded anchor, EOS left to the bonus: the rules of adaptive As²d a
# fixed configuration could use too), so a gain they explain is not read as adaptation. Goals (docs/adaptive.md):
# combination ≥ 99% of the oracle on every profile, ≥ 98% on Xiaomi 14, never more than 1% below
# fixed As²d.
#
# For reference, **paper (phones)**: the paper's fixed dev-selected budget as a share of its oracle
# (D.4.3, `workbench/figures/paper_values.py`). The two are never mixed: the paper's numbers come from its
# cohorts, this run's from the job's windows.
#
# Produce the run first (synthetic catalog, or the demo's cached traces with `dataset=demo`):
#
# ```
# python -m workbench.run experiment=adaptive dataset.n_windows=240
# python -m workbench.run experiment=adaptive dataset=demo \
#     'devices=[host,k70_pro,xiaomi_11_pro,xiaomi_14,redmi_note_9_pro]'
# ```
#
# Runs come from `$MLFLOW_TRACKING_URI` (default `sqlite:///mlruns/mlflow.db`); `$AS2D_ADAPTIVE_BENCH` may
# instead name a parquet written by `benchmarks/adaptive_bench.py --out`. Without either this notebook says
# so in one line and writes no figure.

# %%
import os

from workbench.figures import adaptive, report, selection

# %% tags=["parameters"]
# Which runs to draw; the selection is printed below and named in the chart's subtitle. All None:
# the newest runs of `as2d-adaptive` (the demo does not run it).
# $AS2D_NOTEBOOK_EXPERIMENT sets EXPERIMENT for every notebook.
RUN = None         # a job run id (8 characters are enough), or a sweep parent's id: that sweep's job runs
EXPERIMENT = None  # an experiment name: its newest job runs
SWEEP = None       # a sweep parent's run id: that sweep's job runs
DATA = None        # "speech" or "synthetic": never pooled; None draws the newest selected run's kind
BENCH = os.environ.get("AS2D_ADAPTIVE_BENCH", "")  # optional parquet from benchmarks/adaptive_bench.py (no run)

# %%
SELECT = selection.Selector(run=RUN, experiment=EXPERIMENT, sweep=SWEEP, data=DATA)
result = report.guarded(adaptive.adaptive, SELECT, bench=BENCH or None)

# %% [markdown]
# This run: pooled TPS, share of windows slower than target-only, oracle gap, share of the strong
# oracle (older runs lack it), change against fixed As²d. The last row,
# `online_source_hindsight`, is no method: per window the faster of the online budget on each source
# alone, picked in hindsight -- a bound for any online source choice over those readers. Nor is
# `resident_choice_hindsight`: the same pick over the combination's resident set, with every resident
# producer running on the shared drafting workers -- a bound for any choice rule over that set.
#
# What the deployment fixed on dev, per device, before any test window ran: the (source, budget) of fixed
# As²d, the resident source sets, where the online estimates start (`prior`: the slot acceptance fixed As²d
# saw on dev; `draft_prior`: serial SD's), the prior's weight in rounds, and whether the combination drafts.
#
# Paper (phones), for reference: the fixed dev-selected budget's share of the oracle (D.4.3).

# %%
report.show(result)

# %% [markdown]
# PNG + SVG into `notebooks/figures/` (or `$AS2D_FIGURES_DIR`) and into the source run's artifacts
# under `figures/notebooks/`.

# %%
files = report.export(result)

"""One builder per paper figure/table family; each notebook calls exactly one of them.

A builder resolves the notebook's selector (``selection``: the newest ``make demo`` run by default;
a run, an experiment or a sweep by parameter), loads that selection's tables once per device x
method (``runs``), applies the paper's rule (``analysis``), builds the charts (``paper``) and
returns a :class:`Result` whose tables keep "paper (phones)" and "this run" under separate labels
and whose chart subtitles name the selection: what, experiment, data kind, budget.
"""

from __future__ import annotations

from pathlib import Path

import polars as pl

from . import analysis as A
from . import d3_terms as D3
from . import paper as P
from . import paper_values as PV
from .report import Result, optional
from .runs import MissingTable, NoRuns, latest_table, tables_by_device
from .selection import SPEECH, Pick, Selection, Selector, resolve, select

# Native host tables the `demo` job logs (workbench/jobs/native_demo.py); one place to rename them.
NATIVE_EXPERIMENT = "as2d-demo"
NATIVE_STAGES, NATIVE_ROUNDS, AGREEMENT = "native_stages", "native_rounds", "agreement"


def _select(sel: Pick, default: str) -> Selection:
    return resolve(sel, default)


def _companion(selection: Selection, experiment: str, notes: list[str], what: str) -> Selection | None:
    """Runs of another job's experiment (ablation arms, say) of the selection's data kind, or a note that
    the optional ``what`` is left out (the table and chart are drawn without it)."""
    try:
        return select(Selector(experiment=experiment, data=selection.data), experiment)
    except NoRuns as err:
        notes.append(f"optional {what} left out: {err}")
        return None


def _label(df: pl.DataFrame, provenance: str) -> pl.DataFrame:
    out = df.with_columns(pl.lit(provenance).alias("provenance"))
    if "device" in out.columns:
        out = out.with_columns(pl.col("device").replace(PV.PHONES).alias("Device"))
    if "method" in out.columns:
        out = out.with_columns(pl.col("method").replace(P.METHOD_LABEL).alias("Method"))
    return out


def _side(paper: pl.DataFrame, this_run: pl.DataFrame, keys: list[str], value: str) -> pl.DataFrame:
    """Wide comparison: one column per provenance, joined on ``keys``; nothing averaged across them."""
    a = paper.select(*keys, pl.col(value).alias(f"{value} | {PV.PAPER}"))
    b = this_run.select(*keys, pl.col(value).alias(f"{value} | {PV.THIS_RUN}"))
    return b.join(a, on=keys, how="left").sort(keys)


def _stack(paper: pl.DataFrame, this_run: pl.DataFrame, cols: list[str]) -> pl.DataFrame:
    return pl.concat([_label(paper, PV.PAPER).select(cols), _label(this_run, PV.THIS_RUN).select(cols)])


def fig5_tps_cdf(sel: Pick = None) -> Result:
    """Fig. 5: per-window TPS CDFs per device profile (SD = mean of K=5..8 within each window); pooled
    speedup over target-only beside Table 8 'All' (a ratio, so a 150 TPS host and 5 TPS phones share an axis)."""
    selection = _select(sel, "as2d-replay")
    per, runs = tables_by_device(selection, "per_window")
    windows, _ = tables_by_device(selection, "windows")
    sub = selection.title(windows)  # the budget drawn, when a sweep spans several
    pooled = A.pooled_by_dataset(windows).filter(pl.col("dataset") == "all")
    paper = PV.table8().filter(pl.col("dataset") == "all")
    keep = pl.col("method").is_in(A.BASELINES + ("as2d",))
    bars = _stack(A.speedup_vs_target(paper.filter(keep)), A.speedup_vs_target(pooled.filter(keep)),
                  ["provenance", "Device", "Method", "speedup"])
    return Result("fig5", {
        "tps_cdf": P.tps_cdf(per, subtitle=sub),
        "pooled_tps": P.side_by_side_bars(bars, "Device", "speedup", "Method",
                                          "Pooled speedup over target-only per device (Fig. 5 / Table 8)",
                                          "Device", "Pooled TPS / target-only pooled TPS", "Method", sub),
    }, {"this run: pooled TPS (all windows)": pooled,
        "paper (phones) vs this run: pooled TPS": _side(paper, pooled, ["device", "method"], "tps")}, runs,
        selection=selection)


def fig3a_drafting_share(sel: Pick = None) -> Result:
    """Fig. 3(a): drafting share of serial SD (K8) decode time, per profile and, if logged, the native host."""
    selection = _select(sel, "as2d-replay")
    stages, runs = tables_by_device(selection, "stages")
    this_run = A.drafting_share(stages)
    notes: list[str] = []
    native = None
    if selection.data == SPEECH:  # native stages are real speech: never beside synthetic replays
        native = optional(lambda: latest_table(selection, NATIVE_STAGES), notes)
    if native is not None:
        nat = A.drafting_share(native[0]).with_columns(pl.format("{} (native)", "device").alias("device"))
        this_run = pl.concat([this_run, nat], how="diagonal_relaxed")
        runs = [*runs, native[1]]
    df = _stack(PV.drafting_share(), this_run, ["provenance", "Device", "share_pct"]).with_columns(
        pl.lit("SD K8 drafting").alias("part"))
    chart = P.side_by_side_bars(df, "Device", "share_pct", "part", "Drafting share of serial SD time (Fig. 3a)",
                                "Device", "Drafting share of decode time (%)", "Stage", selection.title(),
                                y_domain=[0, 100])
    return Result("fig3a", {"drafting_share": chart},
                  {"paper (phones) vs this run: drafting share (%)": _side(PV.drafting_share(), this_run, ["device"],
                                                                           "share_pct")}, runs, notes, selection)


def _measured_on(path: Path) -> str:
    """The first ``measured on host <date>`` a profile file records, or ``date not recorded``."""
    import re

    m = re.search(r"measured on \S+ (\d{4}-\d{2}-\d{2})", path.read_text(errors="replace"))
    return f"measured {m.group(1)}" if m else "date not recorded"


def _host_curves(max_k: int) -> tuple[list[tuple[str, dict[int, float]]], list[str]]:
    """The host's R(K) curves, each named by where its numbers come from: the committed reference file and
    every calibration cached on this machine (``fingerprint.profile_cache_dir``), with machine and date."""
    from workbench.native.fingerprint import cpu_model, profile_cache_dir
    from workbench.replay.profile import DEVICE_DIR, load_profile

    curves, notes = [], []
    files = [("committed reference conf/device/host.yaml", DEVICE_DIR / "host.yaml")]
    cached = sorted(profile_cache_dir().glob("host-*.yaml")) if profile_cache_dir().is_dir() else []
    for f in cached:
        cpu = (load_profile(f).machine or {}).get("cpu")
        files.append((f"{'this' if cpu == cpu_model() else 'another'} machine's calibration {f.stem}", f))
    if not cached:
        notes.append(f"no host calibration cached on this machine ({profile_cache_dir()}): `make demo` "
                     "or `python -m workbench.run experiment=calibrate_host` measures one")
    for what, path in files:
        if not path.is_file():
            continue
        prof = load_profile(path)
        machine = prof.machine or {}
        where = f"{machine.get('cpu', '?')}, {machine.get('cores', '?')} cores, engine {machine.get('engine', '?')}"
        curves.append((f"host: {what} ({where}; {_measured_on(path)})",
                       {k: prof.verify_ms(k) for k in prof.verifier.widths() if k <= max_k}))
    return curves, notes


def fig8_batching_saving(max_k: int = 15) -> Result:
    """Fig. 8: R(K) per device profile (conf/device) and each host measurement, named by its source and date.

    Phone profiles whose curves coincide (derived from the same published costs) are drawn once, their
    line named after all of them and marked "identical curves".
    """
    from workbench.replay.profile import available_profiles, load_profile

    groups: dict[tuple, list[str]] = {}
    curves: dict[tuple, pl.DataFrame] = {}
    for name in (n for n in available_profiles() if n != "host"):
        prof = load_profile(name)
        frame = A.batching_saving({k: prof.verify_ms(k) for k in prof.verifier.widths() if k <= max_k}).filter(
            pl.col("K") >= 2)
        # Equal to 0.01 percentage points (what a reader can tell apart): one line, named after all of them.
        key = tuple(zip(frame["K"].to_list(), [round(v, 2) for v in frame["saving_pct"].to_list()], strict=True))
        groups.setdefault(key, []).append(name)
        curves[key] = frame
    frames = []
    for key, names in groups.items():
        label = " = ".join(names) + (" (identical curves, drawn once)" if len(names) > 1 else "")
        frames.append(curves[key].with_columns(pl.lit(label).alias("device"),
                                               pl.lit("phone profiles (conf/device, from published costs)")
                                               .alias("provenance")))
    host, notes = _host_curves(max_k)
    for label, verify in host:
        frames.append(A.batching_saving(verify).filter(pl.col("K") >= 2).with_columns(
            pl.lit(label).alias("device"), pl.lit("host (measured)").alias("provenance")))
    paper = PV.batching_saving().select("device", "K", "saving_pct", "provenance")
    df = pl.concat([paper, *[f.select(paper.columns) for f in frames]])
    sub = "phone profiles are derived from the paper's published costs (see each YAML's rules)"
    return Result("fig8", {"batching_saving": P.saving_panels(df, subtitle=sub)},
                  {"R(K) per device (%)": df.pivot(on="K", index=["provenance", "device"], values="saving_pct")},
                  [], notes)


def table1_cases(sel: Pick = None, prefer: str = "xiaomi_14") -> Result:
    """Table 1: representative windows by the median-gain rule of D.4.5 (paper: Xiaomi 14)."""
    selection = _select(sel, "as2d-replay")
    per, runs = tables_by_device(selection, "per_window")
    windows, _ = tables_by_device(selection, "windows")
    cases = A.representative_windows(A.with_dataset(per, windows))
    devices = cases["device"].unique().to_list()
    if not devices:
        raise MissingTable(f"no device in {selection.what!r} has target_only, sd, asp and as2d per-window TPS")
    device = prefer if prefer in devices else sorted(devices)[0]
    this_run = cases.filter(pl.col("device") == device)
    long = lambda df: df.unpivot(index=["dataset"], on=["target_only", "sd", "asp", "as2d"],  # noqa: E731
                                 variable_name="method", value_name="tps")
    bars = _stack(long(PV.table1()), long(this_run), ["provenance", "dataset", "Method", "tps"])
    return Result("table1", {"cases": P.side_by_side_bars(
        bars, "dataset", "tps", "Method", f"Representative windows (Table 1); this run: {device}", "Dataset",
        "Window throughput (tokens/s)", "Method", selection.title())},
        {f"{PV.PAPER}: Table 1 (Xiaomi 14)": PV.table1().drop("provenance", "source"),
         f"{PV.THIS_RUN}: {device}, window nearest the median gain over max(SD, SpecASR)": this_run}, runs,
        selection=selection)


def table2_oracle(sel: Pick = None) -> Result:
    """Table 2 / D.4.3: pooled TPS shortfall of the dev-selected (source, budget) from the hindsight oracle."""
    selection = _select(sel, "as2d-oracle")
    oracle, runs = tables_by_device(selection, "oracle", prefix=True)
    this_run = A.oracle_shortfall(oracle)
    notes = [] if "dataset" in oracle.columns else [
        "oracle tables carry no 'dataset' column: this run's shortfall is pooled over all windows only"]
    df = _stack(PV.table2(), this_run, ["provenance", "Device", "dataset", "gap_pct"])
    return Result("table2", {"oracle_gap": P.side_by_side_bars(
        df, "Device", "gap_pct", "dataset", "TPS shortfall from the per-window oracle (Table 2)", "Device",
        "Shortfall vs oracle (%)", "Dataset", selection.title())},
        {"paper (phones) vs this run: shortfall (%)": _side(PV.table2(), this_run, ["device", "dataset"], "gap_pct"),
         "this run: selected vs oracle": this_run}, runs, notes, selection)


def table4_12_slowdowns(sel: Pick = None) -> Result:
    """Tables 4 / 12: windows slower than target-only, counts, median and max loss."""
    selection = _select(sel, "as2d-replay")
    per, runs = tables_by_device(selection, "per_window")
    this_run = A.slowdowns(per)
    df = _stack(PV.table12(), this_run, ["provenance", "Device", "Method", "slower_pct"])
    cols = ["device", "method", "faster", "slower", "slower_pct", "median_loss_pct", "max_loss_pct"]
    return Result("table4_12", {"slowdowns": P.slowdown_chart(df, subtitle=selection.title())},
                  {f"{PV.PAPER}: Tables 4/12 (688 windows per phone)": PV.table12().select(cols),
                   f"{PV.THIS_RUN}: slowdowns vs target-only": this_run}, runs, selection=selection)


def table5_8_full(sel: Pick = None, ablation: Pick = None) -> Result:
    """Tables 5 / 8: pooled TPS per device, method and dataset, with the ablations and Gain; the chart
    shows pooled speedup over target-only (devices differ by an order of magnitude in TPS)."""
    selection = _select(sel, "as2d-replay")
    windows, runs = tables_by_device(selection, "windows")
    notes: list[str] = []
    arms = {"as2d_wo_td", "as2d_wo_bc"} - set(windows["method"].unique().to_list())
    abl = None
    if arms:  # ablation arms the selection lacks, from the ablation job's runs of the same data kind
        extra = _select(ablation, "as2d-ablation") if ablation else _companion(selection, "as2d-ablation", notes,
                                                                                  f"arm(s) {sorted(arms)}")
        abl = optional(lambda: tables_by_device(extra, "windows"), notes) if extra is not None else None
    if abl is not None:
        more = abl[0].filter(pl.col("method").is_in(list(arms)))
        windows = pl.concat([windows, more], how="diagonal_relaxed")
        runs = [*runs, *abl[1]]
    this_run = A.pooled_by_dataset(windows)
    gains = A.gain_over_best_baseline(this_run)
    wide = this_run.pivot(on="dataset", index=["device", "method"], values="tps")
    paper_wide = PV.table8().pivot(on="dataset", index=["device", "method"], values="tps")
    alls = this_run.filter(pl.col("dataset") == "all")
    df = _stack(A.speedup_vs_target(PV.table5()), A.speedup_vs_target(alls), ["provenance", "Device", "Method",
                                                                               "speedup"])
    return Result("table5_8", {"pooled_tps": P.side_by_side_bars(
        df, "Device", "speedup", "Method", "Pooled speedup over target-only with ablations (Tables 5 / 8)", "Device",
        "Pooled TPS / target-only pooled TPS", "Method", selection.title())},
        {f"{PV.PAPER}: Table 8 (TPS)": paper_wide, f"{PV.THIS_RUN}: pooled TPS": wide,
         f"{PV.THIS_RUN}: As²d gain over best baseline (%)": gains,
         "paper (phones) vs this run: all-dataset TPS (Table 5)": _side(PV.table5(), alls, ["device", "method"],
                                                                        "tps")}, runs, notes, selection)


def table9_10_sd(sel: Pick = None) -> Result:
    """Tables 9 / 10: fixed-width SD pooled TPS per K, the K=5..8 mean and range; one panel per device."""
    selection = _select(sel, "as2d-replay")
    windows, runs = tables_by_device(selection, "windows")
    fixed = A.fixed_width_sd(windows)
    if not fixed.height:
        raise MissingTable(f"no SD configurations in {selection.what!r}: run "
                           "`python -m workbench.run experiment=replay` first")
    cols = ["provenance", "Device", "setting", "tps"]
    df = _stack(PV.table9().filter(pl.col("dataset") == "all").with_columns(pl.format("K={}", "K").alias("setting")),
                fixed.filter(pl.col("dataset") == "all"), cols)
    order = [f"K={k}" for k in sorted(set(df["setting"].str.slice(2).cast(int).to_list()))]
    return Result("table9_10", {"fixed_width_sd": P.device_panels(
        df, "setting", "tps", "provenance", "Fixed-width SD throughput, all datasets (Tables 9 / 10)",
        "Physical verification width (root + drafts)", "Pooled throughput (tokens/s)", "Numbers from",
        selection.title(), x_sort=order)},
        {f"{PV.PAPER}: Table 9/10": PV.table9().pivot(on="dataset", index=["device", "K"], values="tps"),
         f"{PV.THIS_RUN}: fixed-width SD": fixed.pivot(on="dataset", index=["device", "K"], values="tps"),
         f"{PV.THIS_RUN}: K=5..8 mean and range": A.sd_mean_range(fixed)}, runs, selection=selection)


def honest_sources(df: pl.DataFrame, runs: list) -> pl.DataFrame:
    """Name each source by what produced it (``whisper-tiny.en``), never by the profile costs that priced it."""
    from workbench.tracking.run_records import source_names

    names: dict[str, str] = {}
    for r in runs:
        names.update(source_names(r.data.params))
    if "source" not in df.columns or not names:
        return df
    return df.with_columns(pl.col("source").replace(names))


def table13_14_tradeoff(sel: Pick = None) -> Result:
    """Tables 13 / 14: source and budget trade-off -- this run's dev-split sweep beside the paper's native cases."""
    selection = _select(sel, "as2d-oracle")
    budgets, runs = tables_by_device(selection, "dev_budgets", prefix=True)
    # One line per drafter (the citation lives in `source` of every paper frame; the drafter in `drafter`).
    t14 = PV.table14().filter(pl.col("drafter") != "target_only")
    paper_chart = P.budget_tradeoff(t14.select(pl.col("drafter").alias("source"), "budget", "tps"),
                                    title="Paper (phones): native drafters on one AMI window, Redmi K70 Pro (Table 14)",
                                    subtitle=f"{PV.PAPER}; budget = max K - 1; target-only 14.58 tokens/s")
    budgets = honest_sources(budgets, runs)
    best = budgets.sort("tps", descending=True).group_by("device", maintain_order=True).first()
    return Result("table13_14", {
        "budget_tradeoff": P.budget_tradeoff(budgets, title="This run: pooled dev-split TPS per source and budget",
                                             subtitle=selection.title()),
        "paper_table14": paper_chart},
        {f"{PV.PAPER}: Table 14": PV.table14().drop("provenance", "source"),
         f"{PV.PAPER}: Table 13 (native cases, not pooled)": PV.table13().drop("provenance", "source"),
         f"{PV.THIS_RUN}: best (source, budget) on the dev split": best}, runs, selection=selection)


def d27_decomposition(sel: Pick = None, ablation: Pick = None) -> Result:
    """D.2.7: D, V, O, H per method and the speedup condition O_a > ΔD + ΔV + ΔH (eq. 7)."""
    selection = _select(sel, "as2d-replay")
    stages, runs = tables_by_device(selection, "stages")
    notes: list[str] = []
    if not (stages["method"] == "as2d_wo_td").any():
        extra = _select(ablation, "as2d-ablation") if ablation else _companion(selection, "as2d-ablation", notes,
                                                                                  "arm as2d_wo_td")
        abl = optional(lambda: tables_by_device(extra, "stages"), notes) if extra is not None else None
        if abl is not None:
            stages = pl.concat([stages, abl[0].filter(pl.col("method") == "as2d_wo_td")], how="diagonal_relaxed")
            runs = [*runs, *abl[1]]
    dec = A.decomposition(stages)
    long = dec.unpivot(index=["device", "method"], on=["D", "V", "O", "H"], variable_name="term",
                       value_name="seconds").with_columns(
        pl.format("{} / {}", "device", pl.col("method").replace(P.METHOD_LABEL)).alias("method"))
    notes.append("the paper reports no D/V/O/H totals for the corpus; this family has no paper column")
    return Result("d27", {"decomposition": P.decomposition(long, subtitle=selection.title())},
                  {f"{PV.THIS_RUN}: D, V, O, H, T (s; T = D + V - O + H)": dec,
                   f"{PV.THIS_RUN}: speedup condition (eq. 7)": A.speedup_condition(dec)}, runs, notes, selection)


def fig1_timeline(sel: Pick = None, method: str = "as2d") -> Result:
    """Fig. 1 / Fig. 6: producer vs verifier timeline, ready candidates, K widths and rejections."""
    selection = _select(sel, "as2d-replay")
    notes: list[str] = []
    native = optional(lambda: (latest_table(selection, NATIVE_STAGES), latest_table(selection, NATIVE_ROUNDS)),
                      notes)
    if native is not None:
        (stages, run), (rounds, _) = native
        runs, clock = [run], "native host clock"
    else:
        notes.clear()  # the line below says what is shown instead
        stages, run = latest_table(selection, "stages")
        rounds, _ = latest_table(selection, "rounds")
        runs, clock = [run], "replay clock (device profile), not a native trace"
        device = stages["device"][0]
        stages, rounds = stages.filter(pl.col("device") == device), rounds.filter(pl.col("device") == device)
        notes.append(f"no native host trace in the selection; showing a {device} replay trace instead")
    charts = {}
    for i, (label, st, rr) in enumerate(A.timeline_excerpts(stages, rounds, method)):
        charts[f"excerpt{i + 1}"] = P.timeline(st, rr, title=f"Producer vs verifier, {label} (Fig. 1 / 6)",
                                               subtitle=f"{selection.title()}\n{clock}",
                                               time_title="Time within excerpt (ms)")
    return Result("fig1_6", charts, {f"{PV.PAPER}: Fig. 1 / 6 facts": PV.timeline_facts().drop("provenance")},
                  runs, notes, selection)


def d3_agreement(sel: Pick = None) -> Result:
    """D.3 / Table 7: replay vs native TPS agreement on the host (paper: K70 native checks)."""
    notes: list[str] = []
    selection = optional(lambda: _select(sel, NATIVE_EXPERIMENT), notes)
    got = optional(lambda: latest_table(selection, AGREEMENT), notes) if selection is not None else None
    paper = PV.table7().unpivot(index=["check", "provenance"], on=["mean_abs_error_pct", "pooled_error_pct"],
                                variable_name="metric", value_name="pct")
    charts = {"paper_table7": P.side_by_side_bars(paper, "check", "pct", "metric", "Replay vs native TPS error (D.3)",
                                                  "Check", "Error (%)", "Metric", f"{PV.PAPER}: Redmi K70 Pro")}
    tables = {f"{PV.PAPER}: Table 7": PV.table7().drop("provenance", "source")}
    runs = []
    if got is not None:
        err, run = got
        runs = [run]
        charts["replay_error"] = P.replay_error(err, subtitle=selection.title())
        if D3.has_terms(err):  # the D.3 decomposition (native.decomposition): which term carries the error
            charts["terms"] = D3.terms_chart(err, subtitle=selection.title())
        tables[f"{PV.THIS_RUN}: host agreement summary"] = A.agreement_summary(err)
        tables[f"{PV.THIS_RUN}: per-window errors"] = err
    return Result("d3", charts, tables, runs, notes, selection)

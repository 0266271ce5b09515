"""Pure Polars computations behind the paper's tables, applied to a run's logged frames.

Each function follows the paper's stated rule (cited per function) so notebooks only call them.
Inputs are the job tables described in ``workbench/jobs`` (``windows``, ``per_window``,
``rounds``, ``stages``, ``oracle_<device>``); nothing here reads MLflow.
"""

from __future__ import annotations

import math

import polars as pl

from workbench import metrics as M

BASELINES = ("target_only", "sd", "asp")  # Table 8 "best baseline" excludes the ablations
TIE = 1e-9  # D.4.5: a TPS ratio within 1e-9 of one is a numerical tie


def _k_of(config: pl.Expr) -> pl.Expr:
    return config.str.extract(r"K(\d+)$").cast(pl.Int64)


def pooled_by_dataset(windows: pl.DataFrame) -> pl.DataFrame:
    """Table 8 rule (D.1.3): pool tokens/time per (config, dataset), then average a method's configs.

    Returns device, method, dataset, tps with an extra ``dataset == "all"`` row per method that
    pools every dataset within each config before the same averaging.
    """
    keys = ["device", "method", "config"]
    per = windows.group_by([*keys, "dataset"]).agg((pl.col("tokens").sum() / pl.col("time").sum()).alias("tps"))
    alls = windows.group_by(keys).agg((pl.col("tokens").sum() / pl.col("time").sum()).alias("tps")).with_columns(
        pl.lit("all").alias("dataset"))
    both = pl.concat([per, alls.select(per.columns)])
    return both.group_by(["device", "method", "dataset"]).agg(pl.col("tps").mean()).sort("device", "method", "dataset")


def gain_over_best_baseline(pooled: pl.DataFrame, method: str = "as2d") -> pl.DataFrame:
    """Gain (%) of ``method`` over the fastest of target-only, SD and SpecASR (Table 8 'Gain')."""
    base = pooled.filter(pl.col("method").is_in(BASELINES)).group_by(["device", "dataset"]).agg(
        pl.col("tps").max().alias("best"), pl.col("method").sort_by("tps").last().alias("best_baseline"))
    this_run = pooled.filter(pl.col("method") == method).select("device", "dataset", pl.col("tps").alias("this_run"))
    return this_run.join(base, on=["device", "dataset"]).with_columns(
        (100 * (pl.col("this_run") / pl.col("best") - 1)).alias("gain_pct")).sort("device", "dataset")


def speedup_vs_target(pooled: pl.DataFrame) -> pl.DataFrame:
    """Pooled TPS over the same device's target-only pooled TPS (same dataset rows); devices whose TPS
    differ by an order of magnitude compare on one axis. Rows without a target-only row are dropped."""
    base = pooled.filter(pl.col("method") == "target_only").select(
        *[c for c in ("device", "dataset") if c in pooled.columns], pl.col("tps").alias("tps_target"))
    keys = [c for c in ("device", "dataset") if c in pooled.columns]
    return pooled.join(base, on=keys).with_columns((pl.col("tps") / pl.col("tps_target")).alias("speedup"))


def with_dataset(per_window: pl.DataFrame, windows: pl.DataFrame) -> pl.DataFrame:
    if "dataset" in per_window.columns:
        return per_window
    ids = windows.select("window_id", "dataset").unique("window_id")
    return per_window.join(ids, on="window_id", how="left")


def _vs_target(per_window: pl.DataFrame) -> pl.DataFrame:
    """Per-window TPS ratio to target-only on the same device and window (SD already K5..8-averaged)."""
    base = per_window.filter(pl.col("method") == "target_only").select("device", "window_id",
                                                                        pl.col("tps").alias("tps_target"))
    return per_window.filter(pl.col("method") != "target_only").join(base, on=["device", "window_id"]).with_columns(
        (pl.col("tps") / pl.col("tps_target")).alias("ratio"))


def slowdowns(per_window: pl.DataFrame) -> pl.DataFrame:
    """Table 4 / Table 12 (D.4.5): faster/slower counts, slower %, median and max loss among slower windows."""
    r = _vs_target(per_window)
    loss = 100 * (1 - pl.col("ratio"))
    slower = pl.col("ratio") < 1 - TIE
    return r.group_by(["device", "method"]).agg(
        (pl.col("ratio") > 1 + TIE).sum().alias("faster"),
        slower.sum().alias("slower"),
        (100 * slower.mean()).alias("slower_pct"),
        loss.filter(slower).median().alias("median_loss_pct"),
        loss.filter(slower).max().alias("max_loss_pct"),
        pl.len().alias("windows"),
    ).sort("device", "method")


def representative_windows(per_window: pl.DataFrame, min_tokens: int = 64) -> pl.DataFrame:
    """Table 1 selection rule (D.4.5), per device and dataset.

    ratio = TPS_As²d / max(TPS_SD, TPS_SpecASR) per window; the displayed window minimizes
    |log ratio - log median ratio| (median over ALL windows of the dataset), ties by window id;
    only displayed windows need >= ``min_tokens`` target tokens.
    """
    wide = per_window.pivot(on="method", index=["device", "window_id", "dataset"], values="tps")
    need = {"target_only", "sd", "asp", "as2d"}
    if not need <= set(wide.columns):
        raise ValueError(f"Table 1 needs methods {sorted(need)}; the run has {sorted(set(wide.columns) & need)}")
    tokens = per_window.filter(pl.col("method") == "target_only").select("device", "window_id", "tokens")
    wide = wide.join(tokens, on=["device", "window_id"]).with_columns(
        (pl.col("as2d") / pl.max_horizontal("sd", "asp")).alias("ratio"))
    wide = wide.with_columns(pl.col("ratio").median().over(["device", "dataset"]).alias("median_ratio"))
    wide = wide.with_columns((pl.col("ratio").log() - pl.col("median_ratio").log()).abs().alias("dev"))
    picked = (wide.filter(pl.col("tokens") >= min_tokens).sort("dev", "window_id")
              .group_by(["device", "dataset"], maintain_order=True).first())
    return picked.select("device", "dataset", "window_id", "tokens", "target_only", "sd", "asp", "as2d",
                         (100 * (pl.col("ratio") - 1)).alias("gain_pct"),
                         (100 * (pl.col("median_ratio") - 1)).alias("median_gain_pct")).sort("device", "dataset")


def fixed_width_sd(windows: pl.DataFrame) -> pl.DataFrame:
    """Table 9 / 10 (D.4.2): pooled TPS per fixed K and dataset, plus the K5..8 mean and range."""
    sd = windows.filter(pl.col("method") == "sd").with_columns(_k_of(pl.col("config")).alias("K"))
    per = pl.concat([
        sd.group_by(["device", "K", "dataset"]).agg((pl.col("tokens").sum() / pl.col("time").sum()).alias("tps")),
        sd.group_by(["device", "K"]).agg((pl.col("tokens").sum() / pl.col("time").sum()).alias("tps"))
        .with_columns(pl.lit("all").alias("dataset")).select("device", "K", "dataset", "tps"),
    ])
    return per.with_columns(pl.format("K={}", "K").alias("setting")).sort("device", "K", "dataset")


def sd_mean_range(fixed: pl.DataFrame) -> pl.DataFrame:
    """Mean and range over K = 5..8 (the main table's SD row), per device and dataset."""
    main = fixed.filter(pl.col("K").is_between(5, 8))
    return main.group_by(["device", "dataset"]).agg(
        pl.col("tps").mean().alias("mean"), pl.col("tps").min().alias("min"), pl.col("tps").max().alias("max"),
        pl.col("K").n_unique().alias("widths")).sort("device", "dataset")


def oracle_shortfall(oracle: pl.DataFrame) -> pl.DataFrame:
    """Table 2 / D.4.3: Gap = 100 (1 - TPS_selected / TPS_oracle), pooled per device (and dataset)."""
    def agg(by: list[str]) -> pl.DataFrame:
        return oracle.group_by(by).agg(
            (pl.col("tokens").sum() / pl.col("selected_time").sum()).alias("tps_selected"),
            (pl.col("tokens").sum() / pl.col("oracle_time").sum()).alias("tps_oracle"),
            pl.len().alias("windows"),
        ).with_columns((100 * (1 - pl.col("tps_selected") / pl.col("tps_oracle"))).alias("gap_pct"))

    out = agg(["device"]).with_columns(pl.lit("all").alias("dataset"))
    if "dataset" in oracle.columns:
        out = pl.concat([agg(["device", "dataset"]), out.select(agg(["device", "dataset"]).columns)])
    return out.sort("device", "dataset")


def drafting_share(stages: pl.DataFrame, method: str = "sd", config: str | None = "sd/K8") -> pl.DataFrame:
    """Fig. 3(a) / B.3.1: producer (drafting) time / decode time of serial SD, pooled over windows."""
    s = stages.filter(pl.col("method") == method)
    if config and "config" in s.columns and s.filter(pl.col("config") == config).height:
        s = s.filter(pl.col("config") == config)
    keys = [k for k in ("window_id", "config") if k in s.columns]
    per_run = s.group_by(["device", *keys]).agg(
        (pl.col("end") - pl.col("start")).filter(pl.col("resource") == "producer").sum().alias("draft"),
        pl.col("T").first().alias("T"))
    return per_run.group_by("device").agg((100 * pl.col("draft").sum() / pl.col("T").sum()).alias("share_pct"),
                                          pl.len().alias("runs")).sort("device")


def batching_saving(verify_ms: dict[int, float]) -> pl.DataFrame:
    """Eq. 2: R(K) = 100 (1 - V(K) / (K V(1))) from verifier call times by width K."""
    v1 = verify_ms[1]
    return pl.DataFrame([{"K": k, "saving_pct": 100 * (1 - v / (k * v1))} for k, v in sorted(verify_ms.items())])


def decomposition(stages: pl.DataFrame) -> pl.DataFrame:
    """D.2.7: D, V, O, H, T per device and method (seconds summed over windows, averaged over configs)."""
    rows = []
    for (device, method), part in stages.group_by(["device", "method"], maintain_order=True):
        ov = M.overlap_table(part, keys=[k for k in ("window_id", "config") if k in part.columns])
        cfgs = ov["config"].n_unique() if "config" in ov.columns else 1
        sums = {t: float(ov[t].sum()) / cfgs for t in ("D", "V", "O", "H", "T")}
        rows.append({"device": device, "method": method, **sums,
                     "identity_residual": sums["T"] - (sums["D"] + sums["V"] - sums["O"] + sums["H"])})
    return pl.DataFrame(rows).sort("device", "method")


def speedup_condition(dec: pl.DataFrame, asynchronous: str = "as2d",
                      serial: tuple[str, ...] = ("as2d_wo_td", "asp", "sd")) -> pl.DataFrame:
    """Eq. 7: T_a < T_s  <=>  O_a > ΔD + ΔV + ΔH, against each serial comparator present."""
    a = dec.filter(pl.col("method") == asynchronous)
    rows = []
    for ra in a.iter_rows(named=True):
        for rs in dec.filter((pl.col("device") == ra["device"]) & pl.col("method").is_in(serial)).iter_rows(named=True):
            added = (ra["D"] - rs["D"]) + (ra["V"] - rs["V"]) + (ra["H"] - rs["H"])
            rows.append({"device": ra["device"], "serial": rs["method"], "O_a": ra["O"], "added_work": added,
                         "T_s": rs["T"], "T_a": ra["T"], "predicts_gain": ra["O"] > added,
                         "observed_gain": ra["T"] < rs["T"]})
    return pl.DataFrame(rows)


def timeline_excerpts(stages: pl.DataFrame, rounds: pl.DataFrame, method: str = "as2d",
                      pad: float = 0.25) -> list[tuple[str, pl.DataFrame, pl.DataFrame]]:
    """Fig. 1 rule (D.4.5): excerpts around the first multi-candidate rejection and the first fully
    accepted widest call, in the first window that has both (else whichever exists).

    Returns ``(label, stages, rounds)`` per excerpt, times shifted so each starts near zero.
    """
    r = rounds.filter(pl.col("method") == method)
    s = stages.filter(pl.col("method") == method)
    if not r.height:
        raise ValueError(f"no {method} rounds in this run")
    widest = int(r["width"].max())
    reject = (pl.col("outcome") == "correction") & (pl.col("width") > 2)
    full = (pl.col("width") == widest) & (pl.col("accepted") == pl.col("width") - 1) & (pl.col("width") > 1)
    scored = r.group_by("window_id", maintain_order=True).agg(reject.any().alias("rej"), full.any().alias("full"))
    scored = scored.sort(pl.col("rej").cast(pl.Int8) + pl.col("full").cast(pl.Int8), "window_id",
                         descending=[True, False])
    wid = scored["window_id"][0]
    r, s = r.filter(pl.col("window_id") == wid), s.filter(pl.col("window_id") == wid)
    out = []
    for label, cond in ((f"first multi-candidate rejection ({wid})", reject),
                        (f"first fully accepted K{widest} call ({wid})", full)):
        hit = r.filter(cond)
        if not hit.height:
            continue
        t0, t1 = float(hit["t_start"][0]) - pad, float(hit["t_end"][0]) + pad
        ss = s.filter((pl.col("end") > t0) & (pl.col("start") < t1)).with_columns(
            pl.col("start").clip(t0, t1) - t0, pl.col("end").clip(t0, t1) - t0)
        rr = r.filter((pl.col("t_start") >= t0) & (pl.col("t_end") <= t1)).with_columns(
            pl.col("t_start") - t0, pl.col("t_end") - t0)
        out.append((label, ss, rr))
    return out


def agreement_summary(err: pl.DataFrame) -> pl.DataFrame:
    """D.3 / Table 7: windows, mean |signed error| and (with tokens) pooled error, in %."""
    row = {"windows": err.height, "mean_abs_error_pct": float(err["signed_error_pct"].abs().mean())}
    if "tokens" in err.columns:
        t_native = (err["tokens"] / err["tps_native"]).sum()
        t_replay = (err["tokens"] / err["tps_replay"]).sum()
        row["pooled_error_pct"] = 100 * (t_native / t_replay - 1)  # TPS ratio = inverse time ratio
    else:
        row["pooled_error_pct"] = math.nan
    return pl.DataFrame([row])

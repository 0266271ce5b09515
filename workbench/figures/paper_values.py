"""Numbers published in the As²d paper, copied here so notebooks never read the paper at run time.

Every frame carries ``provenance = "paper (phones)"`` and a ``source`` column naming the table,
figure or section the number comes from. These are the authors' phone measurements or
phone-profile replays on 688 real windows -- a reference to set beside "this run", never a value
to mix into it.
"""

from __future__ import annotations

import polars as pl

PAPER = "paper (phones)"
THIS_RUN = "this run"

# conf/device profile name -> phone as the paper names it (Table 6).
PHONES = {
    "k70_pro": "Redmi K70 Pro",
    "xiaomi_11_pro": "Xiaomi 11 Pro",
    "xiaomi_14": "Xiaomi 14",
    "redmi_note_9_pro": "Redmi Note 9 Pro",
}
DATASETS = ["libri", "ami", "fleurs", "kespeech", "m4singer"]
DATASET_LABEL = {"libri": "LibriSpeech", "ami": "AMI", "fleurs": "FLEURS", "kespeech": "KeSpeech",
                 "m4singer": "M4Singer", "all": "All"}


def _frame(rows: list[dict], source: str) -> pl.DataFrame:
    return pl.DataFrame(rows).with_columns(pl.lit(PAPER).alias("provenance"), pl.lit(source).alias("source"))


def _grid(values: dict[str, dict[str, list[float]]], cols: list[str], value: str, source: str) -> pl.DataFrame:
    rows = [{"device": d, "method": m, "dataset": c, value: v}
            for d, by_m in values.items() for m, vs in by_m.items() for c, v in zip(cols, vs, strict=True)]
    return _frame(rows, source)


# Table 8 (D.4.1): pooled replay TPS per phone, method and dataset; last column "all".
_T8 = {
    "k70_pro": {"target_only": [16.92, 16.92, 16.94, 17.00, 17.04, 16.96],
                "sd": [21.52, 15.46, 19.91, 17.63, 18.26, 18.97],
                "asp": [21.44, 11.19, 18.35, 15.44, 15.61, 16.81],
                "as2d": [35.37, 18.60, 28.22, 27.57, 25.59, 27.92],
                "as2d_wo_bc": [33.60, 15.86, 26.84, 25.53, 22.91, 25.60],
                "as2d_wo_td": [22.68, 15.61, 20.88, 18.42, 18.93, 19.77]},
    "xiaomi_11_pro": {"target_only": [8.33, 8.33, 8.34, 8.37, 8.39, 8.35],
                      "sd": [11.77, 8.39, 10.87, 9.59, 9.94, 10.34],
                      "asp": [12.46, 7.32, 10.97, 9.37, 9.64, 10.21],
                      "as2d": [18.94, 9.82, 14.98, 14.24, 13.22, 14.68],
                      "as2d_wo_bc": [18.21, 8.89, 14.42, 13.37, 12.22, 13.79],
                      "as2d_wo_td": [12.59, 8.74, 11.62, 10.25, 10.52, 11.00]},
    "xiaomi_14": {"target_only": [19.26, 19.26, 19.28, 19.35, 19.39, 19.30],
                  "sd": [15.86, 11.56, 14.73, 13.11, 13.57, 14.06],
                  "asp": [16.08, 9.91, 14.38, 12.64, 12.97, 13.55],
                  "as2d": [30.99, 22.77, 28.79, 28.63, 27.54, 28.40],
                  "as2d_wo_bc": [30.84, 21.25, 28.55, 28.23, 26.91, 27.84],
                  "as2d_wo_td": [16.35, 11.77, 15.24, 13.72, 14.06, 14.55]},
    "redmi_note_9_pro": {"target_only": [4.11, 4.11, 4.12, 4.13, 4.14, 4.12],
                         "sd": [3.78, 2.70, 3.49, 3.08, 3.19, 3.32],
                         "asp": [3.92, 2.39, 3.49, 3.01, 3.09, 3.26],
                         "as2d": [6.72, 4.57, 5.94, 5.74, 5.49, 5.85],
                         "as2d_wo_bc": [6.21, 3.54, 5.42, 4.94, 4.55, 5.07],
                         "as2d_wo_td": [4.10, 3.42, 3.94, 3.69, 3.76, 3.84]},
}


def table8() -> pl.DataFrame:
    """Table 8 / Table 5 / Fig. 5 pooled TPS: device, method, dataset, tps (Table 5 = the 'all' column)."""
    return _grid(_T8, [*DATASETS, "all"], "tps", "Table 8 (D.4.1); 'all' column = Table 5")


# Table 1 (Section 5.2, D.4.5): Xiaomi 14 representative windows.
def table1() -> pl.DataFrame:
    rows = [("libri", 19.26, 16.65, 16.88, 32.24, 91.0), ("fleurs", 19.24, 15.58, 16.02, 32.48, 102.7),
            ("kespeech", 19.37, 14.19, 14.61, 31.34, 114.6), ("m4singer", 19.31, 13.13, 14.44, 28.94, 100.4),
            ("ami", 19.25, 11.36, 8.93, 22.86, 101.3)]
    return _frame([{"device": "xiaomi_14", "dataset": d, "target_only": t, "sd": s, "asp": a, "as2d": x, "gain_pct": g}
                   for d, t, s, a, x, g in rows], "Table 1 (Sec. 5.2; selection rule D.4.5)")


# Table 2 (Sec. 5.2): TPS shortfall (%) from the hindsight oracle; "all" from D.4.3 selected/oracle TPS.
_T2 = {"libri": [2.48, 2.09, 2.46, 2.67], "ami": [3.56, 5.83, 5.93, 2.94], "fleurs": [1.33, 1.46, 0.65, 1.31],
       "kespeech": [1.56, 1.81, 0.93, 0.71], "m4singer": [2.03, 2.76, 1.76, 1.25]}
_T2_DEVICES = ["k70_pro", "xiaomi_11_pro", "xiaomi_14", "redmi_note_9_pro"]
_SEL_ORACLE = {"k70_pro": (27.92, 28.54), "xiaomi_11_pro": (14.68, 15.08), "xiaomi_14": (28.40, 29.03),
               "redmi_note_9_pro": (5.85, 5.96)}


def table2() -> pl.DataFrame:
    """device, dataset, gap_pct (+ tps_selected / tps_oracle on the 'all' rows, D.4.3)."""
    rows = [{"device": d, "dataset": ds, "gap_pct": v[i], "tps_selected": None, "tps_oracle": None}
            for ds, v in _T2.items() for i, d in enumerate(_T2_DEVICES)]
    rows += [{"device": d, "dataset": "all", "gap_pct": round(100 * (1 - s / o), 2), "tps_selected": s,
              "tps_oracle": o} for d, (s, o) in _SEL_ORACLE.items()]
    return _frame(rows, "Table 2 (Sec. 5.2); 'all' = 100(1 - selected/oracle) from D.4.3")


# Table 4 (share %) and Table 12 (counts, losses), D.4.5; 688 windows per phone.
_T12 = {
    "k70_pro": {"sd": (541, 147, 9.8, 62.1), "asp": (375, 313, 19.2, 74.3), "as2d": (641, 47, 14.2, 21.9)},
    "xiaomi_11_pro": {"sd": (611, 77, 8.3, 58.5), "asp": (553, 135, 10.7, 67.8), "as2d": (657, 31, 7.4, 20.3)},
    "xiaomi_14": {"sd": (0, 688, 24.6, 74.7), "asp": (0, 688, 26.4, 79.6), "as2d": (647, 41, 6.3, 10.1)},
    "redmi_note_9_pro": {"sd": (2, 686, 16.6, 73.0), "asp": (90, 598, 20.7, 79.3), "as2d": (651, 37, 7.2, 11.3)},
}
_T4 = {"k70_pro": (21.4, 45.5, 6.8), "xiaomi_11_pro": (11.2, 19.6, 4.5), "xiaomi_14": (100.0, 100.0, 6.0),
       "redmi_note_9_pro": (99.7, 86.9, 5.4)}


def table12() -> pl.DataFrame:
    """device, method, faster, slower, slower_pct (Table 4), median_loss_pct, max_loss_pct (Table 12)."""
    rows = []
    for d, by_m in _T12.items():
        for i, (m, (fast, slow, med, mx)) in enumerate(by_m.items()):
            rows.append({"device": d, "method": m, "faster": fast, "slower": slow, "slower_pct": _T4[d][i],
                         "median_loss_pct": med, "max_loss_pct": mx})
    return _frame(rows, "Table 4 (slower %) and Table 12 (counts, losses), D.4.5")


# Table 9 (D.4.2) fixed-width SD and Table 10 (K8 vs K12, K70).
_T9 = {"k70_pro": {5: [19.77, 15.56, 18.67, 17.15, 17.62, 18.09], 6: [21.41, 15.82, 19.87, 17.90, 18.43, 19.10],
                   7: [21.97, 15.28, 20.19, 17.65, 18.35, 19.13], 8: [22.93, 15.19, 20.90, 17.81, 18.62, 19.55],
                   12: [22.79, 12.45, 19.53, 15.55, 16.52, 17.76]},
       "xiaomi_11_pro": {5: [10.64, 8.31, 10.03, 9.19, 9.45, 9.71], 6: [11.56, 8.48, 10.71, 9.62, 9.91, 10.28],
                         7: [12.29, 8.50, 11.27, 9.83, 10.23, 10.67], 8: [12.59, 8.28, 11.45, 9.73, 10.18, 10.70]}}


def table9() -> pl.DataFrame:
    """device, K, dataset, tps for fixed-width SD (K12 row is Table 10)."""
    rows = [{"device": d, "K": k, "dataset": c, "tps": v}
            for d, by_k in _T9.items() for k, vs in by_k.items() for c, v in zip([*DATASETS, "all"], vs, strict=True)]
    return _frame(rows, "Table 9 (D.4.2); K=12 from Table 10")


# Table 5 is the 'all' column of Table 8; kept as its own accessor for the notebook's label.
def table5() -> pl.DataFrame:
    return table8().filter(pl.col("dataset") == "all").drop("dataset").with_columns(
        pl.lit("Table 5 (Sec. 5.3) = Table 8 'all'").alias("source"))


# Table 14 (D.4.5): native drafters on one 60 s AMI window, Redmi K70 Pro. Max K includes the root.
def table14() -> pl.DataFrame:
    rows = [("target_only", 1, 14.58, 0.0, 0, 211), ("parakeet", 3, 15.44, 5.9, 33, 178),
            ("parakeet", 4, 16.25, 11.5, 39, 172), ("parakeet", 8, 15.66, 7.4, 43, 168),
            ("sensevoice", 3, 16.03, 10.0, 24, 187), ("sensevoice", 4, 16.03, 9.9, 26, 185),
            ("sensevoice", 8, 15.94, 9.3, 30, 181)]
    return _frame([{"device": "k70_pro", "drafter": s, "max_K": k, "budget": k - 1, "tps": t, "gain_pct": g,
                    "extra_tokens": e, "target_calls": c} for s, k, t, g, e, c in rows],
                  "Table 14 (D.4.5), native, one AMI window")


# Table 13 (D.4.5): native source/scheduling cases.
def table13() -> pl.DataFrame:
    rows = [("Supply", "Mi 14/Libri", "Qwen -> Parakeet", 28.36, 46.33, 74.0, 69.1, 5),
            ("Verification", "Mi 14/AMI", "Qwen -> Parakeet", 22.11, 22.74, 41.1, 23.9, 5),
            ("TD, high acc.", "K70/Libri", "Serial -> TD", 15.41, 29.81, 77.4, 81.7, 5),
            ("TD, low acc.", "K70/KeSpeech", "Serial -> TD", 9.62, 15.80, 44.9, 24.3, 1),
            ("TD, zero acc.", "K70/M4Singer", "Serial -> TD", 11.85, 12.52, 80.4, 0.0, 1),
            ("Prefix lookahead", "K70/AMI", "Serial -> lookahead", 9.25, 9.41, 37.0, 37.0, 2)]
    return _frame([{"case": a, "device_data": b, "comparison": c, "tps_from": d, "tps_to": e, "acc_from_pct": f,
                    "acc_to_pct": g, "n": n} for a, b, c, d, e, f, g, n in rows], "Table 13 (D.4.5), native")


# Fig. 3(a) / B.3.1: drafting share of native serial SD (K8) decode time, one 59.5 s window.
def drafting_share() -> pl.DataFrame:
    vals = {"xiaomi_11_pro": 49.4, "k70_pro": 59.1, "xiaomi_14": 75.1, "redmi_note_9_pro": 51.2}
    return _frame([{"device": d, "share_pct": v} for d, v in vals.items()], "Fig. 3(a) / B.3.1, native serial SD K8")


# Fig. 8 / B.2: the only R(K) values the text states (the plotted bars are not tabulated).
def batching_saving() -> pl.DataFrame:
    rows = [("xiaomi_11_pro", 4, 60.1), ("xiaomi_11_pro", 5, 50.0), ("k70_pro", 4, 64.5), ("k70_pro", 5, 64.5)]
    return _frame([{"device": d, "K": k, "saving_pct": v} for d, k, v in rows],
                  "B.2 text: 60.1%->50.0% (11 Pro), ~64.5% (K70) at K4->K5")


# Fig. 1 / Fig. 6 (D.4.5): Xiaomi 14 native Qwen repeats, budget 7.
def timeline_facts() -> pl.DataFrame:
    rows = [("median native K6 call (ms)", 97.4), ("median native K8 call (ms)", 103.9),
            ("Qwen drafting physically overlapped (%)", 97.4), ("verifier rounds with K1, nothing ready (%)", 78.7)]
    return _frame([{"quantity": q, "value": v} for q, v in rows], "Fig. 1 / Fig. 6 and D.4.5 (Xiaomi 14, b=7)")


# Table 7 (D.3): replay vs native TPS errors on Redmi K70 Pro.
def table7() -> pl.DataFrame:
    rows = [("Initial validation", 9, 5.81, -4.58), ("Fresh repeat", 5, 6.54, -4.95),
            ("Earlier block calibration", 12, 8.43, -9.39)]
    return _frame([{"check": c, "windows": n, "mean_abs_error_pct": a, "pooled_error_pct": p} for c, n, a, p in rows],
                  "Table 7 (D.3); block-calibration row from D.3 text")


def summary_columns() -> pl.DataFrame:
    """What a job summary shows beside this run's numbers, per (device, method): Table 8's 'all' pooled TPS
    and its ratio to target-only (``paper_speedup``), and Table 2's 'all' oracle gap for As²d."""
    t8 = table8().filter(pl.col("dataset") == "all")
    base = t8.filter(pl.col("method") == "target_only").select("device", pl.col("tps").alias("t"))
    out = t8.join(base, on="device").select("device", "method", pl.col("tps").alias("paper_tps"),
                                            (pl.col("tps") / pl.col("t")).alias("paper_speedup"))
    gap = table2().filter(pl.col("dataset") == "all").select("device", pl.lit("as2d").alias("method"),
                                                             pl.col("gap_pct").alias("paper_oracle_gap"))
    return out.join(gap, on=["device", "method"], how="left")

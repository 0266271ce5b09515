"""What one job writes into MLflow so runs can be compared: the job run, one child run per configuration.

* The job run (or the sweep's parent) holds the summary: the job's flat metrics, ``summary.md``,
  ``summary.html`` and ``summary.parquet``, and only the settings the job used as params (a
  multi-method job logs ``methods``, not the composed ``method`` group's settings; device profiles go in
  as ``profiles/<name>.yaml`` artifacts, never as 150 params).
* One child run per evaluated configuration (device x method x source x budget x clock), named from
  what it is (``as2d-b3-k70_pro-replay``), with plain metric names (``tps``, ``speedup``, ...), so
  MLflow's Compare view has one ``tps`` column across devices, methods and sweeps.
"""

from __future__ import annotations

import html
import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import polars as pl
from omegaconf import DictConfig

from workbench.tracking.store import flatten

BUDGETS_TAG = "as2d.budgets"  # a job run's As²d budgets as its devices replayed them ("3,7"), from device_budgets
ROLE_TAG = "as2d.role"  # "job" on a job run, "config" on a configuration's child run, "selection", "sweep"
CHILD_METRICS = ("tps", "speedup", "acceptance", "coverage", "readiness", "k_gt1_share", "slowdown_share",
                 "mean_accepted_length", "D", "V", "O", "H", "T", "bound", "matched")
# per device, from the selection/oracle step
DEVICE_METRICS = ("oracle_gap", "tps_oracle", "tps_selected", "tps_deployed", "oracle_gap_deployed")
ROW_PARAMS = ("source", "budget", "selected", "deployed", "deployed_budget", "budget_origin")
CONF = Path(__file__).resolve().parents[2] / "conf"


def used_params(cfg: DictConfig) -> dict[str, str]:
    """The flattened config minus what this job did not use as a single value.

    A job over ``methods: [...]`` did not run the composed ``method`` group alone, and a job over
    ``devices: [...]`` did not run the composed ``device``; device profiles are logged as files.
    """
    flat = flatten(cfg)
    drop = ["device."]
    if cfg.get("methods"):
        drop.append("method.")
    out = {k: v for k, v in flat.items() if not any(k.startswith(p) for p in drop) and not k.startswith("hydra.")}
    if not cfg.get("devices") and cfg.get("device") is not None:
        out["device"] = str(cfg.device.get("name", ""))
    return out


def device_names(cfg: DictConfig) -> list[str]:
    if cfg.get("devices"):
        return [str(d) for d in cfg.devices]
    return [str(cfg.device.name)] if cfg.get("device") is not None else []


def profile_files(cfg: DictConfig) -> list[Path]:
    """The ``conf/device/<name>.yaml`` files of the devices this job priced (existing ones only)."""
    return [p for p in (CONF / "device" / f"{n}.yaml" for n in device_names(cfg)) if p.is_file()]


def _cell(v: Any) -> str:
    if isinstance(v, float):
        return "" if math.isnan(v) else f"{v:.4g}"
    return "" if v is None else str(v)


LEAD = ("run", "device", "method", "config", "speedup", "paper_speedup", "oracle_gap", "paper_oracle_gap", "tps",
        "paper_tps")


def lead_columns(summary: pl.DataFrame, paper: pl.DataFrame | None = None) -> pl.DataFrame:
    """The summary with speedup and oracle gap first, each beside the paper's value (``paper``: device, method,
    ``paper_*`` columns) where the paper reports one; every other column after them, in its order."""
    if paper is not None and {"device", "method"} <= set(summary.columns):
        summary = summary.join(paper, on=["device", "method"], how="left")
    first = [c for c in LEAD if c in summary.columns]
    return summary.select(first + [c for c in summary.columns if c not in first])


def summary_markdown(summary: pl.DataFrame, title: str) -> str:
    """The summary as a GitHub markdown table (MLflow previews ``.md`` artifacts as text)."""
    cols = summary.columns
    lines = [f"# {title}", "", "| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    lines += ["| " + " | ".join(_cell(r[c]) for c in cols) + " |" for r in summary.iter_rows(named=True)]
    return "\n".join(lines) + "\n"


def summary_html(summary: pl.DataFrame, title: str) -> str:
    """The summary as a standalone HTML table (MLflow renders ``.html`` artifacts)."""
    head = "".join(f"<th>{html.escape(c)}</th>" for c in summary.columns)
    body = "".join("<tr>" + "".join(f"<td>{html.escape(_cell(r[c]))}</td>" for c in summary.columns) + "</tr>"
                   for r in summary.iter_rows(named=True))
    return (f"<!doctype html><html><head><meta charset='utf-8'><title>{html.escape(title)}</title><style>"
            "body{font-family:sans-serif}table{border-collapse:collapse}td,th{border:1px solid #ccc;"
            "padding:2px 6px;text-align:right}</style></head><body>"
            f"<h3>{html.escape(title)}</h3><table><tr>{head}</tr>{body}</table></body></html>\n")


def parse_label(label: str) -> dict[str, str]:
    """``as2d/qwen/b7`` -> scheme, source, budget; ``sd/K8`` -> width; ``asp/cap24`` -> cap."""
    parts = label.split("/")
    out = {"config": label}
    if len(parts) == 3:
        out["source"] = parts[1]
    if len(parts) >= 2:
        tag = parts[-1]
        for prefix, key in (("b", "budget"), ("K", "width"), ("cap", "cap")):
            if tag.startswith(prefix) and tag[len(prefix):].isdigit():
                out[key] = tag[len(prefix):]
    return out


def _configs(tables: Mapping[str, pl.DataFrame], device: str, method: str) -> list[str]:
    w = tables.get("windows")
    if w is None or not {"device", "method", "config"} <= set(w.columns):
        return []
    return w.filter((pl.col("device") == device) & (pl.col("method") == method))["config"].unique(
        maintain_order=True).to_list()


def source_names(params: Mapping[str, str]) -> dict[str, str]:
    """Profile source name (what priced a trace) -> what produced it, from a run's flat params.

    ``{"qwen": "whisper-tiny.en", "parakeet": "pocketsphinx_en"}``: a phone profile prices this run's
    producer with the paper's model costs, but the trace is the producer's; only the ``priced_as``
    param names the costs. Synthetic windows were made by no model: ``synthetic producer`` / ``synthetic chunk``.
    """
    if params.get("dataset.synthetic") == "True":
        made = {"producer": "synthetic producer", "chunk": "synthetic chunk"}
    else:
        external = params.get("model.external_sources", "").strip("[]").replace("'", "").split(",")[0].strip()
        made = {"producer": params.get("model.drafter.name", ""), "chunk": external}
    out = {}
    for role, who in made.items():
        if not who:
            continue
        out[role] = who  # a profile that names the trace role itself (the host's)
        priced = params.get(f"source_roles.{role}")
        if priced:
            out[priced] = who
    return out


def source_label(source: str, names: Mapping[str, str]) -> str:
    """A candidate source named by what produced it: ``whisper-tiny.en``, never the profile's ``qwen``."""
    return names.get(source, source)


def honest_label(label: str, names: Mapping[str, str]) -> str:
    """A label with its source named by the producer: ``as2d/qwen/b7`` -> ``as2d/whisper-tiny.en/b7``."""
    return "/".join(names.get(part, part) if i < 2 else part for i, part in enumerate(label.split("/")))


def child_name(method: str, fields: Mapping[str, str], device: str, clock: str, synthetic: bool = False) -> str:
    """``as2d-b3-k70_pro-replay``; ``...-synthetic`` when the windows were synthetic trajectories."""
    tag = next((f"{p}{fields[k]}" for k, p in (("budget", "b"), ("width", "K"), ("cap", "cap")) if k in fields), None)
    return "-".join(x for x in (method, tag, device, clock, "synthetic" if synthetic else None) if x)


def _fmt(v: Any) -> str:
    return f"{v:.3g}" if isinstance(v, float) else str(v)


def describe_child(params: Mapping[str, str], m: Mapping[str, Any]) -> str:
    """A configuration run's one-line description (MLflow's run description)."""
    data = "synthetic trajectories" if params.get("synthetic") == "True" else "speech"
    what = params.get("config") or params["method"]
    source = f", candidates from {params['source']} (costs: param priced_as)" if params.get("source") else ""
    score = ", ".join(f"{k} {_fmt(m[k])}" for k in ("tps", "speedup") if m.get(k) is not None)
    reused = f"; rows reused from {params['reused_from']} (same key)" if params.get("reused_from") else ""
    return f"{what} on {params['device']} ({params['clock']} clock, {data}{source}): {score}{reused}"


LABEL_COLUMNS = ("config", "source", "selected", "screened", "deployed")


def honest_frame(df: pl.DataFrame, names: Mapping[str, str]) -> pl.DataFrame:
    """A summary or table with every source and configuration label named by what produced the trace."""
    cols = [c for c in LABEL_COLUMNS if c in df.columns and df.schema[c] == pl.String]
    return df.with_columns(pl.col(c).map_elements(lambda v: honest_label(v, names), return_dtype=pl.String)
                           for c in cols) if cols and names else df


SELECTION_METRICS = ("selected_budget", "dev_tps", "validation_tps", "dev_pick_retained", *DEVICE_METRICS)


def selection_records(metrics: Mapping[str, float], tables: Mapping[str, pl.DataFrame], names: Mapping[str, str],
                      job: str, synthetic: bool) -> list[dict[str, Any]]:
    """One record per device whose job chose a (source, budget) on dev: the selection's verdict, on its own run.

    Configuration runs carry only their own configuration's numbers; the frozen pick, its test TPS and the
    oracle gap belong to the selection (D.2.6, D.4.3).
    """
    sel = tables.get("selection")
    rows = {str(r["device"]): r for r in sel.iter_rows(named=True)} if sel is not None and "device" in sel.columns \
        else {}
    devices = sorted({k.split(".")[0] for k in metrics if k.count(".") == 1 and k.split(".")[1] in SELECTION_METRICS})
    out = []
    for d in devices:
        m = {k: metrics[f"{d}.{k}"] for k in SELECTION_METRICS if f"{d}.{k}" in metrics}
        params = {"device": d, "job": job, "synthetic": str(synthetic), "clock": "replay"}
        for k in ("selected", "deployed"):
            if rows.get(d, {}).get(k) is not None:
                params[k] = honest_label(str(rows[d][k]), names)
        gap = f", oracle gap {m['oracle_gap']:.3g}%" if "oracle_gap" in m else ""
        picked = params.get("selected", f"b{int(m['selected_budget'])}" if "selected_budget" in m else "?")
        out.append({"name": "-".join(["selection", d] + (["synthetic"] if synthetic else [])), "role": "selection",
                    "params": params, "metrics": m,
                    "description": f"dev-split selection on {d}: {picked} (frozen before test){gap}"})
    return out


def baseline_params(tables: Mapping[str, pl.DataFrame], device: str, method: str) -> dict[str, str]:
    """In a sweep, the key of the device's target-only rows (``target_only_key``: the sweep summary's speedups
    divide by the target-only of the same key) and, on a target-only run that reused another job's rows,
    the run that replayed them (``reused_from``)."""
    reuse = tables.get("target_only_reuse")
    rows = [] if reuse is None else reuse.filter(pl.col("device") == device).to_dicts()
    if not rows:
        return {}
    out = {"target_only_key": str(rows[0]["key"])}
    if method == "target_only" and rows[0]["reused"]:
        out["reused_from"] = str(rows[0]["computed_by"])
    return out


def child_records(summary: pl.DataFrame, metrics: Mapping[str, float], tables: Mapping[str, pl.DataFrame],
                  cfg: DictConfig) -> list[dict[str, Any]]:
    """One record per summary row (``name``, ``params`` = tags, plain-named ``metrics``, ``description``),
    then one selection record per device that selected a pair on dev (``selection_records``)."""
    synthetic = bool(cfg.get("dataset", {}).get("synthetic", False))
    names = source_names(flatten(cfg))
    out = []
    for row in summary.iter_rows(named=True):
        device, method = str(row.get("device")), str(row.get("method"))
        clock = str(row.get("clock") or "replay")
        configs = _configs(tables, device, method) if clock == "replay" else []
        fields = parse_label(configs[0]) if len(configs) == 1 else {}
        if len(configs) > 1:  # SD reports the mean over its widths (D.1.3)
            fields = {"config": ",".join(configs)}
        for k in ROW_PARAMS:  # a selection/oracle row names its device's frozen and deployed pairs itself
            if k not in fields and row.get(k) is not None:
                fields[k] = str(row[k])
        if "source" in fields:  # named by what produced the trace; the profile's name for its costs apart
            fields["priced_as"] = fields["source"]
            fields["source"] = source_label(fields["source"], names)
        for k in ("config", "selected", "deployed"):
            if k in fields:
                fields[k] = honest_label(fields[k], names)
        params = {"device": device, "method": method, "clock": clock, "job": str(cfg.get("job")), **fields,
                  "synthetic": str(synthetic), **baseline_params(tables, device, method)}
        m = {k: row[k] for k in CHILD_METRICS if k in row}
        if "exactness_mismatches" in metrics:
            m["exactness_mismatches"] = metrics["exactness_mismatches"]
        out.append({"name": child_name(method, fields, device, clock, synthetic), "params": params, "metrics": m,
                    "description": describe_child(params, m)})
    return out + selection_records(metrics, tables, names, str(cfg.get("job")), synthetic)


def job_metrics(metrics: Mapping[str, float], summary: pl.DataFrame | None) -> dict[str, float]:
    """The job run's own metrics: without the ``<device>.<method>.*`` copies its configuration runs carry."""
    if summary is None or not {"device", "method"} <= set(summary.columns):
        return dict(metrics)
    pairs = {f"{d}.{m}." for d, m in summary.select("device", "method").iter_rows()}
    return {k: v for k, v in metrics.items() if not any(k.startswith(p) for p in pairs)}


def describe_job(cfg: DictConfig, summary: pl.DataFrame | None, synthetic: bool) -> str:
    """A job run's one-line description: what ran on what data, and its best speedup."""
    devices = ", ".join(device_names(cfg)) or "no device profile"
    data = "SYNTHETIC trajectories" if synthetic else f"{cfg.get('dataset', {}).get('name', '?')} speech"
    line = f"{cfg.get('job')} on {devices} ({data})"
    if summary is not None and "speedup" in summary.columns and summary["speedup"].drop_nulls().len():
        best = summary.filter(pl.col("speedup") == pl.col("speedup").max()).row(0, named=True)
        line += f": best speedup {best['speedup']:.3g}x ({best.get('method')} on {best.get('device')})"
    return line + "; one child run per configuration"


def job_run_name(cfg: DictConfig, budgets: list[int] | None = None) -> str:
    """What a job run is: ``replay-k70_pro-b3``, ``demo-5devices-b3,7``, ``...-synthetic``. ``budgets``: the
    budgets its devices replayed (``device_budgets``), once known; before, ``model.budget``."""
    names = device_names(cfg)
    devices = names[0] if len(names) == 1 else f"{len(names)}devices" if names else None
    model = cfg.get("model")
    budget = model.get("budget") if model is not None else None
    if budgets:
        budget = ",".join(map(str, budgets))
    synthetic = bool(cfg.get("dataset", {}).get("synthetic", False))
    parts = [str(cfg.get("job")), devices, f"b{budget}" if budget is not None else None,
             "synthetic" if synthetic else None]
    return "-".join(p for p in parts if p)


__all__ = ["BUDGETS_TAG", "LEAD", "ROLE_TAG", "baseline_params", "child_records", "describe_job", "device_names",
           "honest_frame", "honest_label", "job_metrics", "job_run_name", "lead_columns", "parse_label",
           "profile_files", "selection_records", "source_label", "source_names", "summary_html", "summary_markdown",
           "used_params"]

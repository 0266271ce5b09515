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

ROLE_TAG = "as2d.role"  # "job" on a job run, "config" on a configuration's child run
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
    """Profile source name -> what produced it, from a run's flat params (``source_roles.*``, ``model.*``).

    ``{"qwen": "whisper-tiny.en (priced as qwen)", "parakeet": "pocketsphinx_en (priced as parakeet)"}``:
    a phone profile prices this run's producer with the paper's model costs; the legend must say so.
    """
    if params.get("dataset.synthetic") == "True":
        made = {"producer": "synthetic trajectories", "chunk": "synthetic trajectories"}
    else:
        external = params.get("model.external_sources", "").strip("[]").replace("'", "").split(",")[0].strip()
        made = {"producer": params.get("model.drafter.name", ""), "chunk": external}
    out = {}
    for role, who in made.items():
        priced = params.get(f"source_roles.{role}")
        if priced and who and who != priced:
            out[priced] = f"{who} (priced as {priced})"
    return out


def source_label(source: str, producer: str | None, synthetic: bool) -> str:
    """A candidate source named by what produced it: ``whisper-tiny.en (priced as qwen)``."""
    made_by = "synthetic trajectories" if synthetic else producer
    if not made_by or made_by == source:
        return source
    return f"{made_by} (priced as {source})"


def child_name(method: str, fields: Mapping[str, str], device: str, clock: str) -> str:
    tag = next((f"{p}{fields[k]}" for k, p in (("budget", "b"), ("width", "K"), ("cap", "cap")) if k in fields), None)
    return "-".join(x for x in (method, tag, device, clock) if x)


def child_records(summary: pl.DataFrame, metrics: Mapping[str, float], tables: Mapping[str, pl.DataFrame],
                  cfg: DictConfig) -> list[dict[str, Any]]:
    """One record per summary row: ``name``, ``params`` (= tags) and plain-named ``metrics``."""
    synthetic = bool(cfg.get("dataset", {}).get("synthetic", False))
    producer = str(cfg.model.drafter.name) if cfg.get("model") is not None and cfg.model.get("drafter") else None
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
        params = {"device": device, "method": method, "clock": clock, "job": str(cfg.get("job")), **fields}
        if "source" in fields:
            params["source_label"] = names.get(fields["source"]) or source_label(fields["source"], producer, synthetic)
        params["synthetic"] = str(synthetic)
        m = {k: row[k] for k in CHILD_METRICS if k in row}
        if method.startswith("as2d") and clock == "replay":
            m.update({k: metrics[f"{device}.{k}"] for k in DEVICE_METRICS if f"{device}.{k}" in metrics})
        if "exactness_mismatches" in metrics:
            m["exactness_mismatches"] = metrics["exactness_mismatches"]
        out.append({"name": child_name(method, fields, device, clock), "params": params, "metrics": m})
    return out


__all__ = ["ROLE_TAG", "child_records", "device_names", "parse_label", "profile_files", "source_label", "source_names",
           "summary_html", "summary_markdown", "used_params"]


def log_sweep_summary(client: Any, parent: str, children: list) -> None:
    """The sweep parent's summary: one row per configuration child run, as markdown, HTML and parquet."""
    import tempfile

    rows = []
    for c in children:
        if c.data.tags.get(ROLE_TAG) != "config":
            continue
        keys = ("device", "method", "config", "source", "budget", "clock")
        rows.append({**{k: c.data.params.get(k) for k in keys}, "run": c.info.run_name, **c.data.metrics})
    if not rows:
        return
    frame = pl.DataFrame(rows, infer_schema_length=None)
    with tempfile.TemporaryDirectory() as tmp:
        for name, text in (("summary.md", summary_markdown(frame, "sweep summary")),
                           ("summary.html", summary_html(frame, "sweep summary"))):
            (Path(tmp) / name).write_text(text)
            client.log_artifact(parent, str(Path(tmp) / name))
        frame.write_parquet(Path(tmp) / "summary.parquet")
        client.log_artifact(parent, str(Path(tmp) / "summary.parquet"))

"""Where a job's windows come from: SYNTHETIC trajectories or traces collected from real models."""

from __future__ import annotations

from typing import Any

from omegaconf import DictConfig, OmegaConf

from workbench.replay.synthetic import SourceSpec, SyntheticSpec, paper_like_sources, synthetic_windows
from workbench.replay.trajectory import Window

from .base import ConfigError


def synthetic_from_cfg(ds: DictConfig) -> list[Window]:
    n = ds.n_windows
    if not isinstance(n, int) or n < 2:
        raise ConfigError("dataset.n_windows", f"need an integer >= 2 (a dev and a test window), got {n!r}")
    sources = paper_like_sources() if ds.sources == "paper" else (SourceSpec("qwen"),)
    spec = SyntheticSpec(n_windows=n, mean_tokens=float(ds.mean_tokens), seed=int(ds.seed),
                         sources=sources)
    return synthetic_windows(spec)


def check_dataset_root(cfg: DictConfig) -> None:
    """A paper dataset's ``dataset.root`` holds its layout: checked in ``validate``, before any run exists."""
    from workbench.data.datasets import check_dataset, screen_dataset

    ds = OmegaConf.to_container(cfg.dataset, resolve=True)
    check_dataset(ds)
    screen_dataset(ds)  # every file decoded and checked once: bad ones are listed now, not mid-run
    if ds.get("loader"):
        from workbench.data.datasets.materialize import check_cohort

        check_cohort(ds, OmegaConf.to_container(cfg.model, resolve=True))  # every split count at once


def check_real_audio(cfg: DictConfig) -> None:
    """A job that runs models on audio needs a corpus of audio: the demo corpus or a paper dataset
    whose ``dataset.root`` holds its layout (checked here, before any run exists)."""
    if cfg.dataset.get("synthetic"):
        raise ConfigError("dataset", f"job {cfg.job} runs real audio, and dataset={cfg.dataset.name} holds "
                          "synthetic trajectories", fix="choose dataset=demo or a paper dataset with dataset.root=DIR")
    check_dataset_root(cfg)


def cohort_tables(cfg: DictConfig) -> dict[str, Any]:
    """``{"cohort": manifest}`` for a paper-dataset run (logged with the run's tables), else ``{}``."""
    from workbench.data.datasets.materialize import cohort_table

    t = cohort_table(OmegaConf.to_container(cfg.dataset, resolve=True), OmegaConf.to_container(cfg.model, resolve=True))
    return {} if t is None else {"cohort": t}


def cohort_labels(cfg: DictConfig, windows: list[Window]) -> dict[str, str] | None:
    """Each window's split as a paper dataset's cohort drew it (manifest column ``split``: dev /
    validation / test ...), for a job that selects on dev and reports on test without splitting the
    cohort again; ``None`` for the demo corpus (its seeded, origin-balanced split applies).
    Windows without both dev and test rows are one ``ConfigError``."""
    cohort = cohort_tables(cfg).get("cohort")
    if cohort is None:
        return None
    labels = dict(zip(cohort["window_id"], cohort["split"], strict=True))
    present = {labels.get(w.window_id) for w in windows}
    missing = [s for s in ("dev", "test") if s not in present]
    if missing:
        raise ConfigError("dataset.split", f"job {cfg.job} selects on the cohort's dev rows and reports its test "
                          f"rows, and these {len(windows)} windows hold no {' or '.join(missing)} rows",
                          fix="set dataset.split=all with dataset.cohort.splits drawing dev and test windows "
                          "(and dataset.max_windows null or large enough to reach them)")
    return labels


def quality_report(cfg: DictConfig, windows: list[Window]) -> tuple[dict[str, float], dict[str, Any]]:
    """Task quality of the target outputs (WER/CER, BLEU/chrF, token F1) on a paper-dataset run."""
    ds = OmegaConf.to_container(cfg.dataset, resolve=True)
    if not ds["loader"] or not windows:
        return {}, {}
    from workbench.data.datasets.materialize import cohort_table
    from workbench.data.datasets.scoring import score_windows
    from workbench.models.registry import ModelSpec, resolve_weights
    from workbench.models.tokenizer import TextCodec

    model = OmegaConf.to_container(cfg.model, resolve=True)
    codec = TextCodec.from_file(resolve_weights(ModelSpec.from_dict(model["target"])) / "tokenizer.json")
    metrics, table = score_windows(windows, cohort_table(ds, model), codec, windows[0].eos_id)
    return metrics, {"quality": table}


def load_windows(cfg: DictConfig) -> list[Window]:
    ds = cfg.dataset
    if ds.synthetic:
        return synthetic_from_cfg(ds)
    from .demo_traces import demo_windows

    return with_publication(demo_windows(cfg), ds.get("task"))


def with_publication(windows: list[Window], task: str | None) -> list[Window]:
    """Each source track fed as the task's native producer feeds its buffer (D.1.2): spoken QA
    publishes cumulative prefixes, every token at its own arrival; ASR and translation, batches."""
    from dataclasses import replace

    from workbench.decoding.cumulative import BATCHES, publication_for_task

    rule = publication_for_task(task)
    if rule == BATCHES:
        return windows
    return [replace(w, sources={n: replace(t, publication=rule) for n, t in w.sources.items()}) for w in windows]

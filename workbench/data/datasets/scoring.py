"""Task quality of a run's target outputs against the dataset references (beside speed).

The target's greedy output (each window's reference token ids, which every method reproduces) is
decoded with the target's own ``tokenizer.json`` and scored against the cohort manifest's
reference text: ASR WER (spaced languages) and CER (all), translation BLEU/chrF, QA token F1.
Qwen3-ASR answers ``language <Name><asr_text><transcript>``: only the transcript is scored.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from workbench.data import quality as Q

_SPECIAL = re.compile(r"<\|[^|>]*\|>")
ASR_TEXT = "<asr_text>"


def output_text(codec: Any, ids: Sequence[int], eos_id: int | None) -> str:
    """Decoded target output without EOS, special tokens, or a Qwen3-ASR language header."""
    ids = [int(t) for t in ids if eos_id is None or int(t) != eos_id]
    text = codec.tokenizer.decode(ids, skip_special_tokens=False)
    if ASR_TEXT in text:
        text = text.split(ASR_TEXT, 1)[1]
    return _SPECIAL.sub("", text).strip()


def score_windows(windows: Sequence[Any], manifest: Any, codec: Any, eos_id: int | None
                  ) -> tuple[dict[str, float], Any]:
    """Metrics ``quality.*`` and a per-window table (reference, output, per-window score).

    ``windows`` need ``window_id`` and ``reference`` (target token ids); ``manifest`` is the cohort
    frame (``cohort.manifest``) naming each window's task, language and reference text; ``codec`` is
    the target's text codec (``models.tokenizer.TextCodec`` of its ``tokenizer.json``: the caller
    loads it, so the data layer needs no model code)."""
    import polars as pl

    rows = {r["window_id"]: r for r in manifest.iter_rows(named=True)}
    missing = [w.window_id for w in windows if w.window_id not in rows]
    if missing:
        raise ValueError(f"{len(missing)} windows are not in the cohort manifest (e.g. {missing[0]})")
    table = []
    for w in windows:
        r = rows[w.window_id]
        out = output_text(codec, w.reference, eos_id)
        table.append({"window_id": w.window_id, "dataset": r["dataset"], "task": r["task"], "language": r["language"],
                      "reference": r["reference"], "output": out, "score": _one(r, out)})
    frame = pl.DataFrame(table)
    return _pooled(frame, rows), frame


def _one(r: dict[str, Any], out: str) -> float:
    if r["task"] == "qa":
        return Q.token_f1(out, r["answers"] or [r["reference"]])
    if r["task"] == "translation":
        return Q.translation_quality([r["reference"]], [out], r["target_language"] or "en")["chrf"]
    return Q.asr_quality([r["reference"]], [out], r["language"])["primary"]


def _pooled(frame: Any, rows: dict[str, dict[str, Any]]) -> dict[str, float]:
    metrics: dict[str, float] = {}
    for task in frame["task"].unique().to_list():
        t = frame.filter(frame["task"] == task)
        refs, outs = t["reference"].to_list(), t["output"].to_list()
        if task == "asr":
            metrics["quality.cer"] = Q.cer(refs, outs)
            spaced = t.filter(~t["language"].is_in(sorted(Q.CER_LANGUAGES)))
            if spaced.height:
                metrics["quality.wer"] = Q.wer(spaced["reference"].to_list(), spaced["output"].to_list())
        elif task == "translation":
            tgt = rows[t["window_id"][0]]["target_language"] or "en"
            metrics.update({f"quality.{k}": v for k, v in Q.translation_quality(refs, outs, tgt).items()})
        else:
            answers = [rows[i]["answers"] or [rows[i]["reference"]] for i in t["window_id"].to_list()]
            metrics.update({f"quality.{k}": v for k, v in Q.qa_quality(answers, outs).items()})
    return metrics

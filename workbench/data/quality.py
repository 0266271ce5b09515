"""Task quality of the target's output beside speed: ASR WER/CER (jiwer), translation BLEU/chrF
(sacrebleu), spoken QA token F1 (the SQuAD v1.1 rule).

These describe the target model, not the decoding scheme: every speculative path reproduces the
target's greedy output token for token, so its quality equals target-only's by construction (the
exactness audit checks that equality; quality is reported once per target output).

Normalization is deliberately light and stated: ASR lowercases, drops punctuation and collapses
spaces before WER; CER compares characters with spaces removed (the rate used for Chinese and
Japanese, where words are not space-separated). BLEU tokenizes Chinese output with sacrebleu's
``zh`` tokenizer and everything else with ``13a``.
"""

from __future__ import annotations

import re
import string
import unicodedata
from collections import Counter
from collections.abc import Sequence

CER_LANGUAGES = frozenset({"zh", "ja", "yue"})
_ARTICLES = re.compile(r"\b(a|an|the)\b")


def _strip_punct(text: str) -> str:
    # Unicode punctuation (categories P*) and symbols (S*) too, so Chinese full-width marks go
    return "".join(" " if unicodedata.category(c)[0] in "PS" else c for c in text)


def normalize_asr(text: str) -> str:
    """Lowercase, punctuation to spaces (apostrophes inside words kept), single spaces."""
    text = unicodedata.normalize("NFKC", text).lower()
    text = re.sub(r"(?<=\w)'(?=\w)", "\x00", text)
    return " ".join(_strip_punct(text).replace("\x00", "'").split())


def _pairs(refs: Sequence[str], hyps: Sequence[str]) -> tuple[list[str], list[str]]:
    if len(refs) != len(hyps):
        raise ValueError(f"{len(refs)} references but {len(hyps)} hypotheses")
    if not refs:
        raise ValueError("no references to score")
    return list(refs), list(hyps)


def wer(refs: Sequence[str], hyps: Sequence[str]) -> float:
    """Corpus word error rate after :func:`normalize_asr` (edits / reference words)."""
    import jiwer

    r, h = _pairs(refs, hyps)
    r, h = [normalize_asr(x) for x in r], [normalize_asr(x) for x in h]
    keep = [i for i, x in enumerate(r) if x]
    if not keep:
        raise ValueError("every reference is empty after normalization; WER is undefined")
    return float(jiwer.wer([r[i] for i in keep], [h[i] for i in keep]))


def cer(refs: Sequence[str], hyps: Sequence[str]) -> float:
    """Corpus character error rate, punctuation and spaces removed."""
    import jiwer

    r, h = _pairs(refs, hyps)
    r, h = [normalize_asr(x).replace(" ", "") for x in r], [normalize_asr(x).replace(" ", "") for x in h]
    keep = [i for i, x in enumerate(r) if x]
    if not keep:
        raise ValueError("every reference is empty after normalization; CER is undefined")
    return float(jiwer.cer([r[i] for i in keep], [h[i] for i in keep]))


def asr_quality(refs: Sequence[str], hyps: Sequence[str], language: str = "en") -> dict[str, float]:
    """WER and CER; ``primary`` is CER for unspaced languages and WER otherwise."""
    c = cer(refs, hyps)
    if language in CER_LANGUAGES:
        return {"cer": c, "primary": c}
    w = wer(refs, hyps)
    return {"wer": w, "cer": c, "primary": w}


def translation_quality(refs: Sequence[str], hyps: Sequence[str], target_language: str = "en") -> dict[str, float]:
    """Corpus BLEU and chrF (sacrebleu, one reference per segment)."""
    import sacrebleu

    r, h = _pairs(refs, hyps)
    tokenize = "zh" if target_language in CER_LANGUAGES else "13a"
    bleu = sacrebleu.corpus_bleu(h, [r], tokenize=tokenize)
    chrf = sacrebleu.corpus_chrf(h, [r])
    return {"bleu": float(bleu.score), "chrf": float(chrf.score)}


def normalize_answer(text: str) -> str:
    """SQuAD v1.1: lowercase, drop punctuation and articles, collapse spaces."""
    text = "".join(c for c in text.lower() if c not in set(string.punctuation))
    return " ".join(_ARTICLES.sub(" ", text).split())


def token_f1(prediction: str, answers: Sequence[str]) -> float:
    """Best token-overlap F1 of ``prediction`` against any gold answer (0..1)."""
    if not answers:
        raise ValueError("a question needs at least one gold answer for token F1")
    pred = normalize_answer(prediction).split()
    best = 0.0
    for gold_text in answers:
        gold = normalize_answer(gold_text).split()
        if not pred or not gold:
            best = max(best, float(pred == gold))
            continue
        common = sum((Counter(pred) & Counter(gold)).values())
        if common:
            p, r = common / len(pred), common / len(gold)
            best = max(best, 2 * p * r / (p + r))
    return best


def qa_quality(answers: Sequence[Sequence[str]], predictions: Sequence[str]) -> dict[str, float]:
    """Mean token F1 and exact match over questions."""
    if len(answers) != len(predictions) or not answers:
        raise ValueError(f"{len(answers)} answer lists but {len(predictions)} predictions")
    f1 = [token_f1(p, a) for p, a in zip(predictions, answers, strict=True)]
    em = [float(any(normalize_answer(p) == normalize_answer(g) for g in a)) for p, a in zip(predictions, answers,
                                                                                           strict=True)]
    return {"token_f1": sum(f1) / len(f1), "exact_match": sum(em) / len(em)}


def task_quality(task: str, refs: Sequence[str], hyps: Sequence[str], *, language: str = "en",
                 answers: Sequence[Sequence[str]] | None = None) -> dict[str, float]:
    """Dispatch on the dataset's task (asr | translation | qa)."""
    if task == "asr":
        return asr_quality(refs, hyps, language)
    if task == "translation":
        return translation_quality(refs, hyps, language)
    if task == "qa":
        return qa_quality(answers if answers is not None else [[r] for r in refs], hyps)
    raise ValueError(f"unknown task {task!r}; choose asr, translation or qa")

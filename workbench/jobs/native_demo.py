"""Native host runs inside the demo: Hydra glue over ``workbench.native`` (episodes, report, D.3).

The demo's test windows run on the real clock, methods interleaved, with the ``conf/method``
settings of this run; each window's outputs are audited against its target-only run.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from pathlib import Path

from omegaconf import DictConfig

from workbench.decoding.cumulative import publication_for_task
from workbench.models.pair import ModelPair
from workbench.native.agreement import agreement_frame, anchor_window, probe_widths, summarize, verdict
from workbench.native.episodes import host_setup, native_episodes
from workbench.native.probe_choice import ProbeChoice, ProbeRule
from workbench.native.report import NativeRuns, episode_report
from workbench.native.run_store import ReplayInputs, save_runs
from workbench.native.windows import AudioWindow, calibration_clip_ids, demo_clip_windows, demo_windows
from workbench.replay.profile import DeviceProfile
from workbench.replay.selection import dev_test_from_labels, split_windows
from workbench.replay.trajectory import Window

from .config import method_settings, repeat_rule
from .demo_traces import clip_audio, demo_corpus, instructions


def measured_windows(cfg: DictConfig, windows: list[Window], labels: Mapping[str, str] | None = None,
                 ) -> tuple[Window, ...]:
    """The windows native runs measure: a paper dataset's cohort test rows (``labels``), else the demo
    corpus's seeded test split (the same one budget selection left out)."""
    if labels is not None:
        return dev_test_from_labels(windows, labels, seed=int(cfg.seed))[1].windows
    n_dev = max(1, round(len(windows) * cfg.dataset.dev_fraction))
    return split_windows(windows, n_dev, seed=int(cfg.seed))[1].windows


def native_runs(cfg: DictConfig, pair: ModelPair, windows: list[Window],
                host_profile: DeviceProfile | None = None, labels: Mapping[str, str] | None = None,
                store: Path | None = None) -> NativeRuns:
    """The demo's native runs; with a host profile and As²d among the methods, D.3 agreement too, and
    with ``store`` its runs kept there as a run store (``python -m workbench.native.reprice``)."""
    names = list(cfg.native.methods)
    if "target_only" not in names:
        names.insert(0, "target_only")  # the exactness reference of every window
    corpus = demo_corpus(cfg)
    # D.3 judges replay on windows the host calibration never measured: its dev clips stay out
    held = calibration_clip_ids(corpus=corpus) if host_profile is not None else frozenset()
    test = [w for w in measured_windows(cfg, windows, labels) if w.window_id not in held]
    chosen = test[: cfg.native.max_windows or len(test)]
    clips = {c.window_id: c for c in corpus.clips}
    asks = instructions(corpus)  # each window's task prompt (translation, QA question), as its traces had
    audio = [AudioWindow(w.window_id, (w.window_id,), clip_audio(clips[w.window_id], cfg.model),
                         asks.get(w.window_id)) for w in chosen]
    # spoken QA feeds the buffer cumulative prefixes (D.1.2); ASR and translation publish batches
    setup = host_setup(pair, overrides={n: method_settings(cfg, n) for n in names},
                       publication=publication_for_task(cfg.dataset.get("task")))
    setup.use_profile(host_profile)  # the target runs by this machine's kernel plan, as the profile priced it
    anchor = anchor_window(host_profile) if host_profile is not None and "as2d" in names else None
    # each window's probes on the profile's anchor window, or on the dev window nearest it in duration
    probe_rule = ProbeRule.parse(str(cfg.native.probe))
    more = ([*demo_windows(corpus=corpus)[0], *demo_clip_windows(None, corpus=corpus, model=cfg.model)]
            if anchor is not None and probe_rule is ProbeRule.MATCHED else [])
    probe = None if anchor is None else ProbeChoice.of(anchor, more, probe_rule)
    # D.3 protocol: a warm-up pass per window before the measured repetitions (cold caches, first calls);
    # with a drift anchor, a probe on a dev window (``native.probe``) before each repetition (target-only,
    # and As²d where the profile anchors it too).
    # extra repetitions serve D.3's medians (target-only and As²d): another method's scatter buys none
    rule = dataclasses.replace(repeat_rule(cfg.native), judged=("target_only", "as2d"))
    ep = native_episodes(setup, audio, names, rule, warmup=int(cfg.native.warmup),
                         progress=True, probe=probe, probe_widths=probe_widths(host_profile) if anchor else (),
                         probe_as2d=probe is not None and host_profile is not None
                         and host_profile.anchor_as2d_ms is not None)
    runs = episode_report(ep)
    if host_profile is not None and "as2d" in names:
        agr = agreement_frame(ep, setup, host_profile)  # the D.3 rule of workbench.native.agreement
        if store is not None:
            save_runs(store, ep, ReplayInputs.of(setup), host_profile.file)
        if agr.height:
            runs.tables["agreement"] = agr
            s = summarize(agr, host_profile)
            runs.metrics["agreement.mae_pct"] = s["mae_pct"]
            runs.metrics["agreement.pooled_error_pct"] = s["pooled_error_pct"]
            runs.metrics["agreement.target_only_mae_pct"] = s["target_only_mae_pct"]
            runs.metrics["agreement.within_goal"] = float(s["within_goal"])
            runs.metrics["agreement.noise_floor_pct"] = s["noise_floor_pct"]  # NaN with one repetition
            if s.get("calibrated_anchor_compared"):  # the calibration's measured anchors, beside (anchors.py)
                runs.metrics["agreement.calibrated_anchor_mae_pct"] = s["calibrated_anchor_mae_pct"]
            print(verdict(s))  # the D.3 line beside the demo's replay-vs-native table
    return runs

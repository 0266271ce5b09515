"""Prefix lookahead natively on tiny real Whisper models: exact, drafted in a thread beside the target call."""

from __future__ import annotations

import os
import threading

import polars as pl
import pytest

from tests.native.test_native import CAP, audio, producer_dir, random_whisper, tiny_dir  # noqa: F401  (fixtures)
from workbench.decoding.records import LOOKAHEAD
from workbench.decoding.schemes.lookahead import reused_lookaheads
from workbench.metrics import lookahead_use
from workbench.models.whisper import WhisperTarget, load_whisper, whisper_drafter
from workbench.native.driver import NativeHost
from workbench.native.lookahead import ThreadedDrafter
from workbench.native.producer import Placement


@pytest.fixture(scope="module")
def other_dir(tmp_path_factory):
    return random_whisper(1, tmp_path_factory.mktemp("tiny_other"))  # a drafter that rarely agrees


class ThreadLog:
    """Wraps a real drafter and notes which thread ran each proposal."""

    def __init__(self, drafter) -> None:
        self.drafter, self.threads = drafter, []

    def propose(self, prefix, n, stop_below=None):
        self.threads.append(threading.current_thread().name)
        return self.drafter.propose(prefix, n, stop_below)


def run(host, target_dir, drafter_dir, audio, scheme, drafter_log=None):  # noqa: F811
    drafter = None
    if scheme != "target_only":
        drafter = whisper_drafter(load_whisper(drafter_dir), audio)
        drafter = drafter if drafter_log is None else drafter_log(drafter)
    params = {"width": 4} if scheme != "target_only" else {}
    return host.run("w0", scheme, WhisperTarget(load_whisper(target_dir), audio), audio=audio, max_output=CAP,
                    drafter=drafter, params=params)


def test_lookahead_matches_target_only_and_drafts_beside_the_call(tiny_dir, producer_dir, other_dir, audio):  # noqa: F811
    with NativeHost(None, verifier=Placement(threads=1)) as host:
        ref = run(host, tiny_dir, producer_dir, audio, "target_only")
        logs: list[ThreadLog] = []

        def logged(d):
            logs.append(ThreadLog(d))
            return logs[-1]

        same = run(host, tiny_dir, producer_dir, audio, "lookahead", logged)  # the same greedy function drafts
        other = run(host, tiny_dir, other_dir, audio, "lookahead")  # mostly rejected: lookaheads discarded
        sd = run(host, tiny_dir, producer_dir, audio, "sd")
    assert len(ref.output) > 20
    assert same.output == ref.output and other.output == ref.output and sd.output == ref.output
    # Matched acceptance (Table 13): the same chains as SD, round for round.
    assert [(r.chain, r.accepted) for r in same.records] == [(r.chain, r.accepted) for r in sd.records]
    reused = [r for r in same.records if r.provenance and r.provenance[0] == LOOKAHEAD]
    assert reused and all(r.work.forwards == 0 for r in reused)
    # The lookaheads ran on the worker thread, the round's own drafting on the verifier's.
    names = set(logs[0].threads)
    assert any(n.startswith("as2d-lookahead") for n in names) and threading.main_thread().name in names
    # Each lookahead began in its round, before the target call returned: it ran beside the call.
    spans = [s for s in same.stages if s[1] == "lookahead"]
    rounds = [(r.t_decide, r.t_end) for r in same.records]
    assert spans and all(any(a <= s[2] <= b for a, b in rounds) for s in spans)
    # A drafter that rarely agrees wastes its lookaheads: most are discarded, never reused.
    wasted = [s for s in other.stages if s[1] == "lookahead"]
    kept = [r for r in other.records if r.provenance and r.provenance[0] == LOOKAHEAD]
    assert len(wasted) > len(kept)
    # Table 13's accounting: drafting hidden by the overlap, and the part of it that was used.
    used = [lookahead_use(pl.DataFrame(list(res.stages), schema=["resource", "stage", "start", "end", "round"],
                                       orient="row"), reused_lookaheads(res.records)) for res in (same, other)]
    assert all(0 < u.hidden <= u.drafting and u.reused <= u.hidden for u in used)
    assert used[0].reused_share > used[1].reused_share


def test_the_lookahead_thread_runs_on_the_cpus_it_is_given(producer_dir, audio):  # noqa: F811
    cpu = max(os.sched_getaffinity(0))
    seen: list[set[int]] = []

    class Where(ThreadLog):
        def propose(self, prefix, n, stop_below=None):
            seen.append(os.sched_getaffinity(0))
            return super().propose(prefix, n, stop_below)

    with ThreadedDrafter(Where(whisper_drafter(load_whisper(producer_dir), audio)), (cpu,)) as beside:
        assert beside.start([4], 3).result().tokens  # on the worker, pinned
        assert beside.propose([4], 3).tokens  # on the caller's thread, as it was
    assert seen[0] == {cpu} and seen[1] == os.sched_getaffinity(0)

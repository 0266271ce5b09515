"""Native host driver: the real clock, with the producer in its own process.

The decode clock follows A.3: it starts after the target's audio and prompt prefill (and the
producer's audio prefill) and ends at target EOS plus the producer's drain, charged once.
Cleanup (waiting for the producer to acknowledge) is recorded separately.

Schemes are the decoding core's, unchanged; this module only owns time. It emits the same round
records and stage intervals ``(resource, stage, start, end, round)`` as replay.
"""

from __future__ import annotations

import math
import multiprocessing as mp
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from multiprocessing.process import BaseProcess
from typing import Any, TypeVar

from workbench.decoding import (
    Drafter,
    RoundCosts,
    RoundRecord,
    Scheme,
    Target,
    WallClock,
    make_scheme,
    round_stages,
    run_rounds,
    scheme_spec,
)
from workbench.errors import RunnerError

from .lookahead import ThreadedDrafter, lookahead_stages
from .messages import Done, Failed, Loaded, Message, PrepareWindow, Quit, Ready
from .producer import Placement, ProducerSpec, producer_main, spawn_start_method
from .shared import NativeSource, SharedBuffer

Stage = tuple[str, str, float, float, int]
M = TypeVar("M", bound=Message)


class ProducerError(RunnerError):
    """The producer process failed; ``partial`` keeps the window's timings measured so far."""

    kind = "producer"

    def __init__(self, message: str, partial: NativeResult | None = None, fix: str = "", kept: str = "") -> None:
        super().__init__(message, fix=fix, kept=kept)
        self.partial = partial


@dataclass
class NativeResult:
    window_id: str
    scheme: str
    output: tuple[int, ...]
    records: tuple[RoundRecord, ...]
    stages: tuple[Stage, ...]
    time: float  # decode clock: after prefill through EOS plus charged drain (s)
    t_eos: float
    cleanup: float = 0.0  # after the charged boundary, recorded separately (A.3)
    capped: bool = False
    producer_tokens: tuple[int, ...] = ()
    producer_times: tuple[float, ...] = ()  # publish time of each produced token, decode clock
    producer_forwards: int = 0
    # drafter forwards run by each produced token's availability (``SharedBuffer.forwards_of``); empty: one
    # operation per token (a shared-vocabulary producer), the unit replay prices the producer in
    producer_ops: tuple[int, ...] = ()
    placement: dict[str, Any] = field(default_factory=dict)
    fault: str | None = None
    origin: float = math.nan  # the decode clock's zero on time.perf_counter (s): on-demand request timing
    joined_at_round: int | None = None  # first round the verifier ran on the producer's core too (widen)
    fell_back_at_round: int | None = None  # rounds verified when the fallback rule stopped the producer
    producer_finish: float = math.nan  # when the producer stopped (EOS, cap or stop request), decode clock

    @property
    def tps(self) -> float:
        return len(self.output) / self.time if self.time > 0 else math.inf

    @property
    def producer_end(self) -> float:
        """Until when (decode clock) the producer ran beside the target: its finish, or EOS when it had not
        stopped by then; 0 in a run without one. A call that starts before it is a concurrent call, as
        replay prices it (``pricing.verify(K, concurrent=True)``)."""
        if not math.isnan(self.producer_finish):
            return self.producer_finish
        return self.t_eos if self.producer_tokens else 0.0


def _loop(scheme: Scheme, target: Target, t0: float, clock: Callable[[], float]) -> tuple[list[RoundRecord], list]:
    """Drive rounds until EOS or the cap on the wall clock: the core's one round loop, labelled by
    the core's one stage classifier (the same labels replay gives). The target never waits."""
    records = run_rounds(scheme, target, WallClock(t0, clock)).timed(scheme.records)
    stages = [s for r in records for s in round_stages(r.round, r.work, r.width, r.t_decide, r.t_start, r.t_end)]
    return list(records), stages


@dataclass(frozen=True, slots=True)
class Fallback:
    """Stop reading a producer whose candidates have not paid, and give its core to the target.

    Rule: at the end of round ``after``, if the target accepted fewer than ``below`` candidates per
    round over those rounds (plain steps -- not ready, no match -- count as rounds with none), the
    target asks the producer to stop (it stops at its next forward: the drain rule, A.3) and takes the
    producer's core once it has stopped (``JoiningCores``). The rest of the window is target-only on
    all cores; outputs stay the target's greedy output (verification is unchanged). Beyond the paper:
    its two constants are chosen on the bench corpus's dev split (``native.bench --fallbacks``)."""

    after: int
    below: float

    def __post_init__(self) -> None:
        if self.after < 1 or not self.below > 0.0:
            raise ValueError(f"fallback {self.after}:{self.below}: need after >= 1 rounds and below > 0 "
                             "accepted candidates per round")

    @classmethod
    def parse(cls, text: str) -> Fallback:
        """``"AFTER:BELOW"``, e.g. ``"12:0.2"`` (the bench's ``--fallbacks`` and method names)."""
        after, _, below = text.partition(":")
        try:
            return cls(int(after), float(below))
        except ValueError:
            raise ValueError(f"fallback {text!r}: write AFTER:BELOW, e.g. 12:0.2 (rounds, accepted per round)"
                             ) from None

    @property
    def name(self) -> str:
        return f"fallback:{self.after}:{self.below:g}"


class JoiningCores:
    """The target, given the producer's core once the producer has finished (``widen``).

    After the producer publishes its last token (EOS, cap, or a stop request) its core is idle for
    the rest of the window. Before the first round that sees the producer finished, the verifier
    thread takes ``widen`` (e.g. 2 threads on both cores); the host gives it its own placement back
    after the window. With a ``fallback`` rule the target may also ask the producer to stop early
    (``request_stop``). Outputs are still audited against target-only: thread count changes no greedy
    token here (the bench's 1- and 2-thread target-only runs are compared on every window). Replay
    does not model this: host profiles price one core."""

    def __init__(self, target: Target, shared: SharedBuffer, widen: Placement, fallback: Fallback | None = None,
                 request_stop: Callable[[], None] | None = None) -> None:
        self._target, self._shared, self._widen = target, shared, widen
        self._fallback, self._request_stop = fallback, request_stop
        self.joined_at_round: int | None = None
        self.fell_back_at_round: int | None = None
        self._rounds = self._accepted = 0

    def verify(self, root: int, chain: Sequence[int]) -> list[int]:
        if self.joined_at_round is None and not math.isnan(self._shared.finish_time.value):
            self._widen.apply()
            use_threads = getattr(self._target, "use_threads", None)  # MNN fixes threads per module
            if use_threads is not None:
                use_threads(self._widen.threads)
            self.joined_at_round = self._rounds
        self._rounds += 1
        return self._target.verify(root, chain)

    def keep(self, n_accepted: int) -> None:
        self._target.keep(n_accepted)
        self._accepted += n_accepted
        fb = self._fallback
        if (fb is not None and self._rounds == fb.after and self._request_stop is not None
                and self._accepted < fb.below * fb.after):
            self._request_stop()
            self.fell_back_at_round = self._rounds

    def __getattr__(self, name: str) -> Any:  # prefill, eos_id, vocab_size, ... of the target
        return getattr(self._target, name)


class NativeHost:
    """Owns the producer process across windows. Use as a context manager: no orphans."""

    def __init__(self, producer: ProducerSpec | None, verifier: Placement | None = None,
                 ready_timeout: float = 600.0) -> None:
        self.spec = producer
        self.verifier = verifier or Placement()
        self.ready_timeout = ready_timeout
        self.placement: dict[str, Any] = {}
        self._proc: BaseProcess | None = None
        self._caller: Placement | None = None

    def __enter__(self) -> NativeHost:
        self._caller = Placement.current()  # the caller's thread gets its threads and CPUs back on exit
        try:
            if self.spec is not None:
                self._start_producer()  # before the verifier narrows this thread: the child inherits all CPUs
            self.placement["verifier"] = self.verifier.apply()
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _start_producer(self) -> None:
        ctx = mp.get_context("spawn")  # fork after torch threads start can deadlock
        self.shared = SharedBuffer(ctx)
        self.start_evt, self.stop_evt = ctx.Event(), ctx.Event()
        self._conn, child = ctx.Pipe()
        self._proc = ctx.Process(target=producer_main, name="as2d-producer", daemon=True,
                                 args=(child, self.shared, self.start_evt, self.stop_evt, self.spec))
        with spawn_start_method():
            self._proc.start()
        child.close()  # only the child holds its end: its death is an EOF here at once, not a timeout
        self.placement["producer"] = self._recv(Loaded, self.ready_timeout, "loading its model").placement

    def _recv(self, kind: type[M], timeout: float, doing: str) -> M:
        """The next message, which must be a ``kind``; anything else is one clear ``ProducerError``."""
        msg: Message
        deadline = time.monotonic() + timeout
        while not self._conn.poll(min(1.0, timeout)):  # bounded slices: a dead producer is seen in a second
            if self._proc is not None and not self._proc.is_alive():
                msg = Failed(f"the producer process died (exit code {self._proc.exitcode})")
                break
            if time.monotonic() > deadline:
                msg = Failed(f"no answer within {timeout:.0f} s")
                break
        else:
            try:
                msg = self._conn.recv()
            except EOFError:
                code = self._proc.exitcode if self._proc is not None else None
                msg = Failed(f"the producer process exited (exit code {code})")
        if not isinstance(msg, kind):
            problem = msg.error if isinstance(msg, Failed) else f"expected {kind.__name__}, got {msg!r}"
            raise ProducerError(f"producer failed while {doing}: {problem}")
        return msg

    def close(self) -> None:
        if self._caller is not None:
            self._caller.apply()
            self._caller = None
        if self._proc is None:
            return
        try:
            if self._proc.is_alive():
                self._conn.send(Quit())
                self._proc.join(5)
        except (BrokenPipeError, OSError):
            pass
        if self._proc.is_alive():
            self._proc.kill()
            self._proc.join(5)
        self._proc = None

    @property
    def producer_pid(self) -> int | None:
        return None if self._proc is None else self._proc.pid

    # -------------------------------------------------------------------------------------
    def run(
        self,
        window_id: str,
        scheme_name: str,
        target: Target,
        *,
        audio: Any = None,
        max_output: int,
        drafter: Drafter | None = None,
        params: dict[str, Any] | None = None,
        drain_timeout: float = 30.0,
        producer_cap: int | None = None,
        costs: RoundCosts | None = None,
        instruction: str | None = None,
        widen: Placement | None = None,
        fallback: Fallback | None = None,
    ) -> NativeResult:
        """Run one window with one scheme; ``target`` is freshly built for this window.

        ``costs``: per-width verify costs (ms) for a cost-aware scheme (catalog ``needs_costs``).
        ``instruction``: the request's instruction, which the producer is prompted with (the target
        and drafter were built with the same one). ``widen``: the verifier's placement once the
        producer has finished (``JoiningCores``); None keeps the verifier on its own placement.
        ``fallback``: with ``widen``, the rule that stops a producer whose candidates have not paid."""
        clock = time.perf_counter
        params = dict(params or {})
        decoupled = scheme_spec(scheme_name).decoupled
        if decoupled and self._proc is None:
            raise ValueError(f"scheme {scheme_name!r} needs a producer process; this NativeHost has none")
        if decoupled:
            self._prepare_window(window_id, audio, max_output if producer_cap is None else producer_cap, instruction)
        # An engine that loads a module per thread count (MNN) loads the widened one now, off the
        # decode clock, not at the verify where the producer's core joins.
        prepare = getattr(target, "prepare_threads", None) if decoupled else None
        if prepare is not None and widen is not None:
            prepare(widen.threads)
        root = target.prefill()
        source = None
        t0 = clock()
        if decoupled:
            source = NativeSource(self.shared, t0, "producer", target.vocab_size)
            self.start_evt.set()
        scheme, beside = self._scheme(scheme_name, max_output, target.eos_id, drafter, source, costs, params)
        scheme.start(root)
        joined = (JoiningCores(target, self.shared, widen, fallback, self.stop_evt.set)
                  if decoupled and widen is not None else None)
        try:
            records, stages = _loop(scheme, joined or target, t0, clock)
        finally:
            t_eos = clock() - t0
            if decoupled:
                self.stop_evt.set()
            if joined is not None and joined.joined_at_round is not None:
                self.verifier.apply()
            if beside is not None:
                beside.close()
        if beside is not None:  # each lookahead's drafting beside the calls, on the decode clock
            stages += lookahead_stages(beside, records, t0)
        result = NativeResult(window_id, scheme_name, tuple(scheme.output), tuple(records), tuple(stages),
                              t_eos, t_eos, capped=bool(records) and records[-1].outcome == "cap",
                              placement=dict(self.placement), origin=t0,
                              joined_at_round=None if joined is None else joined.joined_at_round,
                              fell_back_at_round=None if joined is None else joined.fell_back_at_round)
        if not decoupled:
            return result
        assert source is not None  # a decoupled run made its source above
        return self._drain(result, source, drain_timeout, clock)

    def _scheme(self, scheme_name: str, max_output: int, eos_id: int | None, drafter: Drafter | None,
                source: NativeSource | None, costs: RoundCosts | None,
                params: dict[str, Any]) -> tuple[Scheme, ThreadedDrafter | None]:
        """The window's scheme, and the lookahead thread it drafts through (None without one).

        Prefix lookahead drafts its next proposal in a thread beside the target call, on the
        producer's CPUs (idle in a serial run) when this host has a producer (native/lookahead.py)."""
        beside = None
        if drafter is not None and scheme_spec(scheme_name).overlaps:
            beside = ThreadedDrafter(drafter, None if self.spec is None else self.spec.placement.cpus)
        scheme = make_scheme(scheme_name, max_output=max_output, eos_id=eos_id, drafter=beside or drafter,
                             source=source, costs=costs, **params)
        return scheme, beside

    def _prepare_window(self, window_id: str, audio: Any, cap: int, instruction: str | None) -> None:
        """Hand the producer its window and wait until it is ready to start on ``start_evt``."""
        self.start_evt.clear()
        self.stop_evt.clear()
        try:
            self._conn.send(PrepareWindow(window_id, audio, cap, instruction))
        except (BrokenPipeError, OSError) as err:  # the producer died between windows
            code = self._proc.exitcode if self._proc is not None else None
            raise ProducerError(f"window {window_id}: the producer process is gone (exit code {code})",
                                fix="rerun; if it recurs, the producer's model does not run on this machine"
                                ) from err
        self._recv(Ready, self.ready_timeout, f"preparing window {window_id}")

    def _drain(self, result: NativeResult, source: NativeSource, drain_timeout: float,
               clock: Callable[[], float]) -> NativeResult:
        """Wait for the producer's drain (A.3) and add its publications and spans to ``result``; the
        window's time is the later of the target's EOS and the producer's finish (drain charged once).
        A producer fault raises with the partial timings kept."""
        t0, t_eos, fault = result.origin, result.time, None
        try:
            result.producer_forwards = self._recv(Done, drain_timeout,
                                                  f"draining window {result.window_id}").forwards
        except ProducerError as err:
            fault = str(err)
        finish = self.shared.finish_time.value - t0
        result.producer_finish = finish
        source.snapshot()  # mirror everything published, for the trajectory
        buf = source.buffer
        result.producer_tokens = tuple(buf.snapshot().tokens())
        result.producer_times = tuple(buf.publish_time_of(i) for i in range(len(buf)))
        result.producer_ops = self.shared.forwards_of(len(buf))
        spans = [("producer", "draft", max(0.0, a - t0), b - t0, -1) for a, b in self.shared.producer_spans()]
        result.stages = result.stages + tuple(spans)
        if not math.isnan(finish):
            result.time = max(t_eos, finish)
        result.cleanup = max(0.0, clock() - t0 - result.time)
        if fault is not None:
            result.fault = fault
            raise ProducerError(f"window {result.window_id}: {fault}; partial timings kept", partial=result)
        return result

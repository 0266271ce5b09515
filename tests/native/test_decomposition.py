"""D.3 on a native-like event log with a known producer curve: the publication-curve fit lets replay
reproduce the log's round times, and the decomposition's terms add up to the error and name the carrier."""

from __future__ import annotations

import polars as pl
import pytest
import yaml

from workbench.decoding import PublicationBuffer, ReferenceTarget, make_scheme, run_rounds
from workbench.native.agreement import replay_native_run
from workbench.native.decomposition import TERMS, decompose, dominant_term
from workbench.native.driver import NativeResult
from workbench.native.episodes import publication_rows, scheme_settings
from workbench.native.publication_curve import publication_curve
from workbench.native.samples import SAMPLE_SCHEMA
from workbench.replay.profile import DEVICE_DIR, parse_profile

EOS, VOCAB, N = 0, 1000, 90
REFERENCE = (*range(10, 10 + N), EOS)
# the producer misreads every 17th token: some chains are rejected, the target corrects them
PRODUCED = tuple(t + 500 if i % 17 == 16 else t for i, t in enumerate(REFERENCE))
START_MS, A_MS, B_MS = 4.0, 5.0, 0.16  # token p >= 1 is published after START + sum_{j<=p} (A + B j): slower later
SETTINGS = scheme_settings("as2d", 3)


def verify_ms(k: int) -> float:
    return 18.0 + 3.0 * (k - 1)


def true_times() -> list[float]:
    t, out = START_MS, [-0.001]  # the prompt-prefill token is published before the clock
    for p in range(1, len(PRODUCED)):
        t += (A_MS + B_MS * p) if p > 1 else (A_MS + (A_MS + B_MS))  # token 1 also pays operation 0
        out.append(t / 1000)
    return out


class _LogClock:
    """The machine that wrote the log: each call costs ``verify_ms`` (no loop work)."""

    def __init__(self) -> None:
        self.t = 0.0

    def decide(self) -> float:
        return self.t

    def start(self, call, t_decide: float) -> float:
        return t_decide

    def end(self, call, t_start: float) -> float:
        self.t = t_start + verify_ms(call.width) / 1000
        return self.t


def native_like_run(times: list[float] | None = None, ops: tuple[int, ...] = ()) -> NativeResult:
    times = times or true_times()
    buf = PublicationBuffer("producer", "p0", VOCAB)
    for tok, t in zip(PRODUCED, times, strict=True):
        buf.publish([tok], t)
    buf.finish(times[-1])
    scheme = make_scheme("as2d", max_output=200, eos_id=EOS, source=buf, **SETTINGS)
    target = ReferenceTarget(REFERENCE, EOS, VOCAB)
    scheme.start(target.prefill())
    rt = run_rounds(scheme, target, _LogClock())
    records = rt.timed(scheme.records)
    t_eos = rt.end[-1]
    return NativeResult("w", "as2d", tuple(scheme.output), records, (), max(t_eos, times[-1]), t_eos,
                        producer_tokens=PRODUCED, producer_times=tuple(times), producer_finish=times[-1],
                        producer_ops=ops)


def prefilled_times(start_ms: float = 1.0) -> list[float]:
    """The same curve from a producer whose prompt prefill (operation 0) ran before the clock (A.3):
    token p >= 1 is published after ``start_ms + sum_{1<=j<=p} (A + B j)``."""
    t, out = start_ms, [-0.001]
    for p in range(1, len(PRODUCED)):
        t += A_MS + B_MS * p
        out.append(t / 1000)
    return out


def profile_for(run: NativeResult, growth: bool, prefilled: bool = False):
    """The reference host profile with this log's verifier costs and the producer fitted from the log's
    publication times (as calibration fits them from its native As²d episodes)."""
    rows = [r for rep in range(3) for r in publication_rows("w", "as2d", rep, run.producer_times, run.producer_ops)]
    raw = pl.DataFrame(rows, schema=SAMPLE_SCHEMA)
    curve = publication_curve(raw)
    first, before = raw.filter(pl.col("kind") == "producer_first").select("ms", "tokens").row(0)
    prof = yaml.safe_load((DEVICE_DIR / "host.yaml").read_text())
    for key in ("loop_residual_ms", "queue_ms", "alignment_ms"):
        prof[key] = {"v": 0.0, "source": "the log has no loop work"}
    widths = {k: {"v": verify_ms(k), "source": "the log's calls"} for k in range(1, 17)}
    prof["verifier"] = {"idle_ms": widths, "concurrent": {"ms": widths, "missing": "median_ratio"}}
    name = next(n for n in prof["sources"] if n != prof["serial_drafter"])
    src = prof["sources"][name]
    if growth:
        op, startup = curve.at(curve.ref), curve.lead_ms(raw.filter(pl.col("kind") == "producer_first"), prefilled)
        src["growth"] = {"per_token": {"v": curve.b / op, "source": "fit"}, "ref_tokens": {"v": curve.ref,
                                                                                         "source": "fit"}}
    else:  # the constant-cost model: the median interval, every token alike
        op = float(raw.filter(pl.col("kind") == "producer_interval")["ms"].median())
        startup = max(0.0, first - before * op)  # as calibration clamps it
    src.update(forward_ms={"v": op, "source": "fit"}, startup_ms={"v": startup, "source": "fit"},
               concurrent_factor={"v": 1.0, "source": "measured times carry their contention"},
               batch_tokens={"v": 1, "source": "log"}, publication_ms={"v": 0.0, "source": "log"},
               prefilled={"v": prefilled, "source": "log"})
    return parse_profile(prof, file="log.yaml"), name


def _replay(run, growth, prefilled=False):
    profile, source = profile_for(run, growth, prefilled)
    window, res = replay_native_run(run, REFERENCE, profile, source=source, settings=SETTINGS, eos_id=EOS,
                                    vocab_size=VOCAB, max_output=200)
    return profile, source, window, res


def test_the_log_fit_recovers_the_known_curve():
    run = native_like_run()
    raw = pl.DataFrame(publication_rows("w", "as2d", 0, run.producer_times), schema=SAMPLE_SCHEMA)
    curve = publication_curve(raw)
    assert curve.b == pytest.approx(B_MS, rel=1e-6) and curve.at(5) == pytest.approx(A_MS + 5 * B_MS, rel=1e-6)


def test_replay_reproduces_the_round_times_of_a_log_whose_tokens_slow_down():
    run = native_like_run()
    assert run.output == REFERENCE and len(run.records) > 20
    _, _, _, res = _replay(run, growth=True)
    assert len(res.t_end) == len(run.records)
    for native, replayed in zip((r.t_end for r in run.records), res.t_end, strict=True):
        assert replayed == pytest.approx(native, rel=0.01)
    assert res.time == pytest.approx(run.time, rel=0.01)
    # the constant per-token cost the profile had before misses the same log by more than that
    _, _, _, flat = _replay(run, growth=False)
    worst = max(abs(a - b.t_end) / b.t_end for a, b in zip(flat.t_end, run.records, strict=False))
    assert worst > 0.01 or len(flat.t_end) != len(run.records)


def test_decomposition_terms_sum_to_the_error_and_name_the_publication_curve():
    run = native_like_run()
    profile, source, window, res = _replay(run, growth=False)
    d = decompose(window, run, profile, source, SETTINGS)
    assert d["signed_error_pct"] == pytest.approx(100 * (run.time / res.time - 1), abs=1e-9)
    assert sum(d[t] for t in TERMS) == pytest.approx(d["signed_error_pct"], abs=1e-9)
    # the log's calls cost what the profile says and it has no loop work: only the curve and its effect
    # on which calls were made can carry the error
    assert d["verify_concurrent"] == pytest.approx(0, abs=1e-9) and d["verify_idle"] == pytest.approx(0, abs=1e-9)
    assert dominant_term([d]) in ("publication", "readiness") and abs(d["publication"]) > 0.5
    assert d["publication_lag_ms"] != 0
    # a mispriced rate (no growth for a producer that slows down): the lag grows past the first token's
    assert abs(d["publication_lag_ms"]) > abs(d["first_publication_lag_ms"]) + 1.0
    profile, source, window, _ = _replay(run, growth=True)
    fitted = decompose(window, run, profile, source, SETTINGS)
    assert abs(fitted["signed_error_pct"]) < 1.0 and abs(fitted["publication"]) < 0.5


def test_a_producer_prefilled_before_the_clock_is_replayed_without_its_operation_0():
    """A.3: the native producer runs its prompt prefill before the clock. Fitted as prefilled, replay
    charges operation 0 nothing and reproduces the log's rounds; charging it on the clock (startup
    clamped at 0) publishes the first token late by operation 0 and every later one by that beyond the startup."""
    run = native_like_run(prefilled_times())
    assert run.output == REFERENCE
    profile, source, window, res = _replay(run, growth=True, prefilled=True)
    assert profile.source(source).prefilled and profile.source(source).startup_ms == pytest.approx(1.0, abs=1e-6)
    assert len(res.t_end) == len(run.records)
    for native, replayed in zip((r.t_end for r in run.records), res.t_end, strict=True):
        assert replayed == pytest.approx(native, rel=0.01)
    d = decompose(window, run, profile, source, SETTINGS)
    assert abs(d["first_publication_lag_ms"]) < 0.01 and abs(d["publication_lag_ms"]) < 0.5
    profile, source, window, _ = _replay(run, growth=True, prefilled=False)
    late = decompose(window, run, profile, source, SETTINGS)
    assert profile.source(source).startup_ms == 0.0  # published sooner than the operations priced: clamped
    assert late["first_publication_lag_ms"] == pytest.approx(A_MS, abs=0.05)  # operation 0 on the clock
    assert late["publication_lag_ms"] > 2.0


def test_every_phone_profile_states_its_producer_growth():
    from workbench.replay.profile import available_profiles, load_profile

    for name in (n for n in available_profiles() if n != "host"):
        prof = load_profile(name)
        for s in (s for s in prof.sources.values() if s.kind == "autoregressive"):
            assert s.growth == 0.0 and s.op_at(200) == s.op_ms
            assert "no growth" in prof.provenance[f"sources.{s.name}.growth.per_token"]
            assert not s.prefilled and "D.5.1" in prof.provenance[f"sources.{s.name}.prefilled"]


def test_growth_is_checked_like_every_profile_field():
    from workbench.replay.profile import ProfileError

    prof = yaml.safe_load((DEVICE_DIR / "host.yaml").read_text())
    src = prof["sources"]["whisper-tiny.en"]
    src["growth"] = {"per_token": {"v": -0.002, "source": "fit"}, "ref_tokens": {"v": 40, "source": "fit"}}
    cost = parse_profile(prof).source("whisper-tiny.en")
    assert cost.op_at(50) == pytest.approx(cost.op_ms * (1 - 0.02))  # a fit may slope down (noise)
    src["growth"] = {"per_token": {"v": 0.01}, "ref_tokens": {"v": 40, "source": "fit"}}
    with pytest.raises(ProfileError, match="growth.per_token"):
        parse_profile(prof)


def test_prefilled_is_checked_like_every_profile_field():
    from workbench.replay.profile import ProfileError

    prof = yaml.safe_load((DEVICE_DIR / "host.yaml").read_text())
    src = prof["sources"]["whisper-tiny.en"]
    assert not parse_profile(prof).source("whisper-tiny.en").prefilled  # absent: charged on the clock
    src["prefilled"] = {"v": True, "source": "the driver's clock"}
    assert parse_profile(prof).source("whisper-tiny.en").prefilled
    for bad in ({"v": True}, {"v": 1, "source": "x"}, True):
        src["prefilled"] = bad
        with pytest.raises(ProfileError, match="prefilled"):
            parse_profile(prof)


def test_the_chart_stacks_terms_that_sum_to_each_windows_error():
    from workbench.figures import d3_terms

    run = native_like_run()
    rows = []
    for growth in (False, True):
        profile, source, window, _ = _replay(run, growth)
        d = decompose(window, run, profile, source, SETTINGS)
        rows.append({**{f"d_{t}": d[t] for t in TERMS}, "window_id": f"w{growth}",
                     "signed_error_pct": d["signed_error_pct"]})
    err = pl.DataFrame(rows)
    assert d3_terms.has_terms(err)
    sums = d3_terms.terms_long(err).group_by("window_id").agg(pl.col("pct").sum()).sort("window_id")
    assert sums["pct"].to_list() == pytest.approx(err.sort("window_id")["signed_error_pct"].to_list(), abs=1e-9)
    spec = d3_terms.terms_chart(err, "test").to_dict()
    assert len(spec["layer"]) == 3


def held_back(times: list[float], sizes: tuple[int, ...] = (1, 3, 2)) -> list[float]:
    """The same curve published in words of ``sizes`` tokens (Tok_T): a word appears when its last token is made."""
    out, i, g = list(times[:1]), 1, 0
    while i < len(times):
        s = min(sizes[g % len(sizes)], len(times) - i)
        out += [times[i + s - 1]] * s
        i, g = i + s, g + 1
    return out


def test_replay_releases_a_held_back_word_when_its_last_token_is_made():
    """A log whose producer publishes whole words: calibration shares each word's interval among its
    tokens, replay releases the word after its last token's operation, and the round times match."""
    from workbench.native.decomposition import replay_held

    run = native_like_run(held_back(true_times()))
    assert run.output == REFERENCE and len(set(run.producer_times)) < len(run.producer_times)
    profile, source, window, res = _replay(run, growth=True)
    assert len(res.t_end) == len(run.records)
    for native, replayed in zip((r.t_end for r in run.records), res.t_end, strict=True):
        assert replayed == pytest.approx(native, rel=0.01)
    _, published = replay_held(window, SETTINGS, profile, source)
    assert published[1] < published[2] == published[3] == published[4] < published[5] == published[6]
    assert published[4] == pytest.approx(run.producer_times[4], rel=0.01)


def test_a_slope_within_the_noise_is_no_growth_and_one_stall_moves_nothing():
    import numpy as np

    rng = np.random.default_rng(0)
    t, times = 0.01, [-0.001]
    for p in range(1, 80):
        t += (8.0 + rng.normal(0, 1.0) + (400.0 if p == 30 else 0.0)) / 1000  # noise and one stalled token
        times.append(t)
    raw = pl.DataFrame(publication_rows("w", "as2d", 0, times), schema=SAMPLE_SCHEMA)
    curve = publication_curve(raw)
    assert curve.b == 0.0 and curve.a == pytest.approx(8.0, abs=0.5)


def counted_log(pattern: tuple[int, ...] = (1, 0, 2, 1, 0, 3, 1, 1)) -> tuple[list[float], tuple[int, ...]]:
    """A cross-vocabulary producer's log: forward j ends at START + sum_{i<=j} (A + B i) (forward 0 is the
    prompt prefill, its token published before the clock) and releases ``pattern``'s next count of tokens
    (Tok_T: none while a word is held back, several when it completes); each token carries its forwards."""
    times, counts = [-0.001], [1]
    t, j = START_MS + A_MS, 0
    while len(times) < len(PRODUCED):
        j += 1
        t += A_MS + B_MS * j
        n = min(pattern[(j - 1) % len(pattern)], len(PRODUCED) - len(times))
        times += [t / 1000] * n
        counts += [j + 1] * n
    return times, tuple(counts)


def test_replay_prices_a_counted_producer_per_forward_and_reproduces_its_rounds():
    """The log's producer takes 8 forwards for every 9 tokens, released in words. Calibrated and replayed
    per forward (the run's forward counts), replay reproduces every round time within 1%; the same log
    calibrated and replayed per token misses it."""
    times, counts = counted_log()
    run = native_like_run(times, counts)
    assert run.output == REFERENCE and counts[-1] < len(counts)
    profile, source, window, res = _replay(run, growth=True)
    assert sum(window.sources[source].op_tokens) == len(PRODUCED)
    # the decomposition times each forward on the native curve (a held-back word's forwards share its gap)
    d = decompose(window, run, profile, source, SETTINGS)
    assert sum(d[t] for t in TERMS) == pytest.approx(d["signed_error_pct"], abs=1e-9)
    assert abs(d["publication"]) < 0.5 and abs(d["signed_error_pct"]) < 1.0
    assert len(res.t_end) == len(run.records)
    for native, replayed in zip((r.t_end for r in run.records), res.t_end, strict=True):
        assert replayed == pytest.approx(native, rel=0.01)
    per_token = native_like_run(times)
    _, _, _, flat = _replay(per_token, growth=True)
    worst = max(abs(a - b.t_end) / b.t_end for a, b in zip(flat.t_end, per_token.records, strict=False))
    assert worst > 0.01 or len(flat.t_end) != len(per_token.records)


def test_the_concurrent_call_ratio_is_measured_over_priced_calls_beside_the_producer():
    """Priced by the log's own costs the calls beside the producer measure what they cost (ratio 1);
    the same calls 10% slower measure 1.1; a run with no call beside its producer has none."""
    from dataclasses import replace

    from workbench.native.decomposition import concurrent_call_ratio

    run = native_like_run()
    profile, _ = profile_for(run, growth=True)
    assert concurrent_call_ratio(profile, run) == pytest.approx(1.0, rel=1e-9)
    slow = replace(run, records=tuple(r.timed(r.t_decide, r.t_start, r.t_start + 1.1 * (r.t_end - r.t_start))
                                      for r in run.records))
    assert concurrent_call_ratio(profile, slow) == pytest.approx(1.1, rel=1e-9)
    assert concurrent_call_ratio(profile, replace(run, producer_tokens=(), producer_finish=float("nan"))) is None

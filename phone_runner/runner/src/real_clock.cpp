#include "real_clock.hpp"

#include <atomic>
#include <exception>
#include <thread>

namespace as2d {

using Clock = std::chrono::steady_clock;

void Pacer::until(Clock::time_point from, double seconds) const {
    if (!enabled() || seconds <= 0.0) return;
    std::this_thread::sleep_until(from + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds)));
}

namespace {

struct ProducerThread {  // the target-decoupled producer on its own thread
    const RealModels& m;
    const Pacer& pacer;
    PublicationBuffer& buffer;
    Clock::time_point t0;
    bool drain_full;
    std::atomic<bool> stop{false};
    std::atomic<bool> finished{false};
    const std::atomic<bool>& verifier_busy;
    double stopped_at = 0.0;
    std::exception_ptr error;

    double now() const { return std::chrono::duration<double>(Clock::now() - t0).count(); }

    void run() {
        try {
            loop();
        } catch (...) {
            error = std::current_exception();
        }
        stopped_at = now();
        finished = true;
    }

    void publish(Tokens& toks, Confs& confs, bool have_conf) {
        auto start = Clock::now();
        pacer.until(start, m.publication_s);
        buffer.publish(toks, now(), have_conf ? std::optional<Confs>(confs) : std::nullopt);
        toks.clear();
        confs.clear();
    }

    void loop() {
        m.producer->pin_current_thread();
        m.producer->producer_start();
        pacer.until(t0, m.startup_s);
        Tokens pending;
        Confs pending_conf;
        bool have_conf = true;
        ProducerOp op;
        bool exhausted = false;
        while (drain_full || !stop) {
            auto op_start = Clock::now();
            if (!m.producer->produce(op)) {
                exhausted = true;
                break;
            }
            // Coexistence (D.2.1): an operation that starts while the target runs is slowed.
            double cost = op.measured_s ? *op.measured_s : m.op_s * (verifier_busy ? m.concurrent_factor : 1.0);
            pacer.until(op_start, cost);
            pending.insert(pending.end(), op.tokens.begin(), op.tokens.end());
            if (op.confidences) pending_conf.insert(pending_conf.end(), op.confidences->begin(), op.confidences->end());
            else if (!op.tokens.empty()) have_conf = false;
            if (stop && !drain_full) break;  // drain "boundary": the operation in flight ends the producer
            if (!pending.empty() && (m.chunked || static_cast<int>(pending.size()) >= m.batch_tokens))
                publish(pending, pending_conf, have_conf);
        }
        // The final partial batch; a producer stopped mid-batch publishes nothing more.
        if (exhausted && !pending.empty()) publish(pending, pending_conf, have_conf);
        buffer.finish(now());
    }
};

}  // namespace

RunResult run_real(const std::string& name, const SchemeSettings& settings, const WindowSpec& w,
                   const RealModels& m, const Pacer& pacer, bool drain_full) {
    const bool decoupled = is_decoupled(name);
    const bool target_only = name == "target_only";
    // Real engines' windows carry no vocabulary size (0): the producer shares the target's vocabulary
    // (mnn_folder.cpp refuses any other), so there is no bound to check against.
    std::optional<int64_t> vocab;
    if (w.traj.vocab_size > 0) vocab = w.traj.vocab_size;
    PublicationBuffer buffer(settings.source, settings.source + "-producer", vocab);
    auto scheme = make_scheme(name, settings, w.max_output, w.traj.eos_id, m.drafter, decoupled ? &buffer : nullptr);
    scheme->start(m.target->prefill());

    std::atomic<bool> verifier_busy{false};
    const Clock::time_point t0 = Clock::now();  // the decode clock starts after prefill (A.3)
    auto now = [&] { return std::chrono::duration<double>(Clock::now() - t0).count(); };
    ProducerThread prod{m, pacer, buffer, t0, drain_full, {false}, {false}, verifier_busy, 0.0, nullptr};
    std::thread thread;
    if (decoupled) {
        if (!m.producer) throw std::invalid_argument("scheme '" + name + "' needs a producer model");
        thread = std::thread([&prod] { prod.run(); });
    }
    RunResult out;
    const std::string post = decoupled ? "queue" : "loop";
    double t = 0.0;
    try {
        while (!scheme->done()) {
            auto decide_tp = Clock::now();
            double t_decide = now();
            Call call = scheme->plan(t_decide);
            if (pacer.enabled()) pacer.until(decide_tp, decoupled ? pacer.price().align_s : pacer.price().draft(call.work));
            auto start_tp = Clock::now();
            double t_start = now();
            verifier_busy = true;
            Tokens greedy = m.target->verify(call.root, call.chain);
            if (pacer.enabled()) {
                const Pricing& p = pacer.price();
                bool concurrent = decoupled && !prod.finished;
                pacer.until(start_tp, target_only ? p.step_s : p.verify(call.width(), concurrent));
            }
            verifier_busy = false;
            double t_end = now();
            const RoundRecord& rec = scheme->commit(call, greedy);
            m.target->keep(rec.accepted);
            RoundRecord& r = scheme->records().back();
            r.t_decide = t_decide;
            r.t_start = t_start;
            r.t_end = t_end;
            if (pacer.enabled() && !target_only)
                pacer.until(Clock::now(), decoupled ? pacer.price().queue_s : pacer.price().loop_s);
            t = now();
            auto stages = one_round_stages(r, post, t);
            out.stages.insert(out.stages.end(), stages.begin(), stages.end());
        }
    } catch (...) {
        prod.stop = true;
        if (thread.joinable()) thread.join();
        throw;
    }
    out.records = scheme->records();
    out.output = scheme->output();
    out.t_eos = out.records.empty() ? 0.0 : out.records.back().t_end;
    out.time = t;
    if (decoupled) {
        prod.stop = true;  // target EOS: stop at the next operation boundary
        thread.join();
        if (prod.error) std::rethrow_exception(prod.error);
        double p_stop = prod.stopped_at;
        double startup = std::min(m.startup_s, p_stop);
        if (startup > 0) out.stages.push_back({"producer", "startup", 0.0, startup, -1});
        if (p_stop > startup) out.stages.push_back({"producer", "produce", startup, p_stop, -1});
        out.time = std::max(t, p_stop);
        out.cleanup = std::max(0.0, p_stop - out.t_eos);
        out.publications = buffer.batches();
    }
    return out;
}

}  // namespace as2d

#include "virtual_clock.hpp"

#include <algorithm>

#include "producer.hpp"

namespace as2d {

namespace {

void stamp(RoundRecord& r, double decide, double start, double end) {
    r.t_decide = decide;
    r.t_start = start;
    r.t_end = end;
}

// Target-only, SD, ASP, w/o TD: drafting, verification and loop work strictly in sequence.
RunResult run_serial(const std::string& name, const SchemeSettings& settings, const WindowSpec& w,
                     const Pricing& price, Model& model) {
    auto scheme = make_scheme(name, settings, w.max_output, w.traj.eos_id, &model, nullptr);
    scheme->start(model.prefill());
    bool target_only = name == "target_only";
    double loop = target_only ? 0.0 : price.loop_s;
    double t = 0.0;
    while (!scheme->done()) {
        Call call = scheme->plan(t);
        double t_start = t + price.draft(call.work);
        double cost = target_only ? price.step_s : price.verify(call.width(), false);
        const RoundRecord& rec = scheme->commit(call, model.verify(call.root, call.chain));
        model.keep(rec.accepted);
        stamp(scheme->records().back(), t, t_start, t_start + cost);
        t = t_start + cost + loop;
    }
    RunResult out;
    out.records = scheme->records();
    out.output = scheme->output();
    out.time = t;
    out.t_eos = out.records.empty() ? 0.0 : out.records.back().t_end;
    out.stages = round_stages(out.records, "loop", loop);
    return out;
}

// As²d and its w/o-BC ablation: the verifier loop against a concurrently running producer.
RunResult run_decoupled(const std::string& name, const SchemeSettings& settings, const WindowSpec& w,
                        const Pricing& price, Model& model, bool drain_full) {
    const SourceTrack* track = w.traj.source(settings.source);
    if (!track)
        throw std::invalid_argument("window '" + w.window_id + "' has no source '" + settings.source + "'");
    ProducerPlan plan = ProducerPlan::build(*track, price.source(settings.source), w.traj.vocab_size);
    Producer producer(plan);
    auto scheme = make_scheme(name, settings, w.max_output, w.traj.eos_id, nullptr, &producer.buffer());
    scheme->start(model.prefill());
    double t = 0.0;
    const double align = price.align_s, queue = price.queue_s;
    // With a static plan the producer ignores the verifier: it is busy on [0, total_work).
    const bool is_static = plan.static_buffer != nullptr;
    const double static_end = plan.total_work;
    while (!scheme->done()) {
        if (!is_static) producer.advance(t, false);  // publish what is out by the decision time
        Call call = scheme->plan(t);
        double t_start = t + align;
        double idle = price.verify(call.width(), false);
        double t_end;
        if (is_static) {
            if (t_start >= static_end) {
                t_end = t_start + idle;
            } else {
                double conc = price.verify(call.width(), true);
                t_end = t_start + conc;
                if (t_end > static_end)  // the producer finishes mid-call: the rest at the idle rate
                    t_end = static_end + (1.0 - (static_end - t_start) / conc) * idle;
            }
        } else {
            producer.advance(t_start, false);
            if (producer.busy()) {
                double conc = price.verify(call.width(), true);
                double p_end = producer.finish_time_if(true);
                t_end = t_start + conc;
                if (t_end > p_end) {
                    t_end = p_end + (1.0 - (p_end - t_start) / conc) * idle;
                    producer.advance(p_end, true);
                }
                producer.advance(t_end, true);
            } else {
                t_end = t_start + idle;
            }
        }
        const RoundRecord& rec = scheme->commit(call, model.verify(call.root, call.chain));
        model.keep(rec.accepted);
        stamp(scheme->records().back(), t, t_start, t_end);
        t = t_end + queue;
    }
    // Producer completion after target EOS is on the clock, charged once (A.3, D.5.1).
    RunResult out;
    out.records = scheme->records();
    out.output = scheme->output();
    out.t_eos = out.records.empty() ? 0.0 : out.records.back().t_end;
    double p_stop = producer.drain(out.t_eos, drain_full);
    out.stages = round_stages(out.records, "queue", queue);
    double startup = plan.startup_s;
    if (startup > 0) out.stages.push_back({"producer", "startup", 0.0, std::min(startup, p_stop), -1});
    if (p_stop > startup) out.stages.push_back({"producer", "produce", startup, p_stop, -1});
    out.time = std::max(t, p_stop);
    out.cleanup = std::max(0.0, p_stop - out.t_eos);
    for (const Batch& b : producer.buffer().batches())  // a static plan holds batches never reached
        if (b.publish_time <= p_stop) out.publications.push_back(b);
    return out;
}

}  // namespace

RunResult run_virtual(const std::string& scheme, const SchemeSettings& settings, const WindowSpec& window,
                      const Pricing& price, Model& model, bool drain_full) {
    if (is_decoupled(scheme)) return run_decoupled(scheme, settings, window, price, model, drain_full);
    return run_serial(scheme, settings, window, price, model);
}

}  // namespace as2d

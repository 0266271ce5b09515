#include "calibrate.hpp"

#include <atomic>
#include <chrono>
#include <thread>

#include "real_clock.hpp"

namespace as2d {

namespace {

std::vector<int> int_list(const Json& j, const std::string& what) {
    std::vector<int> out;
    for (const Json& x : j.as_array(what)) out.push_back(static_cast<int>(x.as_int(what + "[]")));
    return out;
}

Json measure(const char* op, std::optional<int> width, std::optional<int> offset, bool concurrent,
             const std::optional<std::string>& source, int rep, double ms) {
    Json o = LineWriter::start("measure");
    o.set("op", op);
    o.set("width", width ? Json(*width) : Json());
    o.set("offset", offset ? Json(*offset) : Json());
    o.set("concurrent", concurrent);
    o.set("source", source ? Json(*source) : Json());
    o.set("repetition", rep);
    o.set("ms", ms);
    return o;
}

// Reference engine: a priced cost, or (real clock) the same cost paced and timed.
double priced_ms(const Request& r, double seconds) {
    if (r.clock != "real") return seconds * 1000.0;
    auto t0 = std::chrono::steady_clock::now();
    Pacer(&*r.pricing).until(t0, seconds);
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

void calibrate_reference(const Request& r, const CalibrationPlan& plan, LineWriter& out) {
    const Pricing& p = *r.pricing;
    for (bool conc : plan.with_producer)
        for (int offset : plan.offsets)
            for (int k : plan.widths) {
                double s = p.verify(k, conc);  // throws WidthNotPriced: never a zero cost
                for (int rep = 0; rep < plan.reps; ++rep)
                    out.write(measure("verify", k, offset, conc, std::nullopt, rep, priced_ms(r, s)));
            }
    for (int rep = 0; rep < plan.reps; ++rep) {
        out.write(measure("target_step", 1, std::nullopt, false, std::nullopt, rep, priced_ms(r, p.step_s)));
        if (plan.draft_forward)
            out.write(measure("draft_forward", 1, std::nullopt, false, p.serial_drafter, rep,
                              priced_ms(r, p.source(p.serial_drafter).op_s)));
        if (plan.asp && p.has_asp) {
            out.write(measure("asp_paired", std::nullopt, std::nullopt, false, std::nullopt, rep, priced_ms(r, p.paired_s)));
            out.write(measure("asp_prob_row", std::nullopt, std::nullopt, false, std::nullopt, rep,
                              priced_ms(r, p.prob_row_s)));
            for (const auto& kv : p.refresh_s)
                out.write(measure("asp_refresh", kv.first, std::nullopt, false, std::nullopt, rep, priced_ms(r, kv.second)));
        }
        for (const std::string& name : p.source_order) {
            const SourcePrice& s = p.sources.at(name);
            out.write(measure(s.kind == "chunk" ? "chunk_service" : "producer_forward", std::nullopt, std::nullopt,
                              false, name, rep, priced_ms(r, s.op_s)));
        }
    }
}

// Real models: the producer forwards back to back on its own thread while the target is timed.
void calibrate_models(const CalibrationPlan& plan, LineWriter& out, Model& target, Model* drafter) {
    for (bool conc : plan.with_producer) {
        if (conc && !drafter) continue;  // no producer model: only the idle sweep
        std::atomic<bool> stop{false};
        std::thread producer;
        if (conc)
            producer = std::thread([&] {
                drafter->pin_current_thread();
                ProducerOp op;
                while (!stop) {
                    drafter->producer_start();
                    while (!stop && drafter->produce(op)) {}
                }
            });
        for (int offset : plan.offsets)
            for (int k : plan.widths)
                for (int rep = -plan.warmups; rep < plan.reps; ++rep) {
                    double ms = target.timed_forward(offset, k) * 1000.0;
                    if (rep >= 0) out.write(measure("verify", k, offset, conc, std::nullopt, rep, ms));
                }
        stop = true;
        if (producer.joinable()) producer.join();
    }
    for (int rep = -plan.warmups; rep < plan.reps; ++rep) {
        double step = target.timed_forward(0, 1) * 1000.0;
        double fwd = drafter && plan.draft_forward ? drafter->timed_forward(0, 1) * 1000.0 : 0.0;
        double paired = drafter && plan.asp ? drafter->timed_forward(0, 2) * 1000.0 : 0.0;  // old/new branch rows
        if (rep < 0) continue;
        out.write(measure("target_step", 1, std::nullopt, false, std::nullopt, rep, step));
        if (drafter && plan.draft_forward)
            out.write(measure("draft_forward", 1, std::nullopt, false, std::nullopt, rep, fwd));
        if (drafter && plan.asp) {
            out.write(measure("asp_paired", std::nullopt, std::nullopt, false, std::nullopt, rep, paired));
            for (int k : plan.widths)  // a batched KV refresh of k recycled tokens is one k-wide drafter forward
                out.write(measure("asp_refresh", k, std::nullopt, false, std::nullopt, rep,
                                  drafter->timed_forward(0, k) * 1000.0));
        }
    }
}

}  // namespace

CalibrationPlan parse_plan(const Json* j) {
    CalibrationPlan p;
    for (int k = 1; k <= 16; ++k) p.widths.push_back(k);
    if (!j || j->is_null()) throw ProtocolFailure("bad_request", "request field 'calibrate': calibrate mode needs a plan");
    try {
        if (const Json* x = j->get("widths")) p.widths = int_list(*x, "calibrate.widths");
        if (const Json* x = j->get("offsets")) p.offsets = int_list(*x, "calibrate.offsets");
        if (const Json* x = j->get("reps")) p.reps = static_cast<int>(x->as_int("calibrate.reps"));
        if (const Json* x = j->get("warmups")) p.warmups = static_cast<int>(x->as_int("calibrate.warmups"));
        if (const Json* x = j->get("with_producer")) {
            p.with_producer.clear();
            for (const Json& b : x->as_array("calibrate.with_producer")) p.with_producer.push_back(b.as_bool("calibrate.with_producer[]"));
        }
        if (const Json* x = j->get("draft_forward")) p.draft_forward = x->as_bool("calibrate.draft_forward");
        if (const Json* x = j->get("asp")) p.asp = x->as_bool("calibrate.asp");
    } catch (const JsonError& e) {
        throw ProtocolFailure("bad_request", std::string("request field ") + e.what());
    }
    for (int k : p.widths)
        if (k < 1) throw ProtocolFailure("bad_request", "request field 'calibrate.widths': widths are >= 1");
    if (p.reps < 1 || p.warmups < 0) throw ProtocolFailure("bad_request", "request field 'calibrate': reps >= 1, warmups >= 0");
    return p;
}

void calibrate(const Request& r, LineWriter& out, Model* target, Model* drafter) {
    CalibrationPlan plan = parse_plan(r.raw.get("calibrate"));
    if (target) calibrate_models(plan, out, *target, drafter);
    else calibrate_reference(r, plan, out);
}

}  // namespace as2d

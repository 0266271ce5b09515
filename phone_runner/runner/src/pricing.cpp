#include "pricing.hpp"

#include <cmath>

namespace as2d {

namespace {
// A price: a finite number >= 0 (seconds, or a factor). Negative or NaN costs are a bad request.
double cost(const Json& j, const std::string& what) {
    double v = j.as_double(what);
    if (!std::isfinite(v) || v < 0) throw JsonError(what + ": " + j.dump() + "; expected a number >= 0");
    return v;
}

std::map<int, double> widths(const Json& j, const std::string& what) {
    std::map<int, double> out;
    for (const auto& kv : j.as_object(what)) {
        char* end = nullptr;
        long k = std::strtol(kv.first.c_str(), &end, 10);
        if (end == kv.first.c_str() || *end != '\0' || k < 1)
            throw JsonError(what + ": width key '" + kv.first + "' is not an integer >= 1");
        out[static_cast<int>(k)] = cost(kv.second, what + "." + kv.first);
    }
    return out;
}

const Json& need(const Json& j, const std::string& key, const std::string& where) {
    const Json* v = j.get(key);
    if (!v) throw JsonError(where + "." + key + ": missing");
    return *v;
}
}  // namespace

Pricing Pricing::from_json(const Json& j) {
    const std::string w = "request field 'pricing'";
    j.as_object(w);
    Pricing p;
    p.name = need(j, "name", w).as_string(w + ".name");
    p.step_s = cost(need(j, "step_s", w), w + ".step_s");
    p.loop_s = cost(need(j, "loop_s", w), w + ".loop_s");
    p.queue_s = cost(need(j, "queue_s", w), w + ".queue_s");
    p.align_s = cost(need(j, "align_s", w), w + ".align_s");
    p.idle_s = widths(need(j, "verify_idle_s", w), w + ".verify_idle_s");
    p.conc_s = widths(need(j, "verify_concurrent_s", w), w + ".verify_concurrent_s");
    if (!p.idle_s.count(1)) throw JsonError(w + ".verify_idle_s: needs width '1'");
    p.serial_drafter = need(j, "serial_drafter", w).as_string(w + ".serial_drafter");
    for (const auto& kv : need(j, "sources", w).as_object(w + ".sources")) {
        const std::string sw = w + ".sources." + kv.first;
        const Json& s = kv.second;
        SourcePrice sp;
        sp.kind = need(s, "kind", sw).as_string(sw + ".kind");
        if (sp.kind != "autoregressive" && sp.kind != "chunk")
            throw JsonError(sw + ".kind: expected autoregressive or chunk, got '" + sp.kind + "'");
        sp.op_s = cost(need(s, "op_s", sw), sw + ".op_s");
        sp.publication_s = cost(need(s, "publication_s", sw), sw + ".publication_s");
        sp.startup_s = cost(need(s, "startup_s", sw), sw + ".startup_s");
        sp.concurrent_factor = cost(need(s, "concurrent_factor", sw), sw + ".concurrent_factor");
        const Json& bt = need(s, "batch_tokens", sw);
        if (!bt.is_null()) sp.batch_tokens = static_cast<int>(bt.as_int(sw + ".batch_tokens"));
        if (sp.kind == "autoregressive" && (!sp.batch_tokens || *sp.batch_tokens < 1))
            throw JsonError(sw + ".batch_tokens: an autoregressive source publishes batches of >= 1 token");
        p.sources[kv.first] = sp;
        p.source_order.push_back(kv.first);
    }
    const Json* asp = j.get("asp");
    if (asp && !asp->is_null()) {
        p.has_asp = true;
        p.paired_s = cost(need(*asp, "paired_branch_s", w + ".asp"), w + ".asp.paired_branch_s");
        p.prob_row_s = cost(need(*asp, "prob_row_s", w + ".asp"), w + ".asp.prob_row_s");
        p.refresh_s = widths(need(*asp, "kv_refresh_s", w + ".asp"), w + ".asp.kv_refresh_s");
    }
    return p;
}

double Pricing::verify(int k, bool concurrent) const {
    const auto& table = concurrent ? conc_s : idle_s;
    auto it = table.find(k);
    if (it == table.end())
        throw WidthNotPriced("profile '" + name + "' has no " + (concurrent ? "concurrent " : "") +
                             "verifier cost at physical width K=" + std::to_string(k) +
                             "; missing widths are never zero (D.2.1)");
    return it->second;
}

const SourcePrice& Pricing::source(const std::string& n) const {
    auto it = sources.find(n);
    if (it == sources.end()) throw JsonError("pricing: profile '" + name + "' has no source '" + n + "'");
    return it->second;
}

double Pricing::draft(const DraftWork& w) const {
    if (w.forwards == 0 && w.paired_forwards == 0 && w.prob_rows == 0 && w.refresh_width == 0) return 0.0;
    double s = w.forwards * source(serial_drafter).op_s;
    if (w.paired_forwards || w.prob_rows || w.refresh_width) {
        if (!has_asp) throw WidthNotPriced("profile '" + name + "' has no ASP costs for paired-branch drafting");
        s += w.paired_forwards * paired_s + w.prob_rows * prob_row_s;
        if (w.refresh_width) {
            auto it = refresh_s.find(w.refresh_width);
            if (it == refresh_s.end())
                throw WidthNotPriced("profile '" + name + "' has no ASP KV refresh cost at width " +
                                     std::to_string(w.refresh_width));
            s += it->second;
        }
    }
    return s;
}

}  // namespace as2d

#include "online.hpp"

namespace as2d {

double expected_tokens(int n, double p) {
    double total = 1.0, term = 1.0;
    for (int i = 0; i < n; ++i) {
        term *= p;
        total += term;
    }
    return total;
}

int choose_chain_length(int ready, const std::map<int, double>& costs, double p) {
    if (!(p >= 0.0 && p <= 1.0)) throw std::runtime_error("acceptance estimate must be in [0, 1]");
    auto one = costs.find(1);
    if (one == costs.end() || one->second <= 0) throw std::invalid_argument("costs must price a plain step (width 1)");
    int best_n = 0;
    double best_rate = 1.0 / one->second;
    for (int n = 1; n <= std::max(0, ready); ++n) {
        auto c = costs.find(n + 1);
        if (c == costs.end() || c->second <= 0) continue;  // unpriced widths are never chosen
        double rate = expected_tokens(n, p) / c->second;
        if (rate > best_rate * (1.0 + 1e-12)) {  // ties go to the shorter chain
            best_n = n;
            best_rate = rate;
        }
    }
    return best_n;
}

void AcceptanceEstimate::observe(int proposed, int accepted) {
    if (proposed <= 0) return;  // a plain step says nothing about the candidates
    successes = decay * successes + accepted;
    failures = decay * failures + (accepted < proposed ? 1.0 : 0.0);
}

As2dOnline::As2dOnline(const PublicationBuffer& source, int budget, int max_output, std::optional<int> eos_id,
                       std::map<int, double> costs, double decay, int span, std::optional<double> threshold,
                       std::optional<int> lookback, std::string anchor_order)
    : As2d("as2d_online", source, budget, max_output, eos_id, span, threshold, lookback, false, std::move(anchor_order)),
      costs_(std::move(costs)),
      decay_(decay) {
    if (costs_.empty() || !costs_.count(1))
        throw std::invalid_argument("as2d_online: costs must give each priced width's verify time, width 1 included");
    if (!(decay > 0.0 && decay <= 1.0)) throw std::invalid_argument("as2d_online: decay must be in (0, 1]");
    estimate_.decay = decay;
}

Call As2dOnline::plan(double now) {
    Call call = As2d::plan(now);
    int n = choose_chain_length(static_cast<int>(call.chain.size()), costs_, estimate_.p());
    if (n < static_cast<int>(call.chain.size())) {
        call.chain.resize(n);
        call.provenance.resize(n);
        if (n == 0) call.k1_reason = "cost";
    }
    return call;
}

std::optional<int> As2dOnline::after(const Call& call, const Verdict& verdict) {
    estimate_.observe(static_cast<int>(call.chain.size()), verdict.accepted);
    return As2d::after(call, verdict);
}

}  // namespace as2d

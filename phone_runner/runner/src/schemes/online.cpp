#include "online.hpp"

namespace as2d {

double expected_tokens(int n, const std::vector<double>& q) {
    double total = 1.0, term = 1.0;
    for (int i = 1; i <= n; ++i) {
        term *= q.empty() ? 0.0 : q[std::min<size_t>(i, q.size()) - 1];
        total += term;
    }
    return total;
}

int choose_chain_length(int ready, const std::map<int, double>& costs, const std::vector<double>& q) {
    for (double x : q)
        if (!(x >= 0.0 && x <= 1.0)) throw std::runtime_error("acceptance estimates must be in [0, 1]");
    auto one = costs.find(1);
    if (one == costs.end() || one->second <= 0) throw std::invalid_argument("costs must price a plain step (width 1)");
    int best_n = 0;
    double best_rate = 1.0 / one->second;
    for (int n = 1; n <= std::max(0, ready); ++n) {
        auto c = costs.find(n + 1);
        if (c == costs.end() || c->second <= 0) continue;  // unpriced widths are never chosen
        double rate = expected_tokens(n, q) / c->second;
        if (rate > best_rate * (1.0 + 1e-12)) {  // ties go to the shorter chain
            best_n = n;
            best_rate = rate;
        }
    }
    return best_n;
}

std::vector<double> AcceptanceEstimate::slots(int n) const {
    // Deep slots are tried only after long accepted runs, so they have few trials; pooling keeps
    // one unlucky rejection there from cutting every later chain short.
    double s_all = 0.0, t_all = 0.0;
    for (double s : successes) s_all += s;
    for (double t : trials) t_all += t;
    double pooled = (s_all + prior) / (t_all + prior_trials);
    std::vector<double> out;
    for (int i = 0; i < n; ++i) {
        if (i < static_cast<int>(trials.size()))
            out.push_back((successes[i] + prior_trials * pooled) / (trials[i] + prior_trials));
        else
            out.push_back(out.empty() ? pooled : out.back());
    }
    return out;
}

void AcceptanceEstimate::observe(int proposed, int accepted) {
    if (proposed <= 0) return;  // a plain step says nothing about the candidates
    // A chain of n with a accepted tried slots 1..min(a + 1, n) and accepted slots 1..a.
    size_t tried = static_cast<size_t>(std::min(accepted + 1, proposed));
    while (trials.size() < tried) {
        trials.push_back(0.0);
        successes.push_back(0.0);
    }
    for (size_t i = 0; i < trials.size(); ++i) {
        trials[i] *= decay;
        successes[i] *= decay;
        if (i < tried) {
            trials[i] += 1.0;
            successes[i] += static_cast<int>(i) < accepted ? 1.0 : 0.0;
        }
    }
}

As2dOnline::As2dOnline(const PublicationBuffer& source, int budget, int max_output, std::optional<Token> eos_id,
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
    int ready = static_cast<int>(call.chain.size());
    int n = choose_chain_length(ready, costs_, estimate_.slots(ready));
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

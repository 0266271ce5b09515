// As²d with an online budget (as2d_online; beyond the paper, F.1/F.3): port of
// workbench/decoding/schemes/online.py and decoding/width.py. As²d's buffer, cursor and alignment
// are unchanged; each round only cuts the chain to the ready candidates worth their verify time:
//
//     n* = argmax_{0 <= n <= ready} E[n] / cost[n + 1]
//
//     E[n] = 1 + q1 + q1*q2 + ... + q1*...*qn  (q_i: conditional acceptance of chain slot i)
//
// from the device's per-width costs and a running per-slot acceptance estimate (exponential
// forgetting, shrunk toward the pooled rate; updated only from rounds already verified: no
// future information). n* = 0 is a plain step with k1 reason "cost".
#pragma once

#include <map>
#include <vector>

#include "as2d.hpp"

namespace as2d {

double expected_tokens(int n, const std::vector<double>& q);  // slots past q repeat its last
int choose_chain_length(int ready, const std::map<int, double>& costs, const std::vector<double>& q);

struct AcceptanceEstimate {
    double decay = 0.9;
    double prior = 2.0, prior_trials = 3.0;  // every slot starts from a few pseudo-rounds
    std::vector<double> successes, trials;   // per chain slot, decayed
    std::vector<double> slots(int n) const;  // q_1..q_n, each shrunk toward the pooled rate
    void observe(int proposed, int accepted);
};

class As2dOnline : public As2d {
public:
    As2dOnline(const PublicationBuffer& source, int budget, int max_output, std::optional<Token> eos_id,
               std::map<int, double> costs, double decay, int span, std::optional<double> threshold,
               std::optional<int> lookback, std::string anchor_order);
    Call plan(double now) override;

protected:
    void reset_state() override {
        As2d::reset_state();
        estimate_ = AcceptanceEstimate{};
        estimate_.decay = decay_;
    }
    std::optional<int> after(const Call& call, const Verdict& verdict) override;

private:
    std::map<int, double> costs_;
    double decay_;
    AcceptanceEstimate estimate_;
};

}  // namespace as2d

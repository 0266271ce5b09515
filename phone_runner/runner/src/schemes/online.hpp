// As²d with an online budget (as2d_online; beyond the paper, F.1/F.3): port of
// workbench/decoding/schemes/online.py and decoding/width.py. As²d's buffer, cursor and alignment
// are unchanged; each round only cuts the chain to the ready candidates worth their verify time:
//
//     E[n] = 1 + p + ... + p^n,   n* = argmax_{0 <= n <= ready} E[n] / cost[n + 1]
//
// from the device's per-width costs and a running acceptance estimate ``p`` (exponential
// forgetting, updated only from rounds already verified: no future information). n* = 0 is a
// plain step with k1 reason "cost".
#pragma once

#include <map>

#include "as2d.hpp"

namespace as2d {

double expected_tokens(int n, double p);
int choose_chain_length(int ready, const std::map<int, double>& costs, double p);

struct AcceptanceEstimate {
    double successes = 2.0, failures = 1.0, decay = 0.9;  // a prior of a few pseudo-rounds
    double p() const { return successes / (successes + failures); }
    void observe(int proposed, int accepted);
};

class As2dOnline : public As2d {
public:
    As2dOnline(const PublicationBuffer& source, int budget, int max_output, std::optional<int> eos_id,
               std::map<int, double> costs, double decay, int span, std::optional<double> threshold,
               std::optional<int> lookback, std::string anchor_order);
    Call plan(double now) override;

protected:
    void reset_state() override {
        As2d::reset_state();
        estimate_ = AcceptanceEstimate{2.0, 1.0, decay_};
    }
    std::optional<int> after(const Call& call, const Verdict& verdict) override;

private:
    std::map<int, double> costs_;
    double decay_;
    AcceptanceEstimate estimate_;
};

}  // namespace as2d

// Standard speculative decoding with a fixed physical width K (paper D.1.3).
// Serial: the prefix-conditioned drafter proposes K - 1 tokens after the known root, then the
// target verifies them. Only the output limit may shorten the chain.
#pragma once

#include "scheme.hpp"

namespace as2d {

class StandardSD : public Scheme {
public:
    StandardSD(Model& drafter, int width, int max_output, std::optional<Token> eos_id)
        : Scheme("sd", max_output, eos_id), drafter_(drafter), width_(check_budget("width", width, 2, 25)) {}

    Call plan(double) override {
        Call c;
        c.root = root();
        int n = chain_limit(width_ - 1);
        if (n == 0) {
            c.k1_reason = "output_cap";
            return c;
        }
        Proposal p = drafter_.propose(output_, n, std::nullopt);
        c.chain.assign(p.tokens.begin(), p.tokens.begin() + std::min<size_t>(n, p.tokens.size()));
        c.provenance.assign(c.chain.size(), FRESH);
        if (c.chain.empty()) c.k1_reason = "drafter";
        c.ready = static_cast<int>(c.chain.size());
        c.work.forwards = p.forwards;
        c.work.catchup = p.catchup;
        c.confidences = p.confidences;
        return c;
    }

private:
    Model& drafter_;
    int width_;
};

}  // namespace as2d

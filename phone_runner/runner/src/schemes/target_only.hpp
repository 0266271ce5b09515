// Target-only: the greedy reference decoder, one plain step (K = 1) per token.
#pragma once

#include "scheme.hpp"

namespace as2d {

class TargetOnly : public Scheme {
public:
    TargetOnly(int max_output, std::optional<Token> eos_id) : Scheme("target_only", max_output, eos_id) {}
    Call plan(double) override {
        Call c;
        c.root = root();
        c.k1_reason = "target_only";
        return c;
    }
};

}  // namespace as2d

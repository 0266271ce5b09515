// SpecASR adaptive single-sequence prediction (ASP) with draft recycling (paper D.1.3); port of
// workbench/decoding/schemes/asp.py, whose doc states the rule. Also the w/o-TD ablation (serial
// ASP with As²d's budget as cap).
#pragma once

#include "scheme.hpp"

namespace as2d {

constexpr double ASP_THRESHOLD = 0.4;
constexpr int ASP_CAP = 24;

// Length of the chain up to and including the first low-confidence token. A missing confidence
// (a source without them) is not imputed: it never stops the chain.
int confident_prefix(const std::vector<std::optional<double>>& confs, double threshold);
int confident_prefix(const Confs& confs, double threshold);

class SpecASR : public Scheme {
public:
    SpecASR(std::string name, Model& drafter, int max_output, std::optional<Token> eos_id, double threshold, int cap,
            bool recycle = true);
    Call plan(double now) override;

protected:
    void reset_state() override { old_.reset(); }
    std::optional<int> after(const Call& call, const Verdict& verdict) override;

private:
    std::optional<Call> recycled(int n, const Proposal& head);
    Model& drafter_;
    double threshold_;
    int cap_;
    bool recycle_;
    struct Rejected {  // the rejected draft suffix, from the mismatch slot on
        Tokens tokens;
        Confs confs;
    };
    std::optional<Rejected> old_;
};

}  // namespace as2d

// As²d: verify whatever the target-decoupled producer has published (paper Section 4); port of
// workbench/decoding/schemes/as2d.py. Each round it anchors the known root in the buffer (the
// read cursor), takes up to ``budget`` published candidates after the anchor, and hands them to
// the target; it never waits for the producer. With a threshold the chain also stops after the
// first low-confidence candidate (the w/o-BC ablation).
#pragma once

#include "../alignment.hpp"
#include "scheme.hpp"

namespace as2d {

class As2d : public Scheme {
public:
    As2d(std::string name, const PublicationBuffer& source, int budget, int max_output, std::optional<Token> eos_id,
         int span, std::optional<double> threshold, std::optional<int> lookback, bool confidence_required,
         std::string anchor_order = ANCHOR_NEXT_TOKEN);
    Call plan(double now) override;

protected:
    void reset_state() override {
        cursor_ = ReadCursor{};
        correction_.reset();
        processing_ = false;
    }
    std::optional<int> after(const Call& call, const Verdict& verdict) override;

private:
    std::string why_unaligned(const Snapshot& snap) const;
    const PublicationBuffer& source_;
    int budget_;
    int span_;
    std::optional<double> threshold_;
    // As²d gates on confidence "where available" (D.4.3): a candidate without one never stops the
    // chain. The w/o-BC ablation restores ASP's rule, which needs them.
    bool confidence_required_;
    int lookback_;  // how many plain steps an unmatched position stays eligible (target insertions)
    std::string anchor_order_;
    ReadCursor cursor_;
    // Paper order: after a rejection the correction is processed in a plain step, and the
    // correction token stays on record for the next round's fallback search.
    std::optional<std::pair<int, Token>> correction_;  // (mismatch slot, correction token)
    bool processing_ = false;                         // this round's root is a correction to process
};

}  // namespace as2d

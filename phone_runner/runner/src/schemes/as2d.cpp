#include "as2d.hpp"

#include "asp.hpp"

namespace as2d {

As2d::As2d(std::string name, const PublicationBuffer& source, int budget, int max_output, std::optional<Token> eos_id,
           int span, std::optional<double> threshold, std::optional<int> lookback, bool confidence_required,
           std::string anchor_order)
    : Scheme(std::move(name), max_output, eos_id),
      source_(source),
      budget_(check_budget("budget", budget)),
      span_(check_budget("span", span, 1, 10000)),
      threshold_(check_threshold("threshold", threshold)),
      confidence_required_(confidence_required),
      lookback_(lookback ? check_budget("lookback", *lookback, 1, 10000) : span_),
      anchor_order_(std::move(anchor_order)) {
    if (anchor_order_ != ANCHOR_NEXT_TOKEN && anchor_order_ != ANCHOR_CORRECTION_FIRST)
        throw std::invalid_argument("anchor_order must be one of next_token, correction_first, got '" + anchor_order_ + "'");
}

Call As2d::plan(double now) {
    Call c;
    c.root = root();
    c.cursor_before = cursor_.cursor;
    int n = chain_limit(budget_);
    if (n == 0) {
        c.k1_reason = "output_cap";
        return c;
    }
    if (processing_) {
        c.k1_reason = "correction";
        return c;
    }
    Snapshot snap = source_.snapshot(now);
    std::optional<int> anchor = cursor_.find_anchor(snap, c.root, span_);
    if (!anchor && correction_) {
        // Fallback (C.3): the correction token, then its continuation after the slot the next
        // target token (the root) substituted.
        auto [m, x] = *correction_;
        auto j = snap.find(x, m, m + span_);
        if (j && *j + 1 < snap.size()) anchor = *j + 1;
    }
    if (!anchor) {
        c.k1_reason = why_unaligned(snap);
        return c;
    }
    int start = *anchor + 1;
    c.chain = snap.tokens(start, start + n);
    if (!c.chain.empty() && threshold_) {
        std::vector<std::optional<double>> confs;
        for (int i = start; i < start + static_cast<int>(c.chain.size()); ++i) {
            auto p = snap.confidence(i);
            if (!p && confidence_required_)
                throw std::runtime_error("threshold: source '" + snap.source_id() +
                                         "' publishes no confidences; confidence stopping needs them (set threshold to null)");
            confs.push_back(p);
        }
        c.chain.resize(confident_prefix(confs, *threshold_));
    }
    if (c.chain.empty()) c.k1_reason = snap.complete() ? "exhausted" : "not_ready";
    for (int i = 0; i < static_cast<int>(c.chain.size()); ++i) c.provenance.push_back(start + i);
    c.ready = std::max(0, snap.size() - start);
    c.anchor = anchor;
    return c;
}

std::string As2d::why_unaligned(const Snapshot& snap) const {
    if (snap.complete() && cursor_.cursor >= snap.size()) return "exhausted";
    if (cursor_.expected >= snap.size()) return "not_ready";
    return "no_match";
}

std::optional<int> As2d::after(const Call& call, const Verdict& verdict) {
    cursor_ = cursor_.after_call(call.anchor, verdict.accepted, lookback_);
    bool rejected = verdict.outcome == "correction" && verdict.accepted < static_cast<int>(call.chain.size());
    processing_ = rejected && anchor_order_ == ANCHOR_NEXT_TOKEN;
    if (processing_) correction_ = std::make_pair(cursor_.cursor, *verdict.next_root);
    else if (call.k1_reason != "correction") correction_.reset();  // the fallback serves one round only
    return cursor_.cursor;
}

}  // namespace as2d

#include "asp.hpp"

namespace as2d {

namespace {
constexpr int MATCH_OFFSETS[3] = {1, 0, 2};  // same slot first, then the two adjacent ones

const Confs& confidences_of(const Proposal& p, const std::string& who) {
    if (!p.confidences) throw std::runtime_error(who + ": the drafter gives no confidences; ASP needs top-1 probabilities");
    return *p.confidences;
}
}  // namespace

int confident_prefix(const std::vector<std::optional<double>>& confs, double threshold) {
    for (size_t i = 0; i < confs.size(); ++i)
        if (confs[i] && *confs[i] < threshold) return static_cast<int>(i) + 1;
    return static_cast<int>(confs.size());
}

int confident_prefix(const Confs& confs, double threshold) {
    for (size_t i = 0; i < confs.size(); ++i)
        if (confs[i] < threshold) return static_cast<int>(i) + 1;
    return static_cast<int>(confs.size());
}

SpecASR::SpecASR(std::string name, Model& drafter, int max_output, std::optional<Token> eos_id, double threshold,
                 int cap, bool recycle)
    : Scheme(std::move(name), max_output, eos_id),
      drafter_(drafter),
      threshold_(*check_threshold("threshold", threshold)),
      cap_(check_budget("cap", cap)),
      recycle_(recycle) {}

Call SpecASR::plan(double) {
    Call c;
    c.root = root();
    int n = chain_limit(cap_);
    if (n == 0) {
        c.k1_reason = "output_cap";
        return c;
    }
    int first = 0, catchup = 0;
    if (old_ && recycle_) {
        Proposal head = drafter_.propose(output_, 1, std::nullopt);
        if (auto call = recycled(n, head)) return *call;
        // The paired-branch forward already produced the first fresh token and caught up the
        // drafter's KV; a drafter reuses its last logits for it.
        first = 1;
        catchup = head.catchup;
    }
    Proposal p = drafter_.propose(output_, n, threshold_);
    const Confs& confs = confidences_of(p, name_);
    c.chain.assign(p.tokens.begin(), p.tokens.begin() + std::min<size_t>(n, p.tokens.size()));
    c.provenance.assign(c.chain.size(), FRESH);
    if (c.chain.empty()) c.k1_reason = "drafter";
    c.ready = static_cast<int>(c.chain.size());
    c.work.forwards = std::max(0, p.forwards - first);
    c.work.catchup = catchup + p.catchup;
    c.work.paired_forwards = first;
    c.work.prob_rows = static_cast<int>(c.chain.size()) + first;
    c.confidences = Confs(confs.begin(), confs.begin() + std::min(confs.size(), c.chain.size()));
    return c;
}

std::optional<Call> SpecASR::recycled(int n, const Proposal& head) {
    if (head.tokens.empty()) return std::nullopt;
    Token t = head.tokens[0];
    double t_conf = confidences_of(head, name_)[0];
    const Tokens& old = old_->tokens;
    int off = -1;
    for (int o : MATCH_OFFSETS)
        if (o < static_cast<int>(old.size()) && old[o] == t) { off = o; break; }
    if (off < 0) return std::nullopt;
    if (off + 1 >= static_cast<int>(old.size())) return std::nullopt;  // matched the last token: nothing to reuse, draft fresh
    Tokens chain{t};
    Confs chain_confs{t_conf};
    chain.insert(chain.end(), old.begin() + off + 1, old.end());
    chain_confs.insert(chain_confs.end(), old_->confs.begin() + off + 1, old_->confs.end());
    int keep = std::min(n, confident_prefix(chain_confs, threshold_));
    chain.resize(keep);
    chain_confs.resize(keep);
    Call c;
    c.root = root();
    c.chain = chain;
    c.provenance.assign(keep, RECYCLED);
    c.provenance[0] = FRESH;
    c.ready = keep;
    c.work.catchup = head.catchup;
    c.work.paired_forwards = 1;
    c.work.prob_rows = 2;
    c.work.refresh_width = keep - 1;
    c.confidences = chain_confs;
    return c;
}

std::optional<int> SpecASR::after(const Call& call, const Verdict& verdict) {
    int a = verdict.accepted;
    if (verdict.outcome == "correction" && a < static_cast<int>(call.chain.size())) {
        const Confs& confs = *call.confidences;
        old_ = Rejected{Tokens(call.chain.begin() + a, call.chain.end()),
                        Confs(confs.begin() + std::min<size_t>(a, confs.size()), confs.end())};
    } else {
        old_.reset();
    }
    return std::nullopt;
}

}  // namespace as2d

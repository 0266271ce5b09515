#include "scheme.hpp"

#include <cstdio>

#include "as2d.hpp"
#include "asp.hpp"
#include "online.hpp"
#include "sd.hpp"
#include "target_only.hpp"

namespace as2d {

int check_budget(const std::string& name, int value, int low, int high) {
    if (value < low || value > high)
        throw std::invalid_argument(name + " must be in [" + std::to_string(low) + ", " + std::to_string(high) +
                                    "], got " + std::to_string(value));
    return value;
}

std::optional<double> check_threshold(const std::string& name, std::optional<double> value) {
    if (value && !(*value >= 0.0 && *value <= 1.0)) {
        char buf[64];
        std::snprintf(buf, sizeof buf, "%g", *value);
        throw std::invalid_argument(name + " must be a probability in [0, 1] or null, got " + buf);
    }
    return value;
}

Scheme::Scheme(std::string name, int max_output, std::optional<Token> eos_id)
    : name_(std::move(name)), max_output_(max_output), eos_id_(eos_id) {
    if (max_output < 1) throw std::invalid_argument("max_output must be a positive integer, got " + std::to_string(max_output));
}

void Scheme::start(Token root) {
    output_.assign(1, root);
    records_.clear();
    done_ = (eos_id_ && root == *eos_id_) || max_output_ == 1;
    reset_state();
}

int Scheme::chain_limit(int budget) const {
    int room = max_output_ - static_cast<int>(output_.size()) - 1;
    return budget < room ? budget : std::max(0, room);
}

const RoundRecord& Scheme::commit(const Call& call, const Tokens& greedy) {
    if (done_) throw std::runtime_error(name_ + ": commit after the output ended");
    if (call.root != output_.back())
        throw std::runtime_error(name_ + ": call root " + std::to_string(call.root) + " is not the known root " +
                                 std::to_string(output_.back()));
    Verdict v = verify_chain(call.chain, greedy, eos_id_, max_output_ - static_cast<int>(output_.size()));
    output_.insert(output_.end(), v.committed.begin(), v.committed.end());
    done_ = !v.next_root.has_value();
    std::optional<int> cursor_after = after(call, v);
    RoundRecord r;
    r.round = static_cast<int>(records_.size());
    r.scheme = name_;
    r.width = call.width();
    r.root = call.root;
    r.chain = call.chain;
    r.provenance = call.provenance;
    r.k1_reason = call.k1_reason;
    r.ready = call.ready;
    r.accepted = v.accepted;
    r.committed = v.committed;
    r.outcome = v.outcome;
    r.next_root = v.next_root;
    r.cursor_before = call.cursor_before;
    r.cursor_after = cursor_after;
    r.work = call.work;
    records_.push_back(std::move(r));
    return records_.back();
}

bool is_decoupled(const std::string& scheme) {
    return scheme == "as2d" || scheme == "as2d_wo_bc" || scheme == "as2d_online";
}

bool is_known_scheme(const std::string& s) {
    return s == "target_only" || s == "sd" || s == "asp" || s == "as2d" || s == "as2d_wo_td" || s == "as2d_wo_bc" ||
           s == "as2d_online";
}

std::unique_ptr<Scheme> make_scheme(const std::string& name, const SchemeSettings& s, int max_output,
                                    std::optional<Token> eos_id, Model* drafter, const PublicationBuffer* source) {
    auto need_drafter = [&]() -> Model& {
        if (!drafter) throw std::invalid_argument("scheme '" + name + "' needs a drafter");
        return *drafter;
    };
    auto need_source = [&]() -> const PublicationBuffer& {
        if (!source) throw std::invalid_argument("scheme '" + name + "' needs a candidate source (buffer)");
        return *source;
    };
    if (name == "target_only") return std::make_unique<TargetOnly>(max_output, eos_id);
    if (name == "sd") return std::make_unique<StandardSD>(need_drafter(), s.width, max_output, eos_id);
    if ((name == "asp" || name == "as2d_wo_td") && !s.threshold)
        throw std::invalid_argument("threshold: scheme '" + name + "' stops drafting on confidence; it needs a number");
    if (name == "asp") return std::make_unique<SpecASR>("asp", need_drafter(), max_output, eos_id, *s.threshold, s.cap);
    // w/o TD: serial ASP with As²d's budget as its cap.
    if (name == "as2d_wo_td")
        return std::make_unique<SpecASR>("as2d_wo_td", need_drafter(), max_output, eos_id, *s.threshold, s.budget);
    if (name == "as2d")
        return std::make_unique<As2d>("as2d", need_source(), s.budget, max_output, eos_id, s.span, s.threshold, s.lookback,
                                      false, s.anchor_order);
    // w/o BC: decoupled candidates with ASP's threshold and cap instead of the budget.
    if (name == "as2d_wo_bc")
        return std::make_unique<As2d>("as2d_wo_bc", need_source(), s.cap, max_output, eos_id, s.span, s.threshold,
                                      s.lookback, true, s.anchor_order);
    // Beyond the paper: the budget is an upper bound; each round verifies what is worth its time.
    if (name == "as2d_online")
        return std::make_unique<As2dOnline>(need_source(), s.budget, max_output, eos_id, s.costs, s.decay, s.span,
                                            s.threshold, s.lookback, s.anchor_order);
    throw std::invalid_argument("scheme: unknown name '" + name +
                                "'; choose one of target_only, sd, asp, as2d, as2d_wo_td, as2d_wo_bc, as2d_online");
}

}  // namespace as2d

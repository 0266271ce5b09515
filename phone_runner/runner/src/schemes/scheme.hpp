// What every scheme shares: the committed prefix, the output limit and the commit step
// (port of workbench/decoding/schemes/base.py). A scheme is a clock-agnostic state machine; a
// clock (virtual or real) owns time and calls:
//
//     scheme.start(target.prefill());
//     while (!scheme.done()) { call = scheme.plan(now); rec = scheme.commit(call, target.verify(...)); target.keep(rec.accepted); }
//
// Subclasses implement ``plan`` and may override ``after`` to move their own cursor or recycling
// state; the verification rule itself lives in one place (verify_chain).
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "../buffer.hpp"
#include "../model.hpp"
#include "../records.hpp"
#include "../verification.hpp"

namespace as2d {

constexpr int MAX_BUDGET = 24;  // proposal budgets 1-24 (D.4.3), ASP cap 24 (D.1.3)

int check_budget(const std::string& name, int value, int low = 1, int high = MAX_BUDGET);
std::optional<double> check_threshold(const std::string& name, std::optional<double> value);

class Scheme {
public:
    Scheme(std::string name, int max_output, std::optional<Token> eos_id);
    virtual ~Scheme() = default;

    void start(Token root);  // begin a window with the first known root (from prefill)
    bool done() const { return done_; }
    Token root() const { return output_.back(); }
    const Tokens& output() const { return output_; }
    const std::string& name() const { return name_; }
    const std::vector<RoundRecord>& records() const { return records_; }
    std::vector<RoundRecord>& records() { return records_; }

    // Budget b, cut so the correction or bonus still fits in the output limit.
    int chain_limit(int budget) const;
    virtual Call plan(double now) = 0;  // decide the next target call from what is ready at ``now``
    const RoundRecord& commit(const Call& call, const Tokens& greedy);

protected:
    virtual void reset_state() {}
    // Update scheme state after a commit; return the read cursor if the scheme has one.
    virtual std::optional<int> after(const Call& call, const Verdict& verdict) { (void)call; (void)verdict; return std::nullopt; }

    std::string name_;
    int max_output_;
    std::optional<Token> eos_id_;
    Tokens output_;
    std::vector<RoundRecord> records_;
    bool done_ = true;
};

struct SchemeSettings {  // a request's ``scheme.settings``, defaults as make_scheme
    int budget = 7;
    int width = 8;
    std::optional<double> threshold = 0.4;  // null: no confidence gating (As²d)
    int cap = 24;
    int span = 8;  // alignment search span (C.3), DEFAULT_ALIGN_SPAN
    std::optional<int> lookback;
    std::string anchor_order = "next_token";  // ANCHOR_NEXT_TOKEN (alignment.hpp)
    double decay = 0.9;                       // as2d_online: forgetting of the acceptance estimate
    std::map<int, double> costs;              // as2d_online: seconds per round by width (the clock's)
    std::string source;
};

// Build a scheme by its paper name: target_only, sd, asp, as2d, as2d_wo_td, as2d_wo_bc.
std::unique_ptr<Scheme> make_scheme(const std::string& name, const SchemeSettings& s, int max_output,
                                    std::optional<Token> eos_id, Model* drafter, const PublicationBuffer* source);

bool is_decoupled(const std::string& scheme);  // reads the publication buffer (as2d, as2d_wo_bc)
bool is_known_scheme(const std::string& scheme);

}  // namespace as2d

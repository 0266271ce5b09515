// Round records: the one event vocabulary shared with the Python core (workbench/decoding/records.py).
//
// A round is one target call. The scheme's plan for it is a ``Call``; what the verification rule
// commits is a ``RoundRecord``. Drivers add the three times and never change token fields.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace as2d {

using Token = int64_t;  // token ids are int64 on the wire (PROTOCOL.md); never narrowed
using Tokens = std::vector<Token>;
using Confs = std::vector<double>;

constexpr int FRESH = -1;     // provenance of a token a prefix-conditioned drafter proposed this round
constexpr int RECYCLED = -2;  // provenance of a token reused from a rejected draft (ASP recycling)

// Why a round is a plain step (K = 1); empty for K > 1. Same strings as the Python K1Reason.
using K1Reason = std::optional<std::string>;

struct DraftWork {  // serial drafting a round needed before its target call (priced by the clock)
    int forwards = 0;         // single-sequence drafter forwards
    int catchup = 0;          // committed tokens the drafter's KV lacked
    int paired_forwards = 0;  // ASP masked two-query (old/new branch) forwards
    int prob_rows = 0;        // rows whose softmax confidence was computed
    int refresh_width = 0;    // batched KV refresh of a recycled suffix
};

struct Call {  // a scheme's decision for the next target call: known root plus a chain
    Token root = 0;
    Tokens chain;
    std::vector<int> provenance;  // buffer position per chain token, or FRESH / RECYCLED
    K1Reason k1_reason;
    int ready = 0;  // usable candidates after the root before the budget cut
    DraftWork work;
    std::optional<int> cursor_before;
    std::optional<int> anchor;  // buffer position matched to the root, if any
    std::optional<Confs> confidences;

    int width() const { return 1 + static_cast<int>(chain.size()); }
};

struct RoundRecord {  // what one target call did; ``committed`` lists the tokens it made known
    int round = 0;
    std::string scheme;
    int width = 1;
    Token root = 0;
    Tokens chain;
    std::vector<int> provenance;
    K1Reason k1_reason;
    int ready = 0;
    int accepted = 0;
    Tokens committed;
    std::string outcome;  // correction | bonus | eos | cap
    std::optional<Token> next_root;
    std::optional<int> cursor_before;
    std::optional<int> cursor_after;
    DraftWork work;
    double t_decide = 0.0;
    double t_start = 0.0;
    double t_end = 0.0;
};

}  // namespace as2d

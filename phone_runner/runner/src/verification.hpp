// Greedy chain verification (paper Appendix C.2); port of workbench/decoding/verification.py.
//
// One target forward over [root, *chain] yields greedy[i], the target's own token after
// root, chain[:i]. Candidates are accepted while they equal those tokens. The token at the first
// mismatch (correction) or after the last candidate (bonus) is the next known root, carried into
// the next call: no unconditional extra K = 1 forward.
#pragma once

#include <optional>
#include <stdexcept>
#include <string>

#include "records.hpp"

namespace as2d {

struct ExactnessError : std::runtime_error {
    using std::runtime_error::runtime_error;
};

struct Verdict {
    int accepted = 0;            // chain tokens committed
    Tokens committed;            // accepted chain tokens, then the correction/bonus unless output ended
    std::optional<Token> next_root;  // none when the output ended (EOS or cap)
    std::string outcome;         // correction | bonus | eos | cap
};

// ``room``: how many more tokens the output may hold after the root (output cap).
Verdict verify_chain(const Tokens& chain, const Tokens& greedy, std::optional<Token> eos_id, int room);

}  // namespace as2d

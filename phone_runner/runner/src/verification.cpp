#include "verification.hpp"

#include <algorithm>

namespace as2d {

Verdict verify_chain(const Tokens& chain, const Tokens& greedy, std::optional<Token> eos_id, int room) {
    if (greedy.size() != chain.size() + 1)
        throw std::runtime_error("greedy: target returned " + std::to_string(greedy.size()) +
                                 " tokens for physical width " + std::to_string(chain.size() + 1));
    if (static_cast<int>(chain.size()) >= std::max(room, 1))
        throw std::runtime_error("chain: " + std::to_string(chain.size()) +
                                 " candidates exceed the remaining output length " + std::to_string(room));
    int accepted = 0;
    for (size_t i = 0; i < chain.size(); ++i) {
        if (chain[i] != greedy[i]) break;
        ++accepted;
        if (eos_id && chain[i] == *eos_id)  // an accepted EOS ends the output; later entries are moot
            return {accepted, Tokens(chain.begin(), chain.begin() + accepted), std::nullopt, "eos"};
    }
    Token nxt = greedy[accepted];
    Tokens committed(chain.begin(), chain.begin() + accepted);
    committed.push_back(nxt);
    if (eos_id && nxt == *eos_id) return {accepted, committed, std::nullopt, "eos"};
    if (static_cast<int>(committed.size()) >= room) return {accepted, committed, std::nullopt, "cap"};
    bool bonus = accepted == static_cast<int>(chain.size());
    return {accepted, committed, nxt, bonus ? "bonus" : "correction"};
}

}  // namespace as2d

// The drafter's proposal rule shared by the MNN adapters (Whisper and LLM): reuse the KV entries the
// drafter holds in common with the committed prefix, catch up the rest in one forward, then draft
// greedily until ``n`` tokens or, for ASP, a top-1 probability below ``stop_below``. What differs per
// adapter is how it truncates its KV and runs a forward; both are passed in.
#pragma once

#include <cstddef>
#include <optional>
#include <vector>

#include "../model.hpp"

namespace as2d {

struct GreedyRow { Token token; double prob; };  // greedy token and its softmax probability

// ``kv``: tokens held after the prompt; ``first``: the greedy continuation of ``kv`` (updated).
// ``truncate(keep)`` keeps the first ``keep`` KV entries, prompt included; ``forward(ids)`` returns a row per id.
template <class Truncate, class Forward>
Proposal greedy_propose(const Tokens& prefix, int n, std::optional<double> stop_below, size_t prompt_len,
                        Tokens& kv, GreedyRow& first, Truncate truncate, Forward forward) {
    Proposal p;
    size_t common = 0;
    while (common < kv.size() && common < prefix.size() && kv[common] == prefix[common]) ++common;
    p.catchup = static_cast<int>(prefix.size() - common);
    GreedyRow next = first;
    if (p.catchup > 0 || kv.size() > common) {  // else: reuse the last logits (ASP's paired branch)
        truncate(prompt_len + common);
        next = forward(Tokens(prefix.begin() + static_cast<std::ptrdiff_t>(common), prefix.end())).back();
        p.forwards = 1;
    }
    kv = prefix;
    p.confidences.emplace();
    while (static_cast<int>(p.tokens.size()) < n) {
        p.tokens.push_back(next.token);
        p.confidences->push_back(next.prob);
        if ((stop_below && next.prob < *stop_below) || static_cast<int>(p.tokens.size()) == n) break;
        next = forward(Tokens{next.token}).back();
        kv.push_back(p.tokens.back());
        ++p.forwards;
    }
    first = next;  // the greedy continuation of kv (prefix + tokens[:-1])
    return p;
}

}  // namespace as2d

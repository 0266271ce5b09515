// Candidate alignment: the read cursor over published candidates (paper Appendix C.3).
// Port of workbench/decoding/alignment.py; the doc there explains the cases (insertion,
// deletion, substitution, look-back). Only the cursor moves, and only forward; published tokens
// never change.
#pragma once

#include <algorithm>
#include <optional>
#include <string>

#include "buffer.hpp"

namespace as2d {

constexpr int DEFAULT_ALIGN_SPAN = 8;
// The anchor order after a rejection: the paper's (process the correction in a plain step, then
// anchor the next target token; C.3, Fig. 4c), or ours (search the correction token first).
constexpr const char* ANCHOR_NEXT_TOKEN = "next_token";
constexpr const char* ANCHOR_CORRECTION_FIRST = "correction_first";

struct ReadCursor {
    int cursor = 0;    // the first eligible position; positions below it are retired for good
    int expected = 0;  // where the current known root is expected (>= cursor)

    // Eligible published position holding ``root``, nearest the expected one, or none. Order: the
    // slot just before the expected one (a target insertion keeps the mismatch slot), the
    // expected slot, forward up to ``span`` slots, then back to the read cursor.
    std::optional<int> find_anchor(const Snapshot& snap, Token root, int span) const {
        if (auto j = snap.find(root, std::max(cursor, expected - 1), expected + span)) return j;
        return snap.rfind(root, cursor, expected - 1);
    }

    // The cursor after a target call that used ``accepted`` chain candidates.
    ReadCursor after_call(std::optional<int> anchor, int accepted, int lookback) const {
        if (anchor) {
            int nxt = *anchor + 1 + accepted;  // bonus slot on full acceptance, else the mismatch slot
            return {nxt, nxt};
        }
        int nxt = expected + 1;  // the target advanced alone; unmatched slots retire after ``lookback``
        return {std::max(cursor, nxt - lookback), nxt};
    }
};

}  // namespace as2d

// Candidate alignment: the read cursor over published candidates (paper Appendix C.3).
// Port of workbench/decoding/alignment.py; the doc there explains the cases (insertion,
// deletion, substitution, look-back). Only the cursor moves; published tokens never change.
#pragma once

#include <algorithm>
#include <optional>

#include "buffer.hpp"

namespace as2d {

constexpr int DEFAULT_ALIGN_SPAN = 8;

struct ReadCursor {
    int cursor = 0;  // the buffer position where the current known root is expected
    int floor = 0;   // positions below it are retired and never proposed again

    // Eligible published position holding ``root``, nearest the expected one, or none. Order: the
    // slot just before the expected one (a target insertion keeps the mismatch slot), the
    // expected slot, forward up to ``span`` slots, then back to the floor.
    std::optional<int> find_anchor(const Snapshot& snap, int root, int span) const {
        int n = snap.size();
        for (int j = std::max(floor, cursor - 1); j < std::min(n, cursor + span); ++j)
            if (snap.at(j) == root) return j;
        for (int j = std::min(cursor - 2, n - 1); j >= floor; --j)
            if (snap.at(j) == root) return j;
        return std::nullopt;
    }

    // The cursor after a target call that used ``accepted`` chain candidates.
    ReadCursor after_call(std::optional<int> anchor, int accepted, int lookback) const {
        if (anchor) {
            int nxt = *anchor + 1 + accepted;  // bonus slot on full acceptance, else the mismatch slot
            return {nxt, nxt};
        }
        int nxt = cursor + 1;  // the target advanced alone
        return {nxt, std::max(floor, nxt - lookback)};
    }
};

}  // namespace as2d

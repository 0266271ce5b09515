#include "run.hpp"

namespace as2d {

std::vector<Stage> one_round_stages(const RoundRecord& r, const std::string& after, double t_after_end) {
    std::vector<Stage> out;
    if (r.t_start > r.t_decide) {
        const DraftWork& w = r.work;
        bool drafted = w.forwards || w.paired_forwards || w.prob_rows || w.refresh_width;
        if (drafted) out.push_back({"producer", "draft", r.t_decide, r.t_start, r.round});
        else out.push_back({"verifier", "align", r.t_decide, r.t_start, r.round});
    }
    out.push_back({"verifier", r.width > 1 ? "verify" : "step", r.t_start, r.t_end, r.round});
    if (t_after_end > r.t_end) out.push_back({"other", after, r.t_end, t_after_end, r.round});
    return out;
}

std::vector<Stage> round_stages(const std::vector<RoundRecord>& records, const std::string& after, double after_s) {
    std::vector<Stage> out;
    for (const RoundRecord& r : records) {
        auto s = one_round_stages(r, after, after_s != 0.0 ? r.t_end + after_s : r.t_end);
        out.insert(out.end(), s.begin(), s.end());
    }
    return out;
}

}  // namespace as2d

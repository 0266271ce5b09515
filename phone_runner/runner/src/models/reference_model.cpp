#include "reference_model.hpp"

#include <stdexcept>

#include "../verification.hpp"

namespace as2d {

const SourceTrack* Trajectory::source(const std::string& name) const {
    for (const auto& s : sources)
        if (s.source == name) return &s;
    return nullptr;
}

ReferenceModel::ReferenceModel(const Trajectory& traj, std::string producer_source) : traj_(traj) {
    if (traj.reference.empty())
        throw std::runtime_error("reference: empty greedy reference; a window needs at least one target token");
    if (!producer_source.empty()) track_ = traj.source(producer_source);
}

Token ReferenceModel::ref(int i) const {
    if (i < static_cast<int>(traj_.reference.size())) return traj_.reference[i];
    if (!traj_.eos_id)
        throw ExactnessError("target asked for position " + std::to_string(i) + " beyond the capped reference");
    return *traj_.eos_id;
}

Token ReferenceModel::prefill() {
    processed_ = 0;
    pending_ = -1;
    draft_kv_.clear();
    return traj_.reference[0];
}

Tokens ReferenceModel::verify(Token root, const Tokens& chain) {
    if (pending_ >= 0) throw ExactnessError("verify called twice without keep(): rejected entries were not removed");
    Token expected = ref(processed_);
    if (root != expected)
        throw ExactnessError("root " + std::to_string(root) + " at output position " + std::to_string(processed_) +
                             " != reference " + std::to_string(expected));
    Tokens greedy;
    bool on_path = true;
    for (size_t i = 0; i <= chain.size(); ++i) {
        greedy.push_back(on_path ? ref(processed_ + 1 + static_cast<int>(i)) : -1);
        if (i < chain.size() && chain[i] != greedy.back()) on_path = false;
    }
    pending_ = static_cast<int>(chain.size()) + 1;
    return greedy;
}

void ReferenceModel::keep(int accepted) {
    if (pending_ < 0 || accepted < 0 || accepted >= pending_)
        throw ExactnessError("keep(" + std::to_string(accepted) + ") does not match the last verify width " +
                             std::to_string(pending_));
    processed_ += 1 + accepted;
    pending_ = -1;
}

Proposal ReferenceModel::propose(const Tokens& prefix, int n, std::optional<double> stop_below) {
    int c = static_cast<int>(prefix.size());
    const Tokens& reference = traj_.reference;
    if (c > static_cast<int>(reference.size()) || !std::equal(prefix.begin(), prefix.end(), reference.begin()))
        throw std::runtime_error("prefix: length-" + std::to_string(c) + " prefix is not a committed reference prefix");
    if (!traj_.has_drafts || c < 1 || c > static_cast<int>(traj_.draft_tokens.size()))
        throw std::runtime_error("drafts: no saved draft after committed prefix length " + std::to_string(c));
    const Tokens& row = traj_.draft_tokens[c - 1];
    int len = std::min(n, static_cast<int>(row.size()));
    Proposal p;
    p.tokens.assign(row.begin(), row.begin() + len);
    if (traj_.draft_confidences) {
        const Confs& crow = (*traj_.draft_confidences)[c - 1];
        p.confidences = Confs(crow.begin(), crow.begin() + len);
    }
    if (stop_below) {
        if (!p.confidences) throw std::runtime_error("stop_below: saved drafts carry no confidences");
        for (size_t i = 0; i < p.confidences->size(); ++i) {
            if ((*p.confidences)[i] < *stop_below) {
                p.tokens.resize(i + 1);
                p.confidences->resize(i + 1);
                break;
            }
        }
    }
    int common = 0;
    while (common < static_cast<int>(draft_kv_.size()) && common < c && draft_kv_[common] == prefix[common]) ++common;
    p.catchup = c - common;
    // One extra forward catches up when more than the known root is missing (D.1.3).
    p.forwards = static_cast<int>(p.tokens.size()) + (p.catchup > 1 ? 1 : 0);
    if (!p.tokens.empty()) {
        draft_kv_ = prefix;
        draft_kv_.insert(draft_kv_.end(), p.tokens.begin(), p.tokens.end() - 1);
    }
    return p;
}

bool ReferenceModel::produce(ProducerOp& op) {
    if (track_ == nullptr || next_op_ >= track_->op_tokens.size()) return false;
    size_t n = static_cast<size_t>(track_->op_tokens[next_op_]);
    op.tokens.assign(track_->tokens.begin() + produced_, track_->tokens.begin() + produced_ + n);
    op.confidences.reset();
    if (track_->confidences)
        op.confidences = Confs(track_->confidences->begin() + produced_, track_->confidences->begin() + produced_ + n);
    op.measured_s.reset();
    if (track_->op_ms) op.measured_s = (*track_->op_ms)[next_op_] / 1000.0;
    produced_ += n;
    ++next_op_;
    return true;
}

}  // namespace as2d

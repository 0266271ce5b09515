// A model that answers from a window's saved trajectory: the replay premise and test oracle.
//
// * target: the greedy reference y_1..y_N (ReferenceTarget in verification.py). It checks the
//   target contract as it goes; entries after the first mismatch are -1 (undefined for a real
//   model), so a scheme that reads them breaks exactness loudly;
// * drafter: drafts[c] continues the committed prefix reference[:c] (TrajectoryDrafter, with its
//   model of the drafter's KV so catch-up is counted as D.1.3 says);
// * producer: one candidate source's token stream, grouped into its operations.
//
// It only answers; time is the clock's business (virtual: priced, real: paced by sleeping).
#pragma once

#include <string>
#include <vector>

#include "../model.hpp"

namespace as2d {

struct SourceTrack {
    std::string source;
    Tokens tokens;
    std::optional<Confs> confidences;
    std::vector<int> op_tokens;                // tokens emitted by each producer operation
    std::optional<std::vector<double>> op_ms;  // measured operation times, or priced by the profile
    bool eligible = true;
};

struct Trajectory {  // the JSON form of workbench.replay.trajectory.Window, reference part
    Tokens reference;
    std::optional<Token> eos_id;
    int64_t vocab_size = 0;
    std::vector<Tokens> draft_tokens;  // row c-1 continues reference[:c]
    std::optional<std::vector<Confs>> draft_confidences;
    bool has_drafts = false;
    std::vector<SourceTrack> sources;
    const SourceTrack* source(const std::string& name) const;
};

class ReferenceModel : public Model {
public:
    ReferenceModel(const Trajectory& traj, std::string producer_source);
    std::string describe() const override { return "reference"; }

    Token prefill() override;
    Tokens verify(Token root, const Tokens& chain) override;
    void keep(int accepted) override;

    Proposal propose(const Tokens& prefix, int n, std::optional<double> stop_below) override;

    void producer_start() override { next_op_ = 0; produced_ = 0; }
    bool produce(ProducerOp& op) override;

private:
    Token ref(int i) const;
    const Trajectory& traj_;
    const SourceTrack* track_ = nullptr;
    int processed_ = 0;   // reference tokens held in the (virtual) KV state
    int pending_ = -1;    // entries processed by the last verify, -1: none
    Tokens draft_kv_;     // the drafter's own KV contents
    size_t next_op_ = 0;  // producer operation index
    size_t produced_ = 0;
};

}  // namespace as2d

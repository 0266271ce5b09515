// One window run: what either clock hands to the protocol writer.
#pragma once

#include <string>
#include <vector>

#include "buffer.hpp"
#include "records.hpp"
#include "schemes/scheme.hpp"

namespace as2d {

struct Stage {  // a completed stage interval (D.2.7)
    std::string resource;  // producer | verifier | other
    std::string stage;     // draft, align, verify, step, loop, queue, startup, produce
    double start = 0.0;
    double end = 0.0;
    int round = -1;  // -1: not tied to a round
};

struct RunResult {
    std::vector<RoundRecord> records;  // timed
    std::vector<Stage> stages;
    std::vector<Batch> publications;
    Tokens output;     // committed, root first
    double time = 0.0;  // decode clock, drain included
    double t_eos = 0.0;  // when the target committed its last token
    double cleanup = 0.0;  // producer drain charged after t_eos (0 for serial schemes)
};

// Stage intervals of one round (D.2.7), labelled by the work done, never by scheme name (as
// workbench.decoding.records.round_stages): serial drafting on the producer resource if the
// round drafted, else the verifier's alignment; the call (``verify`` when candidates ride along,
// ``step`` for K = 1); then ``after`` work (loop or queue) up to ``t_after_end``.
std::vector<Stage> one_round_stages(const RoundRecord& r, const std::string& after, double t_after_end);
std::vector<Stage> round_stages(const std::vector<RoundRecord>& records, const std::string& after, double after_s);

}  // namespace as2d

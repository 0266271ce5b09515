// Calibrate mode (paper D.2; request ``calibrate`` plan, PROTOCOL.md): ``measure`` lines the host
// fits into a conf/device profile.
//
// * reference engine: the priced costs, in the order phone_runner.device writes them (virtual
//   clock), or the same operations paced and timed on the real clock -- the host's calibration
//   pipeline end to end without a model;
// * real models: the verify-width sweep K at prefix offsets, idle and with the producer forwarding
//   on its own thread, and one drafter forward, each timed around the model call.
#pragma once

#include "model.hpp"
#include "protocol.hpp"

namespace as2d {

struct CalibrationPlan {
    std::vector<int> widths, offsets{0};
    int reps = 5, warmups = 1;
    std::vector<bool> with_producer{false, true};
    bool draft_forward = true, asp = true;
};

CalibrationPlan parse_plan(const Json* plan);

// ``target``/``drafter``: real models (null for the reference engine, which needs ``price``).
void calibrate(const Request& r, LineWriter& out, Model* target, Model* drafter);

}  // namespace as2d

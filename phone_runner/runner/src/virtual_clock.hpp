// The virtual clock: event-driven pricing of one window (paper D.1.3, D.2, D.5.1; clock per A.3).
// Port of workbench/replay/engine.py; the conformance test holds the two to identical records
// and times.
//
// Two resources share one clock that starts after prefill: the verifier runs round after round
// and never waits; the producer (decoupled schemes) runs from time 0 and publishes batches. While
// both are busy the target call takes the concurrent cost; a call that outlives the producer
// finishes at the idle rate. After target EOS the producer stops at its next operation boundary
// and that drain is charged once.
#pragma once

#include "model.hpp"
#include "models/reference_model.hpp"
#include "pricing.hpp"
#include "run.hpp"
#include "schemes/scheme.hpp"

namespace as2d {

struct WindowSpec {  // what a clock needs to run one window
    std::string window_id;
    Trajectory traj;   // reference engine; real engines: only eos_id (the request's windows[i].eos_id)
    int max_output = 1;
    Tokens prompt;         // real engines: the target's decoder prompt ids (empty: null in the request)
    std::string audio;     // real engines: input paths, resolved against the request's folder
    std::string features;  // log-mel features (.npy float32 [1, mel, frames]) for an encoder-decoder target
};

RunResult run_virtual(const std::string& scheme, const SchemeSettings& settings, const WindowSpec& window,
                      const Pricing& price, Model& model, bool drain_full);

}  // namespace as2d

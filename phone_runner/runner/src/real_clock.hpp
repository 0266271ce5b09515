// The real clock: the system as it runs on a phone (paper Section 4, A.3).
//
// The verifier loop runs on the calling thread; for the decoupled schemes the producer runs on
// its own std::thread from time 0 and publishes immutable batches into the shared buffer with
// their real publish times. The verifier never waits: each round plans from the snapshot
// published by its decision time. After target EOS the producer is told to stop, finishes the
// operation in flight (drain "boundary") or its whole stream ("full"), and the clock ends when both
// are idle: the drain is charged once.
//
// With real models the work itself takes the time. With the reference model a ``Pacer`` sleeps
// each operation's priced cost instead (the replay premise on a real clock), which tests the
// threads, the clock and the drain, not the models.
#pragma once

#include <chrono>

#include "model.hpp"
#include "pricing.hpp"
#include "run.hpp"
#include "virtual_clock.hpp"

namespace as2d {

class Pacer {  // sleeps priced costs (reference model); a no-op for real models
public:
    explicit Pacer(const Pricing* price) : price_(price) {}
    bool enabled() const { return price_ != nullptr; }
    const Pricing& price() const { return *price_; }
    // Sleep until ``from + seconds`` on the steady clock (absolute deadlines do not drift).
    void until(std::chrono::steady_clock::time_point from, double seconds) const;

private:
    const Pricing* price_;
};

struct RealModels {
    Model* target = nullptr;
    Model* drafter = nullptr;   // serial schemes
    Model* producer = nullptr;  // decoupled schemes (its own instance: it runs on its own thread)
    std::string producer_source;
    int batch_tokens = 8;  // publication batch of an autoregressive producer
    bool chunked = false;  // an external chunk source publishes each operation's tokens at once
    double startup_s = 0.0, op_s = 0.0, publication_s = 0.0, concurrent_factor = 1.0;  // paced costs
};

RunResult run_real(const std::string& scheme, const SchemeSettings& settings, const WindowSpec& window,
                   const RealModels& models, const Pacer& pacer, bool drain_full);

}  // namespace as2d

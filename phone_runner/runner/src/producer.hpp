// The target-decoupled producer as a priced resource on the virtual clock (paper Section 4.1,
// Appendix C.1, A.3); port of workbench/replay/producer.py.
//
// The producer never waits for the target: from time 0 it runs its operations back to back --
// startup, then drafter forwards or chunk services -- and publishes each batch when its
// publication operation completes. While a target call runs, a producer operation takes
// ``concurrent_factor`` times its idle cost. Work is counted in idle seconds, so the real time of
// every publication follows from the rates in force while it was produced.
#pragma once

#include <memory>
#include <optional>
#include <vector>

#include "buffer.hpp"
#include "models/reference_model.hpp"
#include "pricing.hpp"

namespace as2d {

constexpr double BOUNDARY_S = 1e-9;  // float drift tolerated when deciding if an operation is in flight

struct ProducerPlan {
    std::string source;
    Tokens tokens;
    std::optional<Confs> confidences;
    std::vector<double> op_end;      // cumulative idle work (s) at the end of each operation
    std::vector<double> batch_work;  // cumulative idle work (s) when each batch becomes visible
    std::vector<int> batch_end;      // tokens published after each batch
    double startup_s = 0.0;
    double factor = 1.0;
    int64_t vocab_size = 0;
    double total_work = 0.0;  // idle seconds of the whole stream
    // Prebuilt when publication times do not depend on the verifier (factor 1).
    std::shared_ptr<PublicationBuffer> static_buffer;

    static ProducerPlan build(const SourceTrack& track, const SourcePrice& cost, int64_t vocab_size);
    void publish_range(PublicationBuffer& buf, int first, int stop, const std::vector<double>& when) const;
};

class Producer {  // one run's producer state: idle work done by the current real time
public:
    explicit Producer(const ProducerPlan& plan);
    const ProducerPlan& plan() const { return plan_; }
    PublicationBuffer& buffer() { return *buffer_; }
    double remaining() const;
    bool busy() const { return remaining() > 0.0; }
    void advance(double t, bool slowed);  // run to real time t at the idle or coexistence rate
    double finish_time_if(bool slowed) const;
    // Stop after target EOS: complete the operation in flight (or everything if ``full``);
    // returns when the producer is idle. Charged once (D.5.1).
    double drain(double t_eos, bool full);

private:
    const ProducerPlan& plan_;
    std::shared_ptr<PublicationBuffer> buffer_;
    double work_ = 0.0;
    double time_ = 0.0;
    int next_batch_ = 0;
    std::optional<double> finished_at_;
};

}  // namespace as2d

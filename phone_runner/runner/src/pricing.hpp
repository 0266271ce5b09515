// Device costs in seconds: the request's ``pricing`` object (PROTOCOL.md), resolved on the host
// from a conf/device profile exactly as workbench/replay/pricing.py resolves it, so the virtual
// clock here and the Python replay add the same doubles.
#pragma once

#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "json.hpp"
#include "records.hpp"

namespace as2d {

struct WidthNotPriced : std::runtime_error {  // a width the profile does not price (never zero, D.2.1)
    using std::runtime_error::runtime_error;
};

struct SourcePrice {
    std::string kind;  // autoregressive | chunk
    double op_s = 0.0;  // one drafter forward, or one chunk's service time
    double publication_s = 0.0;
    double startup_s = 0.0;
    double concurrent_factor = 1.0;  // producer slowdown while the verifier is busy
    std::optional<int> batch_tokens;  // autoregressive publication batch
};

struct Pricing {
    std::string name;
    double step_s = 0.0, loop_s = 0.0, queue_s = 0.0, align_s = 0.0;
    std::map<int, double> idle_s, conc_s;
    std::string serial_drafter;
    std::map<std::string, SourcePrice> sources;
    std::vector<std::string> source_order;  // as the request lists them
    bool has_asp = false;
    double paired_s = 0.0, prob_row_s = 0.0;
    std::map<int, double> refresh_s;

    static Pricing from_json(const Json& j);
    double verify(int k, bool concurrent) const;
    bool has_width(int k) const { return idle_s.count(k) > 0; }
    bool has_source(const std::string& n) const { return sources.count(n) > 0; }
    double draft(const DraftWork& w) const;  // serial drafting before a target call (D.1.3, D.2.2)
    const SourcePrice& source(const std::string& name) const;
};

}  // namespace as2d

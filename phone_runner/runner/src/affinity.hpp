// CPU placement (Table 6: the drafter on chosen cores). Linux/Android only; elsewhere a no-op.
//
// A thread inherits its creator's mask, so pinning the thread that loads a model places the
// worker threads the backend starts during load, and pinning the thread that calls a model
// places the work it runs inline.
#pragma once

#include <stdexcept>
#include <string>
#include <vector>
#ifdef __linux__
#include <sched.h>
#endif

namespace as2d {

// Pin the calling thread to ``cpus`` (empty: leave it); restores the old mask when destroyed
// unless ``keep`` is set.
class ScopedAffinity {
public:
    explicit ScopedAffinity(const std::vector<int>& cpus, bool keep = false) : keep_(keep) {
#ifdef __linux__
        if (cpus.empty()) return;
        sched_getaffinity(0, sizeof old_, &old_);
        cpu_set_t set;
        CPU_ZERO(&set);
        for (int c : cpus) CPU_SET(c, &set);
        if (sched_setaffinity(0, sizeof set, &set) != 0)
            throw std::invalid_argument("models.*.cpus: cannot pin to the requested cores");
        set_ = true;
#else
        (void)cpus;
#endif
    }
    ~ScopedAffinity() {
#ifdef __linux__
        if (set_ && !keep_) sched_setaffinity(0, sizeof old_, &old_);
#endif
    }
    ScopedAffinity(const ScopedAffinity&) = delete;
    ScopedAffinity& operator=(const ScopedAffinity&) = delete;

private:
    bool keep_ = false;
    bool set_ = false;
#ifdef __linux__
    cpu_set_t old_{};
#endif
};

}  // namespace as2d

// What the runner asks of a model backend, by role (workbench/decoding/protocols.py).
//
// * target -- a greedy model with retained KV state on the committed prefix. ``verify(root,
//   chain)`` runs ONE forward over [root, *chain] and returns K greedy tokens; ``keep(n)`` retains
//   root plus the first n chain entries (KV rollback). The next known root is carried into the
//   next call, never processed here.
// * drafter -- the serial prefix-conditioned drafter of SD and SpecASR ASP.
// * producer -- the target-decoupled producer: one operation at a time on its own history.
//
// Implementations: ReferenceModel (answers from a saved greedy reference, drafts and producer
// trajectory: the replay premise), and with AS2D_WITH_MNN MnnLlmModel (MNN's Llm C++ API on prompt
// ids) and MnnWhisperModel (a Whisper export on the host's log-mel features).
#pragma once

#include <optional>
#include <stdexcept>
#include <string>

#include "records.hpp"

namespace as2d {

struct Proposal {
    Tokens tokens;
    std::optional<Confs> confidences;  // top-1 probabilities; none when the drafter has none
    int forwards = 0;                  // drafter forwards spent, catch-up included
    int catchup = 0;                   // committed tokens missing from the drafter's own KV
};

struct ProducerOp {                    // one producer operation (a forward, or a chunk service)
    Tokens tokens;                     // may be empty (an operation that emitted nothing)
    std::optional<Confs> confidences;
    std::optional<double> measured_s;  // the trajectory's measured operation time, if it has one
};

class Model {
public:
    virtual ~Model() = default;
    virtual std::string describe() const = 0;

    // target role
    virtual Token prefill() = 0;
    virtual Tokens verify(Token root, const Tokens& chain) = 0;
    virtual void keep(int accepted) = 0;

    // serial drafter role; with ``stop_below`` drafting stops after the first token whose
    // confidence is below it, that token included (ASP)
    virtual Proposal propose(const Tokens& prefix, int n, std::optional<double> stop_below) = 0;

    // producer role: restart on the window, then one operation per call; false when exhausted
    virtual void producer_start() = 0;
    virtual bool produce(ProducerOp& op) = 0;

    // CPU placement of the calling thread (the producer thread pins itself to its model's cores)
    virtual void pin_current_thread() {}

    // calibration (real models): seconds of one forward over ``width`` ids on top of ``offset``
    // ids after the prompt, rolled back afterwards
    virtual double timed_forward(int offset, int width) {
        (void)offset;
        (void)width;
        throw std::runtime_error(describe() + " has no timed forward (calibrate a real model)");
    }
};

}  // namespace as2d

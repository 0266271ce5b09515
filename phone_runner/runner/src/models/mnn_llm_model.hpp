// MNN's Llm C++ API as a runner Model (compiled only with -DAS2D_WITH_MNN=ON).
//
// It mirrors the calls the Python MNN path makes (shared/DESIGN facts copied into the README):
// ``all_logits`` so one forward over K ids returns [1, K, V] logits (K-wide verification),
// ``eraseHistory(n_keep, 0)`` to roll the KV cache back, backend / precision / threads from the
// model spec, and CPU affinity by pinning the loading thread (MNN's worker threads inherit it).
#pragma once

#include <memory>

#include "../model.hpp"
#include "greedy_propose.hpp"
#include "../protocol.hpp"

namespace MNN::Transformer { class Llm; }

namespace as2d {

class MnnLlmModel : public Model {
public:
    // ``prompt``: the decoder prompt ids prefilled before the decode clock starts.
    MnnLlmModel(const ModelSpec& spec, const std::string& base_dir, Tokens prompt, std::optional<Token> eos_id);
    ~MnnLlmModel() override;
    std::string describe() const override;

    Token prefill() override;
    Tokens verify(Token root, const Tokens& chain) override;
    void keep(int accepted) override;
    Proposal propose(const Tokens& prefix, int n, std::optional<double> stop_below) override;
    void producer_start() override;
    bool produce(ProducerOp& op) override;
    double timed_forward(int offset, int width) override;
    void pin_current_thread() override;

private:
    using Row = GreedyRow;
    std::vector<Row> forward(const Tokens& ids);  // greedy token and its softmax prob per position
    void rollback(size_t keep);                   // keep the first ``keep`` KV entries (prompt included)

    ModelSpec spec_;
    Tokens prompt_;
    std::optional<Token> eos_id_;
    MNN::Transformer::Llm* llm_ = nullptr;
    size_t history_ = 0;         // KV entries held, prompt included
    size_t verify_base_ = 0;     // history before the last verify
    Tokens kv_;                  // committed/draft tokens held after the prompt (drafter, producer)
    Token last_ = -1;            // producer: the next token to feed
    Row first_{-1, 0.0};         // the prompt's greedy continuation, from prefill
    int produced_ = 0;
    bool producer_done_ = false;
};

}  // namespace as2d

// A Whisper export of workbench.models.mnn.export (encoder.mnn, decoder.mnn) as a runner Model,
// through MNN's Express Module API (compiled only with -DAS2D_WITH_MNN=ON).
//
// The C++ port of workbench/models/mnn/whisper.py: the encoder turns the window's log-mel features
// (the host computes them, PROTOCOL.md windows[i].features) into cross K/V once per window; the
// decoder runs one K-wide forward over [root, *chain] on top of its self-attention KV, and a
// rejection crops the KV's position axis. Logits get the export's suppress mask (as2d_whisper.json),
// plus its begin mask after the prompt; greedy takes the lowest id among equal maxima (torch.argmax).
#pragma once

#include <memory>
#include <vector>

#include "../model.hpp"
#include "greedy_propose.hpp"
#include "mnn_folder.hpp"

namespace MNN::Express { class Module; class Executor; }

namespace as2d {

class MnnWhisperModel : public Model {
public:
    // ``prompt``/``eos_id``: the request's (empty / none: the export's own as2d_whisper.json).
    MnnWhisperModel(const ModelSpec& spec, const MnnFolder& folder, const std::string& features_npy, Tokens prompt,
                    std::optional<Token> eos_id);
    ~MnnWhisperModel() override;
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
    struct State;                                  // cross K/V and the decoder's self-attention KV
    std::vector<Row> forward(const Tokens& ids, bool begin = false);
    void crop(size_t keep);                        // keep the first ``keep`` decoder positions

    ModelSpec spec_;
    MnnFolder folder_;
    Tokens prompt_;
    std::optional<Token> eos_id_;
    std::vector<float> mask_, begin_;              // additive: 0 or -inf per vocabulary id
    int64_t max_positions_ = 448;
    std::shared_ptr<MNN::Express::Executor> executor_;  // declared first: destroyed last
    std::shared_ptr<MNN::Express::Module> encoder_, decoder_;
    std::unique_ptr<State> state_;
    size_t verify_base_ = 0;
    Tokens kv_;                                    // drafter/producer: tokens held after the prompt
    Row first_{-1, 0.0};
    Token last_ = -1;
    int produced_ = 0;
    bool producer_done_ = false;
};

}  // namespace as2d

#include "mnn_whisper_model.hpp"

#include <chrono>
#include <cmath>
#include <cstring>
#include <fstream>
#include <limits>
#include <sstream>

#include <MNN/MNNForwardType.h>
#include <MNN/expr/Executor.hpp>
#include <MNN/expr/ExecutorScope.hpp>
#include <MNN/expr/ExprCreator.hpp>
#include <MNN/expr/Module.hpp>

#include "../affinity.hpp"
#include "../npy.hpp"

namespace as2d {

using MNN::Express::Executor;
using MNN::Express::ExecutorScope;
using MNN::Express::Module;
using MNN::Express::VARP;

constexpr int PRODUCER_CAP = 2048;  // source generation stops at EOS or 2,048 tokens (D.5.1)

struct MnnWhisperModel::State {
    VARP cross_k, cross_v, past_k, past_v;
    std::vector<int> kv_shape;  // [layers, 1, heads, length, head_dim]
    size_t length = 0;
};

namespace {

Json read_json(const std::string& path) {
    std::ifstream in(path);
    std::stringstream ss;
    ss << in.rdbuf();
    return Json::parse(ss.str());
}

VARP f32(const std::vector<int>& shape, const float* data) {
    VARP v = MNN::Express::_Input(shape, MNN::Express::NCHW, halide_type_of<float>());
    size_t n = 1;
    for (int d : shape) n *= static_cast<size_t>(d);
    if (n) std::memcpy(v->writeMap<float>(), data, n * sizeof(float));
    return v;
}

VARP i32(const std::vector<int>& shape, const std::vector<int>& data) {
    VARP v = MNN::Express::_Input(shape, MNN::Express::NCHW, halide_type_of<int>());
    std::memcpy(v->writeMap<int>(), data.data(), data.size() * sizeof(int));
    return v;
}

MNNForwardType forward_type(const ModelSpec& spec) {
    return spec.backend == "opencl" ? MNN_FORWARD_OPENCL : spec.backend == "vulkan" ? MNN_FORWARD_VULKAN : MNN_FORWARD_CPU;
}

MNN::BackendConfig backend_config(const ModelSpec& spec) {
    MNN::BackendConfig bc;  // precision as workbench.models.mnn.runtime names it; int8: low memory (dynamic int8)
    const std::string& p = spec.precision;
    bc.precision = p == "high" || p == "fp32" ? MNN::BackendConfig::Precision_High
                 : p == "low" || p == "fp16" || p == "int8" ? MNN::BackendConfig::Precision_Low
                                                             : MNN::BackendConfig::Precision_Normal;
    bc.memory = p == "int8" ? MNN::BackendConfig::Memory_Low : MNN::BackendConfig::Memory_Normal;
    return bc;
}

std::shared_ptr<Module> load(const std::string& path, const std::vector<std::string>& ins,
                             const std::vector<std::string>& outs, const ModelSpec& spec) {
    MNN::ScheduleConfig sc;
    sc.type = forward_type(spec);
    sc.numThread = spec.threads;
    MNN::BackendConfig bc = backend_config(spec);
    sc.backendConfig = &bc;
    std::shared_ptr<Executor::RuntimeManager> rt(Executor::RuntimeManager::createRuntimeManager(sc));
    Module::Config mc;
    mc.shapeMutable = true;
    mc.rearrange = false;
    std::shared_ptr<Module> m(Module::load(ins, outs, path.c_str(), rt, &mc));
    if (!m) throw ProtocolFailure("missing_file", "MNN could not load " + path + " (push the export folder again)");
    return m;
}

}  // namespace

MnnWhisperModel::MnnWhisperModel(const ModelSpec& spec, const MnnFolder& folder, const std::string& features_npy,
                                 Tokens prompt, std::optional<Token> eos_id)
    : spec_(spec), folder_(folder), prompt_(std::move(prompt)), eos_id_(eos_id) {
    Json meta = read_json(folder.dir + "/as2d_whisper.json");
    Json cfg = read_json(folder.dir + "/config.json");
    if (prompt_.empty())
        for (const Json& x : meta.get("prompt_ids")->as_array("prompt_ids")) prompt_.push_back(x.as_int("prompt_ids[]"));
    if (!eos_id_) eos_id_ = meta.get("eos_id")->as_int("eos_id");
    const float inf = std::numeric_limits<float>::infinity();
    mask_.assign(static_cast<size_t>(folder.vocab_size), 0.0f);
    begin_.assign(static_cast<size_t>(folder.vocab_size), 0.0f);
    for (const Json& x : meta.get("suppress_ids")->as_array("suppress_ids")) mask_.at(x.as_int("suppress_ids[]")) = -inf;
    for (const Json& x : meta.get("begin_suppress_ids")->as_array("begin_suppress_ids"))
        begin_.at(x.as_int("begin_suppress_ids[]")) = -inf;
    max_positions_ = cfg.get("max_target_positions")->as_int("max_target_positions");
    ScopedAffinity pin(spec.cpus);  // worker threads MNN starts while loading inherit the placement
    // Its own executor: the target and the producer run on two threads, and MNN's default executor
    // is one per process. Every MNN call below runs inside an ExecutorScope of it (thread-local).
    executor_ = Executor::newExecutor(forward_type(spec), backend_config(spec), spec.threads);
    ExecutorScope scope(executor_);
    encoder_ = load(folder.dir + "/encoder.mnn", {"features"}, {"cross_k", "cross_v"}, spec);
    decoder_ = load(folder.dir + "/decoder.mnn", {"tokens", "positions", "past_k", "past_v", "cross_k", "cross_v"},
                    {"logits", "new_k", "new_v"}, spec);
    NpyArray x = read_npy_f32(features_npy, "features");
    state_ = std::make_unique<State>();
    auto cross = encoder_->onForward({f32({1, static_cast<int>(folder.mel_bins), static_cast<int>(folder.frames)},
                                          x.data.data())});
    state_->cross_k = cross.at(0);
    state_->cross_v = cross.at(1);
    int layers = cfg.get("decoder_layers")->as_int("decoder_layers");
    int heads = cfg.get("decoder_attention_heads")->as_int("decoder_attention_heads");
    int d_model = cfg.get("d_model")->as_int("d_model");
    state_->kv_shape = {layers, 1, heads, 0, d_model / heads};
}

MnnWhisperModel::~MnnWhisperModel() {
    ExecutorScope scope(executor_);  // Vars and modules go before their executor
    state_.reset();
    decoder_.reset();
    encoder_.reset();
}

void MnnWhisperModel::pin_current_thread() { ScopedAffinity(spec_.cpus, /*keep=*/true); }

std::string MnnWhisperModel::describe() const { return "mnn-whisper:" + spec_.name + "@" + spec_.backend; }

std::vector<MnnWhisperModel::Row> MnnWhisperModel::forward(const Tokens& ids, bool begin) {
    ExecutorScope scope(executor_);
    State& s = *state_;
    const int k = static_cast<int>(ids.size());
    if (static_cast<int64_t>(s.length) + k > max_positions_)
        throw std::runtime_error(describe() + ": decoder positions exhausted (" + std::to_string(s.length) + " + " +
                                 std::to_string(k) + " > " + std::to_string(max_positions_) + ")");
    std::vector<int> toks(ids.begin(), ids.end()), pos(k);
    for (int i = 0; i < k; ++i) pos[i] = static_cast<int>(s.length) + i;
    if (!s.past_k.get()) {  // empty KV: a zero-length position axis
        s.past_k = f32(s.kv_shape, nullptr);
        s.past_v = f32(s.kv_shape, nullptr);
    }
    auto outs = decoder_->onForward({i32({1, k}, toks), i32({k}, pos), s.past_k, s.past_v, s.cross_k, s.cross_v});
    if (outs.size() != 3) throw std::runtime_error(describe() + ": decoder forward failed");
    s.past_k = outs[1];
    s.past_v = outs[2];
    s.length += static_cast<size_t>(k);
    s.kv_shape[3] = static_cast<int>(s.length);
    const float* p = outs[0]->readMap<float>();  // [1, K, V]; copied into rows before the next forward
    const size_t v = mask_.size();
    std::vector<Row> rows;
    for (int r = 0; r < k; ++r, p += v) {
        const bool with_begin = begin && r == k - 1;
        auto logit = [&](size_t i) { return p[i] + mask_[i] + (with_begin ? begin_[i] : 0.0f); };
        size_t best = 0;
        for (size_t i = 1; i < v; ++i)
            if (logit(i) > logit(best)) best = i;  // strict: the lowest id among equal maxima
        double sum = 0.0, top = logit(best);
        for (size_t i = 0; i < v; ++i) sum += std::exp(static_cast<double>(logit(i)) - top);
        rows.push_back({static_cast<Token>(best), 1.0 / sum});
    }
    return rows;
}

void MnnWhisperModel::crop(size_t keep) {
    State& s = *state_;
    if (keep >= s.length) return;
    ExecutorScope scope(executor_);
    // [layers, 1, heads, length, head_dim] -> the first ``keep`` positions (one host copy: rejections are rare)
    const int layers = s.kv_shape[0], heads = s.kv_shape[2], dim = s.kv_shape[4];
    std::vector<int> shape{layers, 1, heads, static_cast<int>(keep), dim};
    for (VARP* kv : {&s.past_k, &s.past_v}) {
        const float* src = (*kv)->readMap<float>();
        std::vector<float> out(static_cast<size_t>(layers) * heads * keep * dim);
        for (int lh = 0; lh < layers * heads; ++lh)
            std::memcpy(out.data() + static_cast<size_t>(lh) * keep * dim, src + static_cast<size_t>(lh) * s.length * dim,
                        keep * dim * sizeof(float));
        *kv = f32(shape, out.data());
    }
    s.length = keep;
    s.kv_shape[3] = static_cast<int>(keep);
}

Token MnnWhisperModel::prefill() {
    ExecutorScope scope(executor_);
    state_->past_k = nullptr;
    state_->past_v = nullptr;
    state_->length = 0;
    state_->kv_shape[3] = 0;
    kv_.clear();
    first_ = forward(prompt_, /*begin=*/true).back();
    return first_.token;
}

Tokens MnnWhisperModel::verify(Token root, const Tokens& chain) {
    Tokens ids{root};
    ids.insert(ids.end(), chain.begin(), chain.end());
    verify_base_ = state_->length;
    Tokens greedy;
    for (const Row& r : forward(ids)) greedy.push_back(r.token);
    return greedy;
}

void MnnWhisperModel::keep(int accepted) { crop(verify_base_ + 1 + static_cast<size_t>(accepted)); }

Proposal MnnWhisperModel::propose(const Tokens& prefix, int n, std::optional<double> stop_below) {
    return greedy_propose(prefix, n, stop_below, prompt_.size(), kv_, first_,
                          [this](size_t keep) { crop(keep); },
                          [this](const Tokens& ids) { return forward(ids); });
}

void MnnWhisperModel::producer_start() {
    crop(prompt_.size());
    produced_ = 0;
    producer_done_ = false;
}

bool MnnWhisperModel::produce(ProducerOp& op) {
    if (producer_done_) return false;
    Row r = produced_ == 0 ? first_ : forward({last_}).back();  // the first token comes from the prefill
    last_ = r.token;
    op.tokens.assign(1, r.token);
    op.confidences = Confs{r.prob};
    op.measured_s.reset();
    ++produced_;
    int64_t room = max_positions_ - static_cast<int64_t>(prompt_.size());
    producer_done_ = (eos_id_ && r.token == *eos_id_) || produced_ >= PRODUCER_CAP || produced_ >= room;
    return true;
}

double MnnWhisperModel::timed_forward(int offset, int width) {
    // ``offset`` copies of the prompt's greedy token stand in for decoded text, as MnnLlmModel does.
    crop(prompt_.size());
    if (offset > 0) forward(Tokens(static_cast<size_t>(offset), first_.token));
    auto t0 = std::chrono::steady_clock::now();
    forward(Tokens(static_cast<size_t>(width), first_.token));
    double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    crop(prompt_.size());
    return s;
}

}  // namespace as2d

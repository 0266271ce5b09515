#include "mnn_llm_model.hpp"

#include <chrono>
#include <cmath>
#include <fstream>

#include <llm/llm.hpp>

#include "../affinity.hpp"

namespace as2d {

using MNN::Transformer::Llm;

constexpr int PRODUCER_CAP = 2048;  // source generation stops at EOS or 2,048 tokens (D.5.1)

MnnLlmModel::MnnLlmModel(const ModelSpec& spec, const std::string& base_dir, Tokens prompt, std::optional<Token> eos_id)
    : spec_(spec), prompt_(std::move(prompt)), eos_id_(eos_id) {
    std::string dir = !spec.dir.empty() && spec.dir[0] == '/' ? spec.dir : base_dir + "/" + spec.dir;
    std::string config = dir + "/config.json";
    if (spec.dir.empty() || !std::ifstream(config).good())
        throw ProtocolFailure("missing_file", "model '" + spec.name + "': no MNN config at " + config +
                                                  " (push the exported model directory first)");
    if (prompt_.empty()) throw ProtocolFailure("bad_request", "windows[].prompt: the MNN engine needs prompt token ids");
    ScopedAffinity pin(spec.cpus);  // worker threads MNN starts while loading inherit the placement
    llm_ = Llm::createLLM(config);
    // Precision as workbench.models.mnn.runtime names it; int8 = dynamic int8 compute (memory low).
    const std::string& p = spec.precision;
    std::string precision = p == "fp32" ? "high" : p == "fp16" || p == "int8" ? "low" : p;  // checked by the runner
    llm_->set_config("{\"all_logits\": true, \"backend_type\": \"" + spec.backend + "\", \"thread_num\": " +
                     std::to_string(spec.threads) + ", \"precision\": \"" + precision + "\", \"memory\": \"" +
                     (p == "int8" ? "low" : "normal") + "\"}");
    if (!llm_->load()) {
        Llm::destroy(llm_);  // a throwing constructor runs no destructor
        llm_ = nullptr;
        throw ProtocolFailure("missing_file", "model '" + spec.name + "': MNN could not load " + dir);
    }
}

MnnLlmModel::~MnnLlmModel() {
    if (llm_) Llm::destroy(llm_);
}

void MnnLlmModel::pin_current_thread() { ScopedAffinity(spec_.cpus, /*keep=*/true); }

std::string MnnLlmModel::describe() const { return "mnn:" + spec_.name + "@" + spec_.backend; }

std::vector<MnnLlmModel::Row> MnnLlmModel::forward(const Tokens& ids) {
    std::vector<Row> rows;
    {
        // The returned Var is a view the next forward overwrites, and must be dropped before the
        // Llm is destroyed: copy what we need inside this scope.
        auto logits = llm_->forward(std::vector<int>(ids.begin(), ids.end()));
        if (logits == nullptr) throw std::runtime_error(describe() + ": forward failed");
        auto dims = logits->getInfo()->dim;
        int k = dims.size() == 3 ? dims[1] : 1, v = dims.back();
        if (k != static_cast<int>(ids.size()))
            throw std::runtime_error(describe() + ": forward returned " + std::to_string(k) + " rows for " +
                                     std::to_string(ids.size()) + " ids (is all_logits set?)");
        const float* p = logits->readMap<float>();
        for (int r = 0; r < k; ++r, p += v) {
            int best = 0;
            for (int i = 1; i < v; ++i)
                if (p[i] > p[best]) best = i;
            double sum = 0.0;
            for (int i = 0; i < v; ++i) sum += std::exp(static_cast<double>(p[i]) - p[best]);
            rows.push_back({best, 1.0 / sum});
        }
    }
    history_ += ids.size();
    return rows;
}

void MnnLlmModel::rollback(size_t keep) {
    if (keep < history_) llm_->eraseHistory(keep, 0);
    history_ = keep;
}

Token MnnLlmModel::prefill() {
    llm_->reset();
    history_ = 0;
    kv_.clear();
    first_ = forward(prompt_).back();
    return first_.token;
}

Tokens MnnLlmModel::verify(Token root, const Tokens& chain) {
    Tokens ids{root};
    ids.insert(ids.end(), chain.begin(), chain.end());
    verify_base_ = history_;
    Tokens greedy;
    for (const Row& r : forward(ids)) greedy.push_back(r.token);
    return greedy;
}

void MnnLlmModel::keep(int accepted) { rollback(verify_base_ + 1 + accepted); }

Proposal MnnLlmModel::propose(const Tokens& prefix, int n, std::optional<double> stop_below) {
    return greedy_propose(prefix, n, stop_below, prompt_.size(), kv_, first_,
                          [this](size_t keep) { rollback(keep); },
                          [this](const Tokens& ids) { return forward(ids); });
}

void MnnLlmModel::producer_start() {
    rollback(prompt_.size());
    produced_ = 0;
    producer_done_ = false;
}

bool MnnLlmModel::produce(ProducerOp& op) {
    if (producer_done_) return false;
    // The first token comes from the prefill's logits; each later one costs one forward.
    Row r = produced_ == 0 ? first_ : forward({last_}).back();
    last_ = r.token;
    op.tokens.assign(1, r.token);
    op.confidences = Confs{r.prob};
    op.measured_s.reset();
    ++produced_;
    producer_done_ = (eos_id_ && r.token == *eos_id_) || produced_ >= PRODUCER_CAP;
    return true;
}

double MnnLlmModel::timed_forward(int offset, int width) {
    // A prefix of ``offset`` copies of the prompt's greedy token stands in for decoded text.
    rollback(prompt_.size());
    if (offset > 0) forward(Tokens(offset, first_.token));
    auto t0 = std::chrono::steady_clock::now();
    forward(Tokens(width, first_.token));
    double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    rollback(prompt_.size());
    return s;
}

}  // namespace as2d

#include "buffer.hpp"

#include <algorithm>
#include <stdexcept>

namespace as2d {

namespace {
std::string num(double x) {
    char buf[40];
    std::snprintf(buf, sizeof buf, "%.17g", x);
    return buf;
}
}  // namespace

Token Snapshot::at(int i) const {
    if (i < 0 || i >= n_)
        throw std::out_of_range("buffer position " + std::to_string(i) + " is not published in this snapshot (length " +
                                std::to_string(n_) + ")");
    std::lock_guard<std::mutex> lock(buf_->mu_);
    return buf_->tokens_[i];
}

Tokens Snapshot::tokens(int start, int stop) const {
    stop = std::min(stop, n_);
    if (start >= stop) return {};
    std::lock_guard<std::mutex> lock(buf_->mu_);
    return Tokens(buf_->tokens_.begin() + start, buf_->tokens_.begin() + stop);
}

std::optional<int> Snapshot::find(Token token, int start, int stop) const {
    std::lock_guard<std::mutex> lock(buf_->mu_);
    for (int j = std::max(0, start); j < std::min(stop, n_); ++j)
        if (buf_->tokens_[j] == token) return j;
    return std::nullopt;
}

std::optional<int> Snapshot::rfind(Token token, int start, int stop) const {
    std::lock_guard<std::mutex> lock(buf_->mu_);
    for (int j = std::min(stop, n_) - 1; j >= std::max(0, start); --j)
        if (buf_->tokens_[j] == token) return j;
    return std::nullopt;
}

std::optional<double> Snapshot::confidence(int i) const {
    at(i);  // bounds check
    std::lock_guard<std::mutex> lock(buf_->mu_);
    return buf_->conf_[i];
}

const std::string& Snapshot::source_id() const { return buf_->source_id_; }

Batch PublicationBuffer::publish(const Tokens& tokens, double publish_time, const std::optional<Confs>& confidences) {
    std::lock_guard<std::mutex> lock(mu_);
    if (finish_time_) throw std::runtime_error("publish: source '" + source_id_ + "' already finished");
    if (tokens.empty()) throw std::runtime_error("publish: tokens is empty; a batch carries at least one token");
    if (!times_.empty() && publish_time < times_.back())
        throw std::runtime_error("publish_time " + num(publish_time) + " is earlier than the previous batch's " +
                                 num(times_.back()) + "; batches must be published in time order");
    for (Token t : tokens)
        if (t < 0 || (vocab_size_ && t >= *vocab_size_))
            throw std::runtime_error("tokens: candidate token " + std::to_string(t) +
                                     " is outside the target vocabulary; convert drafter output with Tok_T first");
    if (confidences && confidences->size() != tokens.size())
        throw std::runtime_error("confidences: " + std::to_string(confidences->size()) + " values for " +
                                 std::to_string(tokens.size()) + " tokens");
    Batch b{source_id_, producer_id_, static_cast<int>(tokens_.size()), publish_time, tokens, confidences};
    int index = static_cast<int>(batches_.size());
    batches_.push_back(b);
    for (size_t i = 0; i < tokens.size(); ++i) {
        tokens_.push_back(tokens[i]);
        conf_.push_back(confidences ? std::optional<double>((*confidences)[i]) : std::nullopt);
        batch_of_.push_back(index);
    }
    times_.push_back(publish_time);
    ends_.push_back(static_cast<int>(tokens_.size()));
    return b;
}

void PublicationBuffer::finish(double time) {
    std::lock_guard<std::mutex> lock(mu_);
    if (!times_.empty() && time < times_.back())
        throw std::runtime_error("finish time " + num(time) + " precedes the last publish time " + num(times_.back()));
    finish_time_ = time;
}

Snapshot PublicationBuffer::snapshot(double t) const {
    std::lock_guard<std::mutex> lock(mu_);
    // bisect_right over batch publish times: every batch published at or before t.
    auto nb = std::upper_bound(times_.begin(), times_.end(), t) - times_.begin();
    int n = nb ? ends_[nb - 1] : 0;
    bool complete = finish_time_ && *finish_time_ <= t && n == static_cast<int>(tokens_.size());
    return Snapshot(this, n, t, complete);
}

double PublicationBuffer::publish_time_of(int position) const {
    std::lock_guard<std::mutex> lock(mu_);
    return times_.at(batch_of_.at(position));
}

std::vector<Batch> PublicationBuffer::batches() const {
    std::lock_guard<std::mutex> lock(mu_);
    return batches_;
}

int PublicationBuffer::size() const {
    std::lock_guard<std::mutex> lock(mu_);
    return static_cast<int>(tokens_.size());
}

std::optional<double> PublicationBuffer::finish_time() const {
    std::lock_guard<std::mutex> lock(mu_);
    return finish_time_;
}

}  // namespace as2d

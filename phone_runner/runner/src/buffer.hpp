// Ordered publication buffer (paper Section 4.1, Appendix C.1); port of workbench/decoding/buffer.py.
//
// * publication batch -- an immutable run of candidate tokens a producer appends at once, with
//   source id, producer id, token offset, publish time and per-token confidence (or none);
// * buffer -- the append-only sequence of published tokens of one request and source;
// * snapshot -- what a reader sees "published by time t": an immutable prefix of the buffer.
//
// The producer thread appends while the verifier reads, so every access takes the buffer's lock.
// Published tokens never change; a snapshot only remembers a length, and positions below it are
// never written again.
#pragma once

#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "records.hpp"

namespace as2d {

struct Batch {
    std::string source_id;
    std::string producer_id;
    int offset = 0;
    double publish_time = 0.0;
    Tokens tokens;
    std::optional<Confs> confidences;
};

class PublicationBuffer;

class Snapshot {
public:
    Snapshot(const PublicationBuffer* buf, int n, double time, bool complete)
        : buf_(buf), n_(n), time_(time), complete_(complete) {}
    int size() const { return n_; }
    double time() const { return time_; }
    bool complete() const { return complete_; }
    Token at(int i) const;                             // token at a published position
    Tokens tokens(int start, int stop) const;          // [start, min(stop, size))
    // First / last position in [start, stop) (clipped to this snapshot) holding ``token``.
    std::optional<int> find(Token token, int start, int stop) const;
    std::optional<int> rfind(Token token, int start, int stop) const;
    std::optional<double> confidence(int i) const;     // none when the source has no confidences
    const std::string& source_id() const;

private:
    const PublicationBuffer* buf_;
    int n_;
    double time_;
    bool complete_;
};

class PublicationBuffer {
public:
    PublicationBuffer(std::string source_id, std::string producer_id, std::optional<int64_t> vocab_size)
        : source_id_(std::move(source_id)), producer_id_(std::move(producer_id)), vocab_size_(vocab_size) {}

    // Validates what a later audit relies on: ids inside the vocabulary, non-decreasing publish
    // times, confidences for every token or none. Returns the batch as published.
    Batch publish(const Tokens& tokens, double publish_time, const std::optional<Confs>& confidences);
    void finish(double time);  // the source is exhausted: no batch follows
    Snapshot snapshot(double t) const;
    double publish_time_of(int position) const;
    std::vector<Batch> batches() const;
    int size() const;
    std::optional<double> finish_time() const;
    const std::string& source_id() const { return source_id_; }

private:
    friend class Snapshot;
    mutable std::mutex mu_;
    std::string source_id_, producer_id_;
    std::optional<int64_t> vocab_size_;
    std::vector<Batch> batches_;
    Tokens tokens_;
    std::vector<std::optional<double>> conf_;
    std::vector<int> batch_of_;
    std::vector<double> times_;  // publish time of each batch
    std::vector<int> ends_;      // cumulative token count after each batch
    std::optional<double> finish_time_;
};

}  // namespace as2d

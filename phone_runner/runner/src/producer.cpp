#include "producer.hpp"

#include <algorithm>

namespace as2d {

ProducerPlan ProducerPlan::build(const SourceTrack& track, const SourcePrice& cost, int64_t vocab_size) {
    ProducerPlan p;
    p.source = track.source;
    p.tokens = track.tokens;
    p.confidences = track.confidences;
    p.vocab_size = vocab_size;
    double w = cost.startup_s;
    p.op_end.push_back(w);
    bool measured = track.op_ms.has_value();
    double pub = measured ? 0.0 : cost.publication_s;
    int batch = cost.kind == "autoregressive" ? cost.batch_tokens.value_or(1) : 0;  // 0: publish every chunk
    int produced = 0, pending = 0;
    size_t n_ops = track.op_tokens.size();
    for (size_t i = 0; i < n_ops; ++i) {
        w += measured ? (*track.op_ms)[i] / 1000.0 : cost.op_s;
        p.op_end.push_back(w);
        int n = track.op_tokens[i];
        produced += n;
        pending += n;
        bool last = i == n_ops - 1;
        // An autoregressive producer publishes every ``batch_tokens`` tokens (and the final
        // partial batch); an external source publishes each completed chunk atomically.
        if (pending && (batch == 0 || pending >= batch || last)) {
            w += pub;
            p.op_end.push_back(w);
            p.batch_work.push_back(w);
            p.batch_end.push_back(produced);
            pending = 0;
        }
    }
    p.factor = measured ? 1.0 : cost.concurrent_factor;  // measured times already hold their contention
    p.startup_s = cost.startup_s;
    p.total_work = w;
    if (p.factor == 1.0) {
        p.static_buffer = std::make_shared<PublicationBuffer>(track.source, track.source + "-producer", vocab_size);
        p.publish_range(*p.static_buffer, 0, static_cast<int>(p.batch_work.size()), p.batch_work);
        p.static_buffer->finish(w);
    }
    return p;
}

void ProducerPlan::publish_range(PublicationBuffer& buf, int first, int stop, const std::vector<double>& when) const {
    for (int j = first; j < stop; ++j) {
        int s = j ? batch_end[j - 1] : 0;
        int e = batch_end[j];
        std::optional<Confs> conf;
        if (confidences) conf = Confs(confidences->begin() + s, confidences->begin() + e);
        buf.publish(Tokens(tokens.begin() + s, tokens.begin() + e), when[j - first], conf);
    }
}

Producer::Producer(const ProducerPlan& plan) : plan_(plan) {
    if (plan.total_work == 0.0) finished_at_ = plan.total_work;
    buffer_ = plan.static_buffer
                  ? plan.static_buffer
                  : std::make_shared<PublicationBuffer>(plan.source, plan.source + "-producer", plan.vocab_size);
}

double Producer::remaining() const { return std::max(0.0, plan_.total_work - work_); }

void Producer::advance(double t, bool slowed) {
    if (t <= time_) return;
    double rate = slowed ? 1.0 / plan_.factor : 1.0;
    double start_work = work_, start_time = time_;
    work_ = std::min(plan_.total_work, start_work + (t - start_time) * rate);
    if (!finished_at_ && work_ >= plan_.total_work)
        finished_at_ = start_time + (plan_.total_work - start_work) / rate;
    if (!plan_.static_buffer) {
        auto& bw = plan_.batch_work;
        int stop = static_cast<int>(std::upper_bound(bw.begin(), bw.end(), work_) - bw.begin());
        if (stop > next_batch_) {
            std::vector<double> when;
            for (int j = next_batch_; j < stop; ++j) when.push_back(start_time + (bw[j] - start_work) / rate);
            plan_.publish_range(*buffer_, next_batch_, stop, when);
            next_batch_ = stop;
        }
        if (finished_at_ && !buffer_->finish_time()) buffer_->finish(*finished_at_);
    }
    time_ = t;
}

double Producer::finish_time_if(bool slowed) const { return time_ + remaining() * (slowed ? plan_.factor : 1.0); }

double Producer::drain(double t_eos, bool full) {
    advance(t_eos, false);
    if (!busy()) return *finished_at_;
    double target_work;
    if (full) {
        target_work = plan_.total_work;
    } else {
        // Work accumulates in floats: an EOS that lands on an operation's end (to within
        // BOUNDARY_S) finds nothing in flight, rather than paying for one more operation.
        auto& ends = plan_.op_end;
        target_work = std::max(work_, *std::lower_bound(ends.begin(), ends.end(), work_ - BOUNDARY_S));
    }
    double end = time_ + (target_work - work_);
    advance(end, false);
    return end;
}

}  // namespace as2d

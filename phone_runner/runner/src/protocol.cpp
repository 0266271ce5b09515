#include "protocol.hpp"

#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <set>

namespace as2d {

namespace {

[[noreturn]] void bad(const std::string& field, const std::string& problem) {
    throw ProtocolFailure("bad_request", "request field '" + field + "': " + problem);
}

const Json& need(const Json& j, const std::string& key, const std::string& where) {
    const Json* v = j.get(key);
    if (!v) bad(where.empty() ? key : where + "." + key, "missing");
    return *v;
}

int as_int(const Json& j, const std::string& what, int low) {
    if (!j.is_int()) bad(what, "expected an integer, got " + j.dump());
    int64_t v = j.as_int(what);
    if (v < low || v > 1000000000) bad(what, j.dump() + "; expected an integer >= " + std::to_string(low));
    return static_cast<int>(v);
}

// Token ids: int64 on the wire, kept int64 (a draft token t + 2^32 is not t).
Tokens ints(const Json& j, const std::string& what) {
    Tokens out;
    for (const Json& x : j.as_array(what)) out.push_back(x.as_int(what + "[]"));
    return out;
}

// Counts and core ids: small non-negative integers.
std::vector<int> counts(const Json& j, const std::string& what) {
    std::vector<int> out;
    for (const Json& x : j.as_array(what)) out.push_back(as_int(x, what + "[]", 0));
    return out;
}

// Token ids inside [0, vocab): the reference, drafts and every source (PROTOCOL.md windows[i].reference).
void in_vocab(const Tokens& toks, int64_t vocab, const std::string& what) {
    for (Token tok : toks)
        if (tok < 0 || tok >= vocab)
            bad(what, "token " + std::to_string(tok) + " outside the vocabulary [0, " + std::to_string(vocab) + ")");
}

Confs nums(const Json& j, const std::string& what) {
    Confs out;
    for (const Json& x : j.as_array(what)) out.push_back(x.as_double(what + "[]"));
    return out;
}

std::string input_path(const Json& win, const std::string& key, const std::string& w, const std::string& base_dir) {
    const Json* v = win.get(key);
    if (!v || v->is_null()) return "";
    if (!v->is_string()) bad(w + "." + key, "expected a path or null, got " + v->dump());
    const std::string& s = v->as_string(w + "." + key);
    return s.empty() || s[0] == '/' ? s : base_dir + "/" + s;
}

// What a real engine reads (PROTOCOL.md windows[i]): prompt ids, the EOS id, audio or features.
// The same checks as phone_runner/protocol.py, for every engine (the reference engine ignores them).
void parse_real_inputs(const Json& win, const std::string& w, const std::string& base_dir, bool reference,
                       WindowSpec& ws) {
    if (const Json* p = win.get("prompt"); p && !p->is_null()) {
        if (!p->is_array()) bad(w + ".prompt", "expected token ids (>= 0) or null");
        for (const Json& x : p->as_array(w + ".prompt")) {
            if (!x.is_int() || x.as_int(w + ".prompt[]") < 0) bad(w + ".prompt", "expected token ids (>= 0) or null");
            ws.prompt.push_back(x.as_int(w + ".prompt[]"));
        }
    }
    const Json* eos = win.get("eos_id");
    if (eos && !eos->is_null() && (!eos->is_int() || eos->as_int(w + ".eos_id") < 0))
        bad(w + ".eos_id", eos->dump() + "; expected an id or null");
    ws.audio = input_path(win, "audio", w, base_dir);
    ws.features = input_path(win, "features", w, base_dir);
    if (reference) return;
    if (ws.audio.empty() && ws.features.empty()) bad(w, "needs audio or features");
    if (eos && !eos->is_null()) ws.traj.eos_id = eos->as_int(w + ".eos_id");
}

Trajectory parse_reference(const Json& ref, const std::string& w) {
    Trajectory t;
    t.reference = ints(need(ref, "tokens", w), w + ".tokens");
    if (t.reference.empty()) bad(w + ".tokens", "empty; the reference engine needs the greedy reference tokens");
    const Json* eos = ref.get("eos_id");
    const Json& vocab = need(ref, "vocab_size", w);
    t.vocab_size = vocab.as_int(w + ".vocab_size");
    if (t.vocab_size < 1) bad(w + ".vocab_size", vocab.dump() + "; expected an integer >= 1");
    in_vocab(t.reference, t.vocab_size, w + ".tokens");
    if (eos && !eos->is_null()) {
        t.eos_id = eos->as_int(w + ".eos_id");
        if (*t.eos_id < 0 || *t.eos_id >= t.vocab_size) bad(w + ".eos_id", eos->dump() + "; outside the vocabulary");
    }
    const Json* d = ref.get("drafts");
    if (d && !d->is_null()) {
        t.has_drafts = true;
        for (const Json& row : need(*d, "tokens", w + ".drafts").as_array(w + ".drafts.tokens"))
            t.draft_tokens.push_back(ints(row, w + ".drafts.tokens[]"));
        for (const Tokens& row : t.draft_tokens) in_vocab(row, t.vocab_size, w + ".drafts.tokens[]");
        const Json* c = d->get("confidences");
        if (c && !c->is_null()) {
            t.draft_confidences.emplace();
            for (const Json& row : c->as_array(w + ".drafts.confidences"))
                t.draft_confidences->push_back(nums(row, w + ".drafts.confidences[]"));
            if (t.draft_confidences->size() != t.draft_tokens.size())
                bad(w + ".drafts.confidences", "one row per draft row expected");
            for (size_t i = 0; i < t.draft_tokens.size(); ++i)
                if ((*t.draft_confidences)[i].size() < t.draft_tokens[i].size())
                    bad(w + ".drafts.confidences", "row " + std::to_string(i) + " is shorter than its draft");
        }
    }
    const Json* srcs = ref.get("sources");
    if (srcs && !srcs->is_null()) {
        for (const auto& kv : srcs->as_object(w + ".sources")) {
            const std::string sw = w + ".sources." + kv.first;
            SourceTrack s;
            s.source = kv.first;
            s.tokens = ints(need(kv.second, "tokens", sw), sw + ".tokens");
            const Json* c = kv.second.get("confidences");
            if (c && !c->is_null()) s.confidences = nums(*c, sw + ".confidences");
            in_vocab(s.tokens, t.vocab_size, sw + ".tokens");
            s.op_tokens = counts(need(kv.second, "op_tokens", sw), sw + ".op_tokens");
            const Json* ms = kv.second.get("op_ms");
            if (ms && !ms->is_null()) s.op_ms = nums(*ms, sw + ".op_ms");
            const Json* el = kv.second.get("eligible");
            if (el && !el->is_null()) s.eligible = el->as_bool(sw + ".eligible");
            long total = 0;
            for (int n : s.op_tokens) {
                if (n < 0) bad(sw + ".op_tokens", "negative token count");
                total += n;
            }
            if (total != static_cast<long>(s.tokens.size()))
                bad(sw + ".op_tokens", "operations emit " + std::to_string(total) + " tokens, stream has " +
                                           std::to_string(s.tokens.size()));
            if (s.confidences && s.confidences->size() != s.tokens.size())
                bad(sw + ".confidences", "one value per token expected");
            if (s.op_ms && s.op_ms->size() != s.op_tokens.size()) bad(sw + ".op_ms", "one time per operation expected");
            t.sources.push_back(std::move(s));
        }
    }
    return t;
}

SchemeSettings parse_settings(const Json* j, Request& r) {
    SchemeSettings s;
    if (!j || j->is_null()) return s;
    static const std::set<std::string> known = {"budget", "width", "threshold", "cap", "span", "window", "lookback", "source", "anchor_order", "decay"};
    for (const auto& kv : j->as_object("scheme.settings")) {
        const std::string f = "scheme.settings." + kv.first;
        const Json& v = kv.second;
        if (!known.count(kv.first)) bad(f, "unknown setting (known: budget, width, threshold, cap, span, lookback, anchor_order, decay, source)");
        if (kv.first == "budget") s.budget = as_int(v, f, 1);
        else if (kv.first == "width") s.width = as_int(v, f, 1);
        else if (kv.first == "cap") s.cap = as_int(v, f, 1);
        else if (kv.first == "span" || kv.first == "window") s.span = as_int(v, f, 1);  // "window": the older name
        else if (kv.first == "lookback") { if (!v.is_null()) s.lookback = as_int(v, f, 1); }
        else if (kv.first == "threshold") s.threshold = v.is_null() ? std::nullopt : std::optional<double>(v.as_double(f));
        else if (kv.first == "source") { if (!v.is_null()) s.source = v.as_string(f); }
        else if (kv.first == "anchor_order") s.anchor_order = v.as_string(f);
        else if (kv.first == "decay") s.decay = v.as_double(f);
    }
    (void)r;
    return s;
}

}  // namespace

Request parse_request(const Json& j, const std::string& base_dir) {
    if (!j.is_object()) bad("", "the request must be a JSON object");
    Request r;
    r.raw = j;
    r.base_dir = base_dir;
    const Json* v = j.get("v");
    if (!v || !v->is_int() || v->as_int("v") != PROTOCOL_VERSION)
        bad("v", "protocol version " + (v ? v->dump() : std::string("missing")) + "; this runner speaks v1");
    try {
        r.run_id = need(j, "run_id", "").as_string("run_id");
        r.mode = need(j, "mode", "").as_string("mode");
        if (r.mode != "run" && r.mode != "calibrate") bad("mode", "'" + r.mode + "'; expected run or calibrate");
        const Json& sch = need(j, "scheme", "");
        r.scheme = need(sch, "name", "scheme").as_string("scheme.name");
        if (!is_known_scheme(r.scheme))
            bad("scheme.name", "'" + r.scheme + "'; expected one of target_only, sd, asp, as2d, as2d_wo_td, as2d_wo_bc, "
                               "as2d_online");
        if (r.scheme == "as2d_online")  // PROTOCOL.md: v1 does not carry it (its Python rules moved on)
            bad("scheme.name", "'as2d_online' runs in replay and on the host only; protocol v1 carries target_only, "
                               "sd, asp, as2d, as2d_wo_td, as2d_wo_bc");
        const Json* cfg = sch.get("config");
        r.config = cfg && cfg->is_string() ? cfg->as_string("scheme.config") : r.scheme;
        r.settings = parse_settings(sch.get("settings"), r);
        if (const Json* src = sch.get("source"); src && !src->is_null()) r.settings.source = src->as_string("scheme.source");
        const Json& eng = need(j, "engine", "");
        r.engine_kind = need(eng, "kind", "engine").as_string("engine.kind");
        if (const Json* c = eng.get("clock")) r.clock = c->as_string("engine.clock");
        if (const Json* d = eng.get("drain")) r.drain = d->as_string("engine.drain");
        if (r.clock != "virtual" && r.clock != "real") bad("engine.clock", "expected virtual or real");
        if (r.drain != "boundary" && r.drain != "full") bad("engine.drain", "expected boundary or full");
        if (r.engine_kind != "reference" && r.clock == "virtual") bad("engine.clock", "only the reference engine has a virtual clock");
        if (const Json* ms = j.get("models"); ms && !ms->is_null()) {
            for (const auto& kv : ms->as_object("models")) {
                const std::string mw = "models." + kv.first;
                ModelSpec m;
                const Json& o = kv.second;
                if (const Json* x = o.get("dir"); x && !x->is_null()) m.dir = x->as_string(mw + ".dir");
                if (const Json* x = o.get("format")) m.format = x->as_string(mw + ".format");
                if (const Json* x = o.get("name")) m.name = x->as_string(mw + ".name");
                if (const Json* x = o.get("backend")) m.backend = x->as_string(mw + ".backend");
                if (const Json* x = o.get("precision")) m.precision = x->as_string(mw + ".precision");
                if (const Json* x = o.get("threads")) m.threads = as_int(*x, mw + ".threads", 1);
                if (const Json* x = o.get("cpus"); x && !x->is_null()) m.cpus = counts(*x, mw + ".cpus");
                r.models[kv.first] = m;
            }
        }
        if (const Json* p = j.get("producer"); p && !p->is_null()) {
            if (const Json* s = p->get("source"); s && !s->is_null()) r.producer_source = s->as_string("producer.source");
            if (const Json* b = p->get("batch_tokens")) r.batch_tokens = as_int(*b, "producer.batch_tokens", 1);
        }
        if (r.settings.source.empty()) r.settings.source = r.producer_source;
        if (const Json* x = j.get("repetitions")) r.repetitions = as_int(*x, "repetitions", 1);
        if (const Json* x = j.get("warmups")) r.warmups = as_int(*x, "warmups", 0);
        if (const Json* x = j.get("max_output")) r.max_output = as_int(*x, "max_output", 1);
        r.output = need(j, "output", "").as_string("output");
        const bool reference = r.engine_kind == "reference";
        if (const Json* p = j.get("pricing"); p && !p->is_null()) r.pricing = Pricing::from_json(*p);
        if (reference && !r.pricing) bad("pricing", "the reference engine needs resolved pricing");
        if (r.scheme == "as2d_online") {
            // What a round costs while the producer runs, plus the round's fixed overhead (as replay's _scheme).
            if (!r.pricing) bad("pricing", "as2d_online chooses chain lengths from the device's per-width costs");
            const Pricing& p = *r.pricing;
            for (const auto& kv : p.conc_s) r.settings.costs[kv.first] = kv.second + p.loop_s + p.align_s;
            r.settings.costs.emplace(1, p.step_s + p.loop_s + p.align_s);
        }
        std::set<std::string> seen;
        const auto& wins = need(j, "windows", "").as_array("windows");
        if (wins.empty() && r.mode == "run") bad("windows", "expected a non-empty list");
        for (size_t i = 0; i < wins.size(); ++i) {
            const std::string w = "windows[" + std::to_string(i) + "]";
            WindowSpec ws;
            ws.window_id = need(wins[i], "window_id", w).as_string(w + ".window_id");
            if (!seen.insert(ws.window_id).second) bad(w + ".window_id", "duplicate '" + ws.window_id + "'");
            const Json* mo = wins[i].get("max_output");
            ws.max_output = mo && !mo->is_null() ? as_int(*mo, w + ".max_output", 1) : r.max_output;
            const Json* ref = wins[i].get("reference");
            if (reference) {
                if (!ref || ref->is_null()) bad(w + ".reference", "the reference engine needs the greedy reference tokens");
                ws.traj = parse_reference(*ref, w + ".reference");
            }
            parse_real_inputs(wins[i], w, base_dir, reference, ws);
            r.windows.push_back(std::move(ws));
        }
    } catch (const JsonError& e) {
        throw ProtocolFailure("bad_request", e.what());
    } catch (const std::invalid_argument& e) {
        throw ProtocolFailure("bad_request", e.what());
    }
    return r;
}

int protocol_fd = 1;

Json LineWriter::start(const char* type) {
    Json o = Json::object();
    o.set("v", PROTOCOL_VERSION);
    o.set("type", type);
    return o;
}

void LineWriter::write(const Json& line) {
    std::string text = line.dump();
    text += '\n';
    // One write(2) per line, straight to the descriptors (no stdio buffer): a runner killed
    // mid-run leaves only whole lines behind, and a reader sees each line as soon as it exists.
    // Either failure ends the run: a host that stopped reading (broken pipe, unplugged phone) is gone,
    // and a file that cannot take a whole line (full disk) would keep a half line as its last.
    write_all(protocol_fd, text, "stdout", true);
    if (file_) write_all(fileno(file_), text, "output file", false);
}

void LineWriter::write_all(int fd, const std::string& text, const char* what, bool to_stdout) {
    size_t done = 0;
    while (done < text.size()) {
        ssize_t n = ::write(fd, text.data() + done, text.size() - done);
        if (n < 0) {
            if (errno == EINTR) continue;
            throw WriteFailure(std::string(what) + ": write failed (" + std::strerror(errno) + ")", to_stdout);
        }
        done += static_cast<size_t>(n);
    }
}

namespace {
Json opt_int(const std::optional<int>& v) { return v ? Json(*v) : Json(); }
Json opt_token(const std::optional<Token>& v) { return v ? Json(*v) : Json(); }
}  // namespace

Json round_line(const std::string& window_id, int rep, const std::string& config, const RoundRecord& r) {
    Json o = LineWriter::start("round");
    o.set("window_id", window_id);
    o.set("repetition", rep);
    o.set("config", config);
    o.set("round", r.round);
    o.set("scheme", r.scheme);
    o.set("width", r.width);
    o.set("root", r.root);
    o.set("chain", Json::ints(r.chain));
    o.set("provenance", Json::ints(r.provenance));
    o.set("k1_reason", r.k1_reason ? Json(*r.k1_reason) : Json());
    o.set("ready", r.ready);
    o.set("accepted", r.accepted);
    o.set("committed", Json::ints(r.committed));
    o.set("outcome", r.outcome);
    o.set("next_root", opt_token(r.next_root));
    o.set("cursor_before", opt_int(r.cursor_before));
    o.set("cursor_after", opt_int(r.cursor_after));
    o.set("work_forwards", r.work.forwards);
    o.set("work_catchup", r.work.catchup);
    o.set("work_paired_forwards", r.work.paired_forwards);
    o.set("work_prob_rows", r.work.prob_rows);
    o.set("work_refresh_width", r.work.refresh_width);
    o.set("t_decide", r.t_decide);
    o.set("t_start", r.t_start);
    o.set("t_end", r.t_end);
    return o;
}

Json stage_line(const std::string& window_id, int rep, const Stage& s) {
    Json o = LineWriter::start("stage");
    o.set("window_id", window_id);
    o.set("repetition", rep);
    o.set("resource", s.resource);
    o.set("stage", s.stage);
    o.set("start", s.start);
    o.set("end", s.end);
    o.set("round", s.round);
    return o;
}

Json publication_line(const std::string& window_id, int rep, const Batch& b) {
    Json o = LineWriter::start("publication");
    o.set("window_id", window_id);
    o.set("repetition", rep);
    o.set("source_id", b.source_id);
    o.set("producer_id", b.producer_id);
    o.set("offset", b.offset);
    o.set("publish_time", b.publish_time);
    o.set("tokens", Json::ints(b.tokens));
    o.set("confidences", b.confidences ? Json::nums(*b.confidences) : Json());
    return o;
}

Json window_line(const std::string& window_id, int rep, const std::string& config, const std::string& scheme,
                 const RunResult& r) {
    Json o = LineWriter::start("window");
    o.set("window_id", window_id);
    o.set("repetition", rep);
    o.set("config", config);
    o.set("scheme", scheme);
    o.set("tokens", static_cast<int>(r.output.size()));
    o.set("time", r.time);
    o.set("t_eos", r.t_eos);
    o.set("cleanup", r.cleanup);
    o.set("rounds", static_cast<int>(r.records.size()));
    o.set("output", Json::ints(r.output));
    return o;
}

Json error_line(const std::string& code, const std::string& message, const std::optional<std::string>& window_id) {
    Json o = LineWriter::start("error");
    o.set("code", code);
    o.set("message", message);
    o.set("window_id", window_id ? Json(*window_id) : Json());
    return o;
}

}  // namespace as2d

// as2d_runner: the on-device As²d runner (phone_runner protocol v1).
//
//   as2d_runner --request <request.json> [--output <out.jsonl>]
//   as2d_runner --batch <requests.jsonl>     one request per line, streams to stdout only
//
// Exit status: 0 done (last line summary), 2 bad request (last line error), 1 failure during a run.
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <csignal>
#include <cstring>
#include <fstream>
#include <set>
#include <iostream>
#include <sstream>
#include <thread>

#include "calibrate.hpp"
#include "models/reference_model.hpp"
#include "protocol.hpp"
#include "real_clock.hpp"
#include "virtual_clock.hpp"
#include "models/mnn_folder.hpp"
#ifdef AS2D_WITH_MNN
#include "models/mnn_llm_model.hpp"
#include "models/mnn_whisper_model.hpp"
#endif

using namespace as2d;

namespace {

const char* abi() {
#if defined(__aarch64__)
    return "arm64-v8a";
#elif defined(__x86_64__)
    return "x86_64";
#else
    return "unknown";
#endif
}

// Widest physical width a configuration may verify; every width up to it must be priced (D.2.1).
int widest_width(const Request& r) {
    const SchemeSettings& s = r.settings;
    if (r.scheme == "target_only") return 1;
    if (r.scheme == "sd") return s.width;
    if (r.scheme == "asp" || r.scheme == "as2d_wo_bc") return s.cap + 1;
    return s.budget + 1;  // as2d, as2d_wo_td
}

void check_request(const Request& r) {
    if (r.mode == "calibrate") parse_plan(r.raw.get("calibrate"));  // a bad plan is a bad request
    if (r.engine_kind == "torch")
        throw ProtocolFailure("unsupported_backend", "engine.kind 'torch': the C++ runner has reference and mnn engines");
    if (r.engine_kind == "mnn") {
        check_mnn_request(r);  // the request fully first (folders, inputs), then whether this build runs it
#ifndef AS2D_WITH_MNN
        throw ProtocolFailure("unsupported_backend", "engine.kind 'mnn': this runner was built without MNN "
                                                     "(rebuild with -DAS2D_WITH_MNN=ON, see build_android.sh)");
#endif
    } else if (r.engine_kind != "reference") {
        throw ProtocolFailure("bad_request", "request field 'engine.kind': '" + r.engine_kind + "'; expected reference or mnn");
    }
    try {  // the scheme's own checks (ranges, anchor order), before any model is loaded
        Trajectory dummy;
        dummy.reference = {0};
        ReferenceModel drafter(dummy, "");
        PublicationBuffer buffer("check", "check", std::nullopt);
        make_scheme(r.scheme, r.settings, 2, 0, &drafter, &buffer);
    } catch (const std::invalid_argument& e) {
        throw ProtocolFailure("bad_request", std::string("request field 'scheme.settings': ") + e.what());
    }
    if (is_decoupled(r.scheme) && r.settings.source.empty())
        throw ProtocolFailure("bad_request", "request field 'scheme.settings.source': scheme '" + r.scheme +
                                                 "' reads a candidate source; name it (or producer.source)");
    if (is_decoupled(r.scheme) && r.settings.source.find('+') != std::string::npos)
        throw ProtocolFailure("bad_request", "request field 'scheme.source': '" + r.settings.source +
                                                 "': the reference engine replays one source per window; several "
                                                 "sources ('a+b') run in host replay only");
    if (r.pricing) {
        int widest = widest_width(r);
        for (int k = 1; k <= widest; ++k)
            if (!r.pricing->has_width(k))
                throw ProtocolFailure("width_not_priced", "configuration " + r.config + " may verify physical width K=" +
                                                              std::to_string(k) + ", which profile '" + r.pricing->name +
                                                              "' does not price (D.2.1: missing widths are never zero)");
        if (is_decoupled(r.scheme) && !r.pricing->has_source(r.settings.source))
            throw ProtocolFailure("bad_request", "request field 'scheme.source': '" + r.settings.source +
                                                     "' is not priced (pricing.sources)");
    }
    for (const auto& w : r.windows)
        if (r.engine_kind == "reference" && is_decoupled(r.scheme) && !w.traj.source(r.settings.source))
            throw ProtocolFailure("bad_request", "window '" + w.window_id + "' has no source '" + r.settings.source + "'",
                                  w.window_id);
}

#ifdef AS2D_WITH_MNN
// The MNN model a role's folder holds: a Whisper export (features in) or an MNN LLM folder (prompt ids in).
std::unique_ptr<Model> mnn_model(const Request& r, const std::string& role, const WindowSpec& w, const Tokens& prompt,
                                 std::optional<Token> eos_id) {
    MnnFolder folder = mnn_folder(r, role);
    if (folder.whisper) return std::make_unique<MnnWhisperModel>(r.models.at(role), folder, w.features, prompt, eos_id);
    return std::make_unique<MnnLlmModel>(r.models.at(role), r.base_dir, prompt.empty() ? w.prompt : prompt,
                                         eos_id ? eos_id : w.traj.eos_id);
}
#endif

RunResult run_window(const Request& r, const WindowSpec& w) {
    const bool full = r.drain == "full";
    if (r.engine_kind == "reference") {
        ReferenceModel target(w.traj, "");
        if (r.clock == "virtual") return run_virtual(r.scheme, r.settings, w, *r.pricing, target, full);
        ReferenceModel producer(w.traj, r.settings.source);  // its own instance: it runs on its own thread
        RealModels m{&target, &target, &producer, r.settings.source};
        if (is_decoupled(r.scheme)) {
            const SourcePrice& sp = r.pricing->source(r.settings.source);
            m.batch_tokens = sp.batch_tokens.value_or(r.batch_tokens);
            m.chunked = sp.kind == "chunk";
            m.startup_s = sp.startup_s;
            m.op_s = sp.op_s;
            m.publication_s = sp.publication_s;
            m.concurrent_factor = sp.concurrent_factor;
        }
        return run_real(r.scheme, r.settings, w, m, Pacer(&*r.pricing), full);
    }
#ifdef AS2D_WITH_MNN
    const bool serial = r.scheme != "target_only" && !is_decoupled(r.scheme);
    const char* role = serial ? "drafter" : "producer";
    std::unique_ptr<Model> target = mnn_model(r, "target", w, w.prompt, w.traj.eos_id);
    std::unique_ptr<Model> proposer;  // drafter (serial schemes) or producer (decoupled); its own prompt and EOS
    if (r.scheme != "target_only") {
        proposer = mnn_model(r, role, w, {}, std::nullopt);
        proposer->prefill();  // source prefill finishes before the clock starts (A.3)
    }
    RealModels m{target.get(), proposer.get(), proposer.get(), r.settings.source, r.batch_tokens};
    return run_real(r.scheme, r.settings, w, m, Pacer(nullptr), full);
#else
    throw ProtocolFailure("unsupported_backend", "built without MNN");
#endif
}

void run_calibration(const Request& r, LineWriter& out) {
    try {
        if (r.engine_kind == "reference") return calibrate(r, out, nullptr, nullptr);
#ifdef AS2D_WITH_MNN
        const WindowSpec& w = r.windows.at(0);  // the calibration window: its prompt, features or audio
        std::unique_ptr<Model> target = mnn_model(r, "target", w, w.prompt, w.traj.eos_id);
        target->prefill();
        std::unique_ptr<Model> drafter;
        if (r.models.count("drafter")) {
            drafter = mnn_model(r, "drafter", w, {}, std::nullopt);
            drafter->prefill();
        }
        calibrate(r, out, target.get(), drafter.get());
#endif
    } catch (const WidthNotPriced& e) {
        throw ProtocolFailure("width_not_priced", e.what());
    } catch (const JsonError& e) {
        throw ProtocolFailure("bad_request", e.what());
    }
}

void audit_exact(const WindowSpec& w, const RunResult& res) {
    if (res.output != w.traj.reference)
        throw ExactnessError("window '" + w.window_id + "': committed output differs from the greedy reference");
}

int run_request(const Request& r, LineWriter& out, bool& started) {
    auto wall0 = std::chrono::steady_clock::now();
    Json header = LineWriter::start("header");
    header.set("run_id", r.run_id);
    Json runner = Json::object();
    runner.set("name", "as2d_runner");
    runner.set("version", RUNNER_VERSION);
    runner.set("language", "c++17");
    header.set("runner", runner);
    header.set("mode", r.mode);
    header.set("engine", *r.raw.get("engine"));
    header.set("scheme", *r.raw.get("scheme"));
    Json device = Json::object();
    device.set("abi", abi());
    device.set("cores", static_cast<int>(std::thread::hardware_concurrency()));
    header.set("device", device);
    header.set("started_unix", std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count());
    out.write(header);
    started = true;
    check_request(r);
    int windows = 0, rounds = 0, tokens = 0;
    double time = 0.0;
    if (r.mode == "calibrate") run_calibration(r, out);
    const std::vector<WindowSpec> none;
    for (const WindowSpec& w : r.mode == "calibrate" ? none : r.windows) {
        try {
            for (int rep = -r.warmups; rep < r.repetitions; ++rep) {
                RunResult res = run_window(r, w);
                if (r.engine_kind == "reference") audit_exact(w, res);
                if (rep < 0) continue;  // warm-ups print nothing
                for (const auto& rec : res.records) out.write(round_line(w.window_id, rep, r.config, rec));
                for (const auto& s : res.stages) out.write(stage_line(w.window_id, rep, s));
                for (const auto& b : res.publications) out.write(publication_line(w.window_id, rep, b));
                out.write(window_line(w.window_id, rep, r.config, r.scheme, res));
                ++windows;
                rounds += static_cast<int>(res.records.size());
                tokens += static_cast<int>(res.output.size());
                time += res.time;
            }
        } catch (const WriteFailure&) {
            throw;  // not the window's failure: serve() must still know which stream broke
        } catch (ProtocolFailure& e) {
            if (!e.window_id) e.window_id = w.window_id;
            throw;
        } catch (const WidthNotPriced& e) {
            throw ProtocolFailure("width_not_priced", e.what(), w.window_id);
        } catch (const ExactnessError& e) {
            throw ProtocolFailure("exactness", e.what(), w.window_id);
        } catch (const std::exception& e) {
            throw ProtocolFailure("internal", e.what(), w.window_id);
        }
    }
    Json summary = LineWriter::start("summary");
    summary.set("windows", windows);
    summary.set("rounds", rounds);
    summary.set("tokens", tokens);
    summary.set("time", time);
    summary.set("wall_s", std::chrono::duration<double>(std::chrono::steady_clock::now() - wall0).count());
    out.write(summary);
    return 0;
}

// The last line of a failed run, to whichever of stdout and the file still takes it. A second
// write failure here has nothing left to report to, so it is dropped (the exit status says it).
void last_line(FILE* file, const Json& line, bool to_stdout, bool to_file) {
    std::string text = line.dump() + "\n";
    for (int fd : {to_stdout ? protocol_fd : -1, to_file && file ? fileno(file) : -1}) {
        if (fd < 0) continue;
        size_t done = 0;
        while (done < text.size()) {
            ssize_t n = ::write(fd, text.data() + done, text.size() - done);
            if (n < 0 && errno == EINTR) continue;
            if (n <= 0) break;
            done += static_cast<size_t>(n);
        }
    }
}

// Run one request text; every failure ends in one error line.
int serve(const std::string& text, const std::string& base_dir, const std::string& output_override, bool batch) {
    FILE* file = nullptr;
    bool started = false;
    auto finish = [&](const Json& line, bool to_stdout, bool to_file, int rc) {
        last_line(file, line, to_stdout, to_file);
        if (file) std::fclose(file);
        return rc;
    };
    try {
        Json j;
        try {
            j = Json::parse(text);
        } catch (const JsonError& e) {
            throw ProtocolFailure("bad_request", std::string("request: ") + e.what());
        }
        Request r = parse_request(j, base_dir);
        if (!batch) {
            std::string path = output_override.empty() ? r.output : output_override;
            if (!path.empty() && path[0] != '/') path = base_dir + "/" + path;
            file = std::fopen(path.c_str(), "w");
            if (!file)
                throw ProtocolFailure("missing_file", "output: cannot write " + path + " (" + std::strerror(errno) + ")");
        }
        LineWriter out(file);
        int rc = run_request(r, out, started);
        if (file && std::fclose(file) != 0) {
            file = nullptr;
            return finish(error_line("internal", "output file: close failed (" + std::string(std::strerror(errno)) +
                                                     ")", std::nullopt), true, false, 1);
        }
        return rc;
    } catch (const WriteFailure& e) {
        // stdout gone: the host is lost, stop now and leave the reason in the file; file failed: say so on stdout
        return finish(error_line("internal", e.what(), std::nullopt), !e.to_stdout, e.to_stdout, 1);
    } catch (const ProtocolFailure& e) {
        bool request_problem = e.code == "bad_request" || e.code == "missing_file" || e.code == "unsupported_backend" ||
                               (e.code == "width_not_priced" && !e.window_id);
        return finish(error_line(e.code, e.what(), e.window_id), true, true, request_problem ? 2 : 1);
    } catch (const std::exception& e) {
        return finish(error_line("internal", e.what(), std::nullopt), true, true, 1);
    }
}

std::string dirname_of(const std::string& path) {
    auto slash = path.rfind('/');
    return slash == std::string::npos ? "." : path.substr(0, slash);
}

}  // namespace

// --pid-file: this process's id, so a host can find and stop a runner that outlived its connection.
struct PidFile {
    std::string path;
    explicit PidFile(std::string p) : path(std::move(p)) {
        if (path.empty()) return;
        std::string tmp = path + ".tmp";
        std::ofstream(tmp) << ::getpid() << " as2d_runner\n";
        std::rename(tmp.c_str(), path.c_str());
    }
    ~PidFile() {
        if (path.empty()) return;
        std::ifstream in(path);
        long pid = 0;
        if (in >> pid && pid == static_cast<long>(::getpid())) std::remove(path.c_str());
    }
};

int main(int argc, char** argv) {
    // A broken pipe is an EPIPE write error, not a signal: the runner then stops with its reason in
    // the output file (PROTOCOL.md: the host is gone, so the run is over).
    std::signal(SIGPIPE, SIG_IGN);
    std::string request, output, batch, pid_file;
    for (int i = 1; i < argc; ++i) {
        std::string a = argv[i];
        if ((a == "--request" || a == "--output" || a == "--batch" || a == "--pid-file") && i + 1 < argc) {
            (a == "--request" ? request : a == "--output" ? output : a == "--batch" ? batch : pid_file) = argv[++i];
        } else {
            last_line(nullptr, error_line("bad_request", "usage: as2d_runner --request <request.json> [--output "
                                                         "<out.jsonl>] [--pid-file <path>] | --batch <requests.jsonl>; got '" +
                                                             a + "'", std::nullopt), true, false);
            return 2;
        }
    }
    // The JSONL stream keeps stdout to itself: whatever a model library prints there (MNN announces
    // the CPU's features) goes to stderr instead. Every build does this, not only MNN builds, so the
    // reference build that the host tests run writes through the same copied descriptor as a phone.
    if (int copy = ::dup(1); copy >= 0 && ::dup2(2, 1) >= 0) protocol_fd = copy;
    PidFile pid(pid_file);
    std::string path = batch.empty() ? request : batch;
    std::ifstream in(path);
    if (path.empty() || !in) {
        last_line(nullptr, error_line(path.empty() ? "bad_request" : "missing_file",
                                      path.empty() ? "usage: as2d_runner --request <request.json>"
                                                   : "request: cannot read " + path, std::nullopt), true, false);
        return 2;
    }
    if (batch.empty()) {
        std::stringstream ss;
        ss << in.rdbuf();
        return serve(ss.str(), dirname_of(path), output, false);
    }
    int worst = 0;
    std::string line;
    while (std::getline(in, line))
        if (!line.empty()) worst = std::max(worst, serve(line, dirname_of(path), "", true));
    return worst;
}

#include "mnn_folder.hpp"

#include <fstream>
#include <set>
#include <sstream>

#include "../npy.hpp"

namespace as2d {

namespace {

Json read_json(const std::string& path, const std::string& what) {
    std::ifstream in(path);
    if (!in) throw ProtocolFailure("missing_file", what + ": cannot read " + path + " (push the model folder again)");
    std::stringstream ss;
    ss << in.rdbuf();
    try {
        return Json::parse(ss.str());
    } catch (const JsonError& e) {
        throw ProtocolFailure("missing_file", what + ": " + path + " is not JSON (" + e.what() +
                                                  "); push the model folder again");
    }
}

bool exists(const std::string& path) { return std::ifstream(path).good(); }

// The roles a request loads: the target, and the drafter (serial schemes, calibration) or producer.
std::vector<std::string> roles_of(const Request& r) {
    std::vector<std::string> roles{"target"};
    if (r.mode == "calibrate") {
        if (r.models.count("drafter")) roles.push_back("drafter");
    } else if (r.scheme != "target_only") {
        roles.push_back(is_decoupled(r.scheme) ? "producer" : "drafter");
    }
    return roles;
}

void check_spec(const ModelSpec& m, const std::string& role) {
    if (m.backend != "cpu" && m.backend != "opencl" && m.backend != "vulkan")
        throw ProtocolFailure("unsupported_backend", "models." + role + ".backend '" + m.backend +
                                                         "': the MNN engine runs cpu, opencl or vulkan");
    static const std::set<std::string> precisions = {"low", "normal", "high", "fp32", "fp16", "int8"};
    if (!precisions.count(m.precision))
        throw ProtocolFailure("unsupported_backend", "models." + role + ".precision '" + m.precision +
                                                         "': choose low, normal, high, fp32, fp16 or int8");
}

void check_features(const WindowSpec& w, size_t i, const MnnFolder& target) {
    const std::string what = "windows[" + std::to_string(i) + "].features";
    if (w.features.empty())
        throw ProtocolFailure("bad_request", "request field '" + what + "': the Whisper target on MNN reads log-mel "
                                             "features (the host sends them with phone.runner=cpp)", w.window_id);
    NpyArray a;
    try {
        a = read_npy_f32(w.features, "request field '" + what + "'", /*header_only=*/true);
    } catch (ProtocolFailure& e) {
        e.window_id = w.window_id;
        throw;
    }
    std::vector<int64_t> want{1, target.mel_bins, target.frames};
    if (a.shape != want && a.shape != std::vector<int64_t>(want.begin() + 1, want.end())) {
        std::string got;
        for (int64_t d : a.shape) got += (got.empty() ? "" : ", ") + std::to_string(d);
        throw ProtocolFailure("bad_request", "request field '" + what + "': shape (" + got + "); the target at " +
                                                 target.dir + " takes (1, " + std::to_string(target.mel_bins) + ", " +
                                                 std::to_string(target.frames) + ")", w.window_id);
    }
}

}  // namespace

MnnFolder mnn_folder(const Request& r, const std::string& role) {
    auto it = r.models.find(role);
    if (it == r.models.end()) throw ProtocolFailure("bad_request", "request field 'models." + role + "': missing");
    const ModelSpec& m = it->second;
    MnnFolder f;
    f.dir = !m.dir.empty() && m.dir[0] == '/' ? m.dir : r.base_dir + "/" + m.dir;
    if (m.dir.empty() || !exists(f.dir + "/config.json"))
        throw ProtocolFailure("missing_file", "models." + role + ".dir: no MNN model at " + f.dir +
                                                  " (config.json missing; push the exported model first)");
    f.whisper = exists(f.dir + "/as2d_mnn.json");
    if (!f.whisper) return f;
    for (const char* name : {"encoder.mnn", "decoder.mnn", "as2d_whisper.json"})
        if (!exists(f.dir + "/" + name))
            throw ProtocolFailure("missing_file", "models." + role + ".dir: " + f.dir + "/" + name +
                                                      " missing (a Whisper export holds encoder.mnn, decoder.mnn and "
                                                      "as2d_whisper.json; push the export folder again)");
    Json cfg = read_json(f.dir + "/config.json", "models." + role + ".dir");
    for (const char* key : {"vocab_size", "num_mel_bins", "max_source_positions"})
        if (!cfg.get(key) || !cfg.get(key)->is_int())
            throw ProtocolFailure("missing_file", "models." + role + ".dir: " + f.dir + "/config.json has no " + key);
    f.vocab_size = cfg.get("vocab_size")->as_int("vocab_size");
    f.mel_bins = cfg.get("num_mel_bins")->as_int("num_mel_bins");
    f.frames = 2 * cfg.get("max_source_positions")->as_int("max_source_positions");
    return f;
}

void check_mnn_request(const Request& r) {
    std::vector<MnnFolder> folders;
    for (const std::string& role : roles_of(r)) {
        auto it = r.models.find(role);
        if (it == r.models.end()) throw ProtocolFailure("bad_request", "request field 'models." + role + "': missing");
        check_spec(it->second, role);
        folders.push_back(mnn_folder(r, role));
    }
    const MnnFolder& target = folders[0];
    for (size_t h = 1; h < folders.size(); ++h)
        if (folders[h].whisper != target.whisper || folders[h].vocab_size != target.vocab_size)
            throw ProtocolFailure("unsupported_backend", "models." + roles_of(r)[h] + ": " + folders[h].dir +
                                                             " has another vocabulary than the target at " + target.dir +
                                                             "; the C++ runner publishes token ids, so a cross-vocabulary "
                                                             "producer (Tok_T) runs in the Python runner only");
    if (r.windows.empty())
        throw ProtocolFailure("bad_request", "request field 'windows': a real engine needs a window to run on");
    const size_t n = r.mode == "calibrate" ? 1 : r.windows.size();
    for (size_t i = 0; i < n; ++i) {
        const WindowSpec& w = r.windows[i];
        if (target.whisper) {
            check_features(w, i, target);
            for (Token t : w.prompt)
                if (t >= target.vocab_size)
                    throw ProtocolFailure("bad_request", "request field 'windows[" + std::to_string(i) + "].prompt': id " +
                                                             std::to_string(t) + " outside the target's vocabulary",
                                          w.window_id);
        } else if (w.prompt.empty()) {
            throw ProtocolFailure("bad_request", "request field 'windows[" + std::to_string(i) + "].prompt': the MNN "
                                                 "LLM engine needs the prompt token ids", w.window_id);
        }
        if (target.whisper && w.traj.eos_id && *w.traj.eos_id >= target.vocab_size)
            throw ProtocolFailure("bad_request", "request field 'windows[" + std::to_string(i) + "].eos_id': " +
                                                     std::to_string(*w.traj.eos_id) + " outside the target's vocabulary",
                                  w.window_id);
    }
}

}  // namespace as2d

// phone_runner protocol v1 (phone_runner/PROTOCOL.md): the request in, JSON Lines out.
//
// Every output line carries "v": 1 and a "type"; each is written whole and flushed, to stdout
// and to the output file, so a runner killed mid-run leaves only complete lines behind.
#pragma once

#include <cstdio>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "json.hpp"
#include "pricing.hpp"
#include "run.hpp"
#include "schemes/scheme.hpp"
#include "virtual_clock.hpp"

namespace as2d {

constexpr int PROTOCOL_VERSION = 1;
constexpr const char* RUNNER_VERSION = "0.1.0";

// A failure the protocol names: code is one of bad_request, missing_file, unsupported_backend,
// width_not_priced, exactness, internal.
struct ProtocolFailure : std::runtime_error {
    ProtocolFailure(std::string code, const std::string& msg, std::optional<std::string> window = std::nullopt)
        : std::runtime_error(msg), code(std::move(code)), window_id(std::move(window)) {}
    std::string code;
    std::optional<std::string> window_id;
};

struct ModelSpec {
    std::string dir, format = "reference", name, backend = "cpu", precision = "normal";
    int threads = 1;
    std::vector<int> cpus;  // CPU placement (affinity); empty: the OS decides
};

struct Request {
    Json raw;
    std::string run_id, mode, scheme, config;
    SchemeSettings settings;
    std::string engine_kind, clock = "real", drain = "boundary";
    std::map<std::string, ModelSpec> models;
    std::string producer_source;
    int batch_tokens = 8;
    std::vector<WindowSpec> windows;
    int repetitions = 1, warmups = 0, max_output = 224;
    std::optional<Pricing> pricing;
    std::string output;
    std::string base_dir;  // the request file's folder: relative paths resolve against it
};

// Parse and check a request; a problem throws ProtocolFailure("bad_request", ...) naming the field.
Request parse_request(const Json& j, const std::string& base_dir);

// A line that could not be written whole: fatal for the run (PROTOCOL.md: write errors end it).
// ``to_stdout``: the host's stream is gone (broken pipe, host lost); otherwise the output file failed.
struct WriteFailure : std::runtime_error {
    WriteFailure(const std::string& what, bool to_stdout) : std::runtime_error(what), to_stdout(to_stdout) {}
    bool to_stdout;
};

// The descriptor protocol lines go to: a copy of stdout (main() makes it in every build, since a
// model library may print on stdout itself: MNN announces the CPU's features there); fd 1 then
// points at stderr. Its number is not 1, so a writer knows its stream by role, never by number.
extern int protocol_fd;

class LineWriter {
public:
    LineWriter(FILE* also_to_file) : file_(also_to_file) {}
    void write(const Json& line);  // one whole line to stdout (and the file), then flush
    static Json start(const char* type);  // {"v": 1, "type": ...}

private:
    // ``to_stdout``: this descriptor is the host's stream, which decides where a failure's error
    // line may still go (PROTOCOL.md: a broken stdout leaves it in the output file only).
    static void write_all(int fd, const std::string& text, const char* what, bool to_stdout);
    FILE* file_;
};

Json round_line(const std::string& window_id, int rep, const std::string& config, const RoundRecord& r);
Json stage_line(const std::string& window_id, int rep, const Stage& s);
Json publication_line(const std::string& window_id, int rep, const Batch& b);
Json window_line(const std::string& window_id, int rep, const std::string& config, const std::string& scheme,
                 const RunResult& r);
Json error_line(const std::string& code, const std::string& message, const std::optional<std::string>& window_id);

}  // namespace as2d

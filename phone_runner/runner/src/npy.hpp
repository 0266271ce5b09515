// A float32 .npy reader: the log-mel features the host sends an encoder-decoder target (PROTOCOL.md
// windows[i].features). Only what numpy.save writes for a C-ordered little-endian float32 array.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace as2d {

struct NpyArray {
    std::vector<int64_t> shape;
    std::vector<float> data;  // empty when only the header was read
};

// ``what`` names the input in errors (e.g. "windows[0].features"). A missing file throws
// ProtocolFailure("missing_file"), anything else wrong ("bad_request") names the header's problem.
NpyArray read_npy_f32(const std::string& path, const std::string& what, bool header_only = false);

}  // namespace as2d

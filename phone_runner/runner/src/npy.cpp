#include "npy.hpp"

#include <cstring>
#include <fstream>

#include "protocol.hpp"

namespace as2d {

namespace {

[[noreturn]] void bad_npy(const std::string& what, const std::string& path, const std::string& problem) {
    throw ProtocolFailure("bad_request", what + ": " + path + " " + problem +
                                             " (expected numpy.save of a C-ordered float32 array)");
}

// The value text after ``'key':`` in the header dict, up to the next top-level comma or brace.
std::string header_value(const std::string& header, const std::string& key) {
    auto at = header.find("'" + key + "':");
    if (at == std::string::npos) return "";
    size_t i = at + key.size() + 3, depth = 0, start = i;
    for (; i < header.size(); ++i) {
        char c = header[i];
        if (c == '(') ++depth;
        if (c == ')' && depth) --depth;
        if ((c == ',' || c == '}') && depth == 0) break;
    }
    std::string v = header.substr(start, i - start);
    auto b = v.find_first_not_of(' '), e = v.find_last_not_of(' ');
    return b == std::string::npos ? "" : v.substr(b, e - b + 1);
}

}  // namespace

NpyArray read_npy_f32(const std::string& path, const std::string& what, bool header_only) {
    std::ifstream in(path, std::ios::binary);
    if (!in) throw ProtocolFailure("missing_file", what + ": cannot read " + path + " (push the window's inputs)");
    char magic[8];
    if (!in.read(magic, 8) || std::memcmp(magic, "\x93NUMPY", 6) != 0) bad_npy(what, path, "is not a .npy file");
    uint32_t len = 0;
    unsigned char b[4] = {0, 0, 0, 0};
    int width = magic[6] == 1 ? 2 : 4;  // version 1: uint16 header length; 2 and 3: uint32
    if (!in.read(reinterpret_cast<char*>(b), width)) bad_npy(what, path, "has a cut header");
    for (int i = width - 1; i >= 0; --i) len = (len << 8) | b[i];
    if (len > (1u << 20)) bad_npy(what, path, "has an oversized header");
    std::string header(len, '\0');
    if (!in.read(&header[0], len)) bad_npy(what, path, "has a cut header");
    if (header_value(header, "descr") != "'<f4'") bad_npy(what, path, "is not little-endian float32");
    if (header_value(header, "fortran_order") != "False") bad_npy(what, path, "is Fortran-ordered");
    std::string shape = header_value(header, "shape");
    if (shape.size() < 2 || shape.front() != '(' || shape.back() != ')') bad_npy(what, path, "has no shape");
    NpyArray out;
    int64_t n = 1;
    for (size_t i = 1; i + 1 < shape.size();) {
        size_t j = shape.find(',', i);
        if (j == std::string::npos || j > shape.size() - 1) j = shape.size() - 1;
        std::string dim = shape.substr(i, j - i);
        auto s = dim.find_first_not_of(' ');
        if (s != std::string::npos) {
            char* end = nullptr;
            long long d = std::strtoll(dim.c_str() + s, &end, 10);
            if (d < 0 || (end && *end != '\0' && *end != ' ')) bad_npy(what, path, "has a bad shape " + shape);
            out.shape.push_back(d);
            n *= d;
        }
        i = j + 1;
    }
    if (header_only) return out;
    out.data.resize(static_cast<size_t>(n));
    if (n && !in.read(reinterpret_cast<char*>(out.data.data()), static_cast<std::streamsize>(n * sizeof(float))))
        bad_npy(what, path, "holds fewer values than its shape " + shape);
    return out;
}

}  // namespace as2d

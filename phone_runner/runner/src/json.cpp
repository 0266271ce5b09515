#include "json.hpp"

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>

namespace as2d {

namespace {

const char* kind_name(Json::Kind k) {
    switch (k) {
        case Json::Kind::Null: return "null";
        case Json::Kind::Bool: return "a boolean";
        case Json::Kind::Int: return "an integer";
        case Json::Kind::Double: return "a number";
        case Json::Kind::String: return "a string";
        case Json::Kind::Array: return "a list";
        case Json::Kind::Object: return "an object";
    }
    return "?";
}

[[noreturn]] void wrong(const std::string& what, const char* expected, Json::Kind got) {
    throw JsonError(what + ": expected " + expected + ", got " + kind_name(got));
}

class Parser {
public:
    explicit Parser(const std::string& t) : t_(t) {}

    Json document() {
        Json v = value(0);
        ws();
        if (p_ != t_.size()) fail("trailing characters after the JSON value");
        return v;
    }

private:
    [[noreturn]] void fail(const std::string& msg) {
        throw JsonError("not valid JSON at character " + std::to_string(p_) + ": " + msg);
    }
    void ws() {
        while (p_ < t_.size() && (t_[p_] == ' ' || t_[p_] == '\n' || t_[p_] == '\t' || t_[p_] == '\r')) ++p_;
    }
    bool take(const char* word) {
        size_t n = std::char_traits<char>::length(word);
        if (t_.compare(p_, n, word) == 0) { p_ += n; return true; }
        return false;
    }
    Json value(int depth) {
        if (depth > 200) fail("nesting deeper than 200");
        ws();
        if (p_ >= t_.size()) fail("unexpected end of input");
        char c = t_[p_];
        if (c == '{') return object(depth);
        if (c == '[') return array(depth);
        if (c == '"') return Json(string());
        if (take("null")) return Json();
        if (take("true")) return Json(true);
        if (take("false")) return Json(false);
        if (c == '-' || (c >= '0' && c <= '9')) return number();
        fail(std::string("unexpected character '") + c + "'");
    }
    Json object(int depth) {
        ++p_;
        Json o = Json::object();
        ws();
        if (p_ < t_.size() && t_[p_] == '}') { ++p_; return o; }
        for (;;) {
            ws();
            if (p_ >= t_.size() || t_[p_] != '"') fail("expected a string key");
            std::string k = string();
            ws();
            if (p_ >= t_.size() || t_[p_] != ':') fail("expected ':'");
            ++p_;
            o.set(k, value(depth + 1));
            ws();
            if (p_ < t_.size() && t_[p_] == ',') { ++p_; continue; }
            if (p_ < t_.size() && t_[p_] == '}') { ++p_; return o; }
            fail("expected ',' or '}'");
        }
    }
    Json array(int depth) {
        ++p_;
        Json a = Json::array();
        ws();
        if (p_ < t_.size() && t_[p_] == ']') { ++p_; return a; }
        for (;;) {
            a.push(value(depth + 1));
            ws();
            if (p_ < t_.size() && t_[p_] == ',') { ++p_; continue; }
            if (p_ < t_.size() && t_[p_] == ']') { ++p_; return a; }
            fail("expected ',' or ']'");
        }
    }
    void utf8(std::string& out, unsigned cp) {
        if (cp < 0x80) out += static_cast<char>(cp);
        else if (cp < 0x800) { out += static_cast<char>(0xC0 | (cp >> 6)); out += static_cast<char>(0x80 | (cp & 0x3F)); }
        else if (cp < 0x10000) {
            out += static_cast<char>(0xE0 | (cp >> 12)); out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
            out += static_cast<char>(0x80 | (cp & 0x3F));
        } else {
            out += static_cast<char>(0xF0 | (cp >> 18)); out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
            out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F)); out += static_cast<char>(0x80 | (cp & 0x3F));
        }
    }
    unsigned hex4() {
        if (p_ + 4 > t_.size()) fail("short \\u escape");
        unsigned v = 0;
        for (int i = 0; i < 4; ++i) {
            char h = t_[p_++];
            v <<= 4;
            if (h >= '0' && h <= '9') v |= h - '0';
            else if (h >= 'a' && h <= 'f') v |= h - 'a' + 10;
            else if (h >= 'A' && h <= 'F') v |= h - 'A' + 10;
            else fail("bad \\u escape");
        }
        return v;
    }
    std::string string() {
        ++p_;  // opening quote
        std::string out;
        while (p_ < t_.size()) {
            char c = t_[p_++];
            if (c == '"') return out;
            if (static_cast<unsigned char>(c) < 0x20) fail("control character in a string");
            if (c != '\\') { out += c; continue; }
            if (p_ >= t_.size()) break;
            char e = t_[p_++];
            switch (e) {
                case '"': out += '"'; break;
                case '\\': out += '\\'; break;
                case '/': out += '/'; break;
                case 'b': out += '\b'; break;
                case 'f': out += '\f'; break;
                case 'n': out += '\n'; break;
                case 'r': out += '\r'; break;
                case 't': out += '\t'; break;
                case 'u': {
                    unsigned cp = hex4();
                    if (cp >= 0xD800 && cp < 0xDC00 && take("\\u")) {
                        unsigned lo = hex4();
                        cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
                    }
                    utf8(out, cp);
                    break;
                }
                default: fail("bad escape");
            }
        }
        fail("unterminated string");
    }
    Json number() {
        size_t start = p_;
        bool integer = true;
        if (t_[p_] == '-') ++p_;
        while (p_ < t_.size()) {
            char c = t_[p_];
            if (c >= '0' && c <= '9') { ++p_; continue; }
            if (c == '.' || c == 'e' || c == 'E' || c == '+' || c == '-') { integer = false; ++p_; continue; }
            break;
        }
        std::string s = t_.substr(start, p_ - start);
        char* end = nullptr;
        if (integer) {
            errno = 0;
            long long v = std::strtoll(s.c_str(), &end, 10);
            if (*end == '\0' && errno == 0) return Json(static_cast<int64_t>(v));
        }
        double d = std::strtod(s.c_str(), &end);  // correctly rounded: the exact double Python wrote
        if (end == s.c_str() || *end != '\0') fail("bad number '" + s + "'");
        return Json(d);
    }

    const std::string& t_;
    size_t p_ = 0;
};

void dump_string(std::string& out, const std::string& s) {
    out += '"';
    for (unsigned char c : s) {
        switch (c) {
            case '"': out += "\\\""; break;
            case '\\': out += "\\\\"; break;
            case '\n': out += "\\n"; break;
            case '\r': out += "\\r"; break;
            case '\t': out += "\\t"; break;
            default:
                if (c < 0x20) {
                    char buf[8];
                    std::snprintf(buf, sizeof buf, "\\u%04x", c);
                    out += buf;
                } else {
                    out += static_cast<char>(c);
                }
        }
    }
    out += '"';
}

}  // namespace

bool Json::as_bool(const std::string& what) const {
    if (kind_ != Kind::Bool) wrong(what, "true/false", kind_);
    return b_;
}
int64_t Json::as_int(const std::string& what) const {
    if (kind_ != Kind::Int) wrong(what, "an integer", kind_);
    return i_;
}
double Json::as_double(const std::string& what) const {
    if (kind_ == Kind::Int) return static_cast<double>(i_);
    if (kind_ != Kind::Double) wrong(what, "a number", kind_);
    return d_;
}
const std::string& Json::as_string(const std::string& what) const {
    if (kind_ != Kind::String) wrong(what, "a string", kind_);
    return s_;
}
const Json::Array& Json::as_array(const std::string& what) const {
    if (kind_ != Kind::Array) wrong(what, "a list", kind_);
    return *a_;
}
const Json::Object& Json::as_object(const std::string& what) const {
    if (kind_ != Kind::Object) wrong(what, "an object", kind_);
    return *o_;
}

const Json* Json::get(const std::string& key) const {
    if (kind_ != Kind::Object) return nullptr;
    for (const auto& kv : *o_)
        if (kv.first == key) return &kv.second;
    return nullptr;
}

Json& Json::set(const std::string& key, Json value) {
    if (kind_ != Kind::Object) throw JsonError("set: not an object");
    for (auto& kv : *o_)
        if (kv.first == key) { kv.second = std::move(value); return *this; }
    o_->emplace_back(key, std::move(value));
    return *this;
}

Json& Json::push(Json value) {
    if (kind_ != Kind::Array) throw JsonError("push: not a list");
    a_->push_back(std::move(value));
    return *this;
}

std::string Json::dump() const {
    std::string out;
    dump_to(out);
    return out;
}

void Json::dump_to(std::string& out) const {
    switch (kind_) {
        case Kind::Null: out += "null"; break;
        case Kind::Bool: out += b_ ? "true" : "false"; break;
        case Kind::Int: out += std::to_string(i_); break;
        case Kind::Double: {
            if (!std::isfinite(d_)) throw JsonError("a non-finite number cannot be written as JSON");
            char buf[32];
            std::snprintf(buf, sizeof buf, "%.17g", d_);
            std::string s(buf);
            // Keep it a float for readers that care (1.0, not 1).
            if (s.find_first_of(".eEn") == std::string::npos) s += ".0";
            out += s;
            break;
        }
        case Kind::String: dump_string(out, s_); break;
        case Kind::Array: {
            out += '[';
            for (size_t i = 0; i < a_->size(); ++i) {
                if (i) out += ',';
                (*a_)[i].dump_to(out);
            }
            out += ']';
            break;
        }
        case Kind::Object: {
            out += '{';
            bool first = true;
            for (const auto& kv : *o_) {
                if (!first) out += ',';
                first = false;
                dump_string(out, kv.first);
                out += ':';
                kv.second.dump_to(out);
            }
            out += '}';
            break;
        }
    }
}

Json Json::parse(const std::string& text) { return Parser(text).document(); }

}  // namespace as2d

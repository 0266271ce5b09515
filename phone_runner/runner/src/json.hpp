// A tiny JSON value, reader and writer: just what the protocol needs (no dependency to vendor).
//
// Numbers keep whether they were written as integers. Doubles are written with 17 significant
// digits, so a value read back (by Python or by us) is the same IEEE double: the conformance test
// compares clock times to 1e-9 and the pricing must arrive bit for bit.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

namespace as2d {

struct JsonError : std::runtime_error {
    using std::runtime_error::runtime_error;
};

class Json {
public:
    enum class Kind { Null, Bool, Int, Double, String, Array, Object };
    using Array = std::vector<Json>;
    using Object = std::vector<std::pair<std::string, Json>>;  // insertion order, like Python dicts

    Json() = default;
    Json(std::nullptr_t) {}
    Json(bool b) : kind_(Kind::Bool), b_(b) {}
    Json(int i) : kind_(Kind::Int), i_(i) {}
    Json(int64_t i) : kind_(Kind::Int), i_(i) {}
    Json(double d) : kind_(Kind::Double), d_(d) {}
    Json(const char* s) : kind_(Kind::String), s_(s) {}
    Json(std::string s) : kind_(Kind::String), s_(std::move(s)) {}
    Json(Array a) : kind_(Kind::Array), a_(std::make_shared<Array>(std::move(a))) {}
    static Json object() { Json j; j.kind_ = Kind::Object; j.o_ = std::make_shared<Object>(); return j; }
    static Json array() { return Json(Array{}); }
    template <class T> static Json ints(const std::vector<T>& v) {
        Array a;
        for (auto x : v) a.emplace_back(static_cast<int64_t>(x));
        return Json(std::move(a));
    }
    static Json nums(const std::vector<double>& v) {
        Array a;
        for (double x : v) a.emplace_back(x);
        return Json(std::move(a));
    }

    Kind kind() const { return kind_; }
    bool is_null() const { return kind_ == Kind::Null; }
    bool is_number() const { return kind_ == Kind::Int || kind_ == Kind::Double; }
    bool is_int() const { return kind_ == Kind::Int; }
    bool is_string() const { return kind_ == Kind::String; }
    bool is_array() const { return kind_ == Kind::Array; }
    bool is_object() const { return kind_ == Kind::Object; }
    bool is_bool() const { return kind_ == Kind::Bool; }

    // Typed access; ``what`` names the field in the error (e.g. "request field 'windows[0].reference'").
    bool as_bool(const std::string& what) const;
    int64_t as_int(const std::string& what) const;
    double as_double(const std::string& what) const;
    const std::string& as_string(const std::string& what) const;
    const Array& as_array(const std::string& what) const;
    const Object& as_object(const std::string& what) const;

    // Object access: ``get`` returns nullptr when absent; ``set`` appends or replaces.
    const Json* get(const std::string& key) const;
    bool has(const std::string& key) const { return get(key) != nullptr; }
    Json& set(const std::string& key, Json value);
    Json& push(Json value);  // arrays

    std::string dump() const;  // compact, one line
    static Json parse(const std::string& text);

private:
    void dump_to(std::string& out) const;
    Kind kind_ = Kind::Null;
    bool b_ = false;
    int64_t i_ = 0;
    double d_ = 0.0;
    std::string s_;
    std::shared_ptr<Array> a_;
    std::shared_ptr<Object> o_;
};

}  // namespace as2d

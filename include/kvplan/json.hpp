#pragma once

// Reading JSON files the way every kvplan reader does: the one header that includes nlohmann/json.
// A file that cannot be read or is larger than a config ever is, text that does not parse (with
// its line and column), a missing field, a field of the wrong type or a size that is zero or
// negative: each throws InvalidInput whose message names the file, the JSON path
// (`text_config.num_key_value_heads`), what was expected and what was found. Fields a reader does
// not ask for are ignored, unless it declares the keys it knows (JsonReader::only_keys): then an
// unknown key is an error naming the nearest known one.

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <initializer_list>
#include <iterator>
#include <limits>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "detail/input_file.hpp"
#include "detail/nearest.hpp"
#include "error.hpp"
#include "input_limits.hpp"

namespace kvplan {

/// A parsed JSON document (nlohmann::json).
using Json = nlohmann::json;

namespace detail {

/// A short description of a JSON value for "found ..." in messages: `the string "8"`,
/// `the number -3`, `null`, `an array`.
[[nodiscard]] inline std::string describe_json(const Json& v) {
    switch (v.type()) {
        case Json::value_t::null:
            return "null";
        case Json::value_t::boolean:
            return v.get<bool>() ? "true" : "false";
        case Json::value_t::string: {
            std::string s = v.get<std::string>();
            if (s.size() > 40) s = s.substr(0, 37) + "...";
            return "the string \"" + s + "\"";
        }
        case Json::value_t::number_integer:
        case Json::value_t::number_unsigned:
        case Json::value_t::number_float:
            return "the number " + v.dump();
        case Json::value_t::array:
            return "an array of " + std::to_string(v.size());
        case Json::value_t::object:
            return "an object";
        default:
            return "an unsupported value";
    }
}

/// `s` as a message shows it: control characters as '?' (a message is one line), cut to
/// `max` characters.
[[nodiscard]] inline std::string printable(std::string_view s, std::size_t max = 40) {
    std::string out(s.substr(0, s.size() > max ? max - 3 : s.size()));
    for (char& c : out)
        if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) c = '?';
    if (s.size() > max) out += "...";
    return out;
}

/// A number as a message shows it: 450, 0.9, 1.5e+20 (shortest of six significant digits).
[[nodiscard]] inline std::string number_text(double v) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%g", v);
    return buf;
}

/// `s` in lower case (ASCII).
[[nodiscard]] inline std::string lower_ascii(std::string_view s) {
    std::string out(s);
    for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return out;
}

}  // namespace detail

/// What a JSON reader accepts beyond strict JSON.
enum class JsonNumbers : std::uint8_t {
    strict,  ///< RFC 8259 numbers only
    /// Also Infinity, -Infinity and NaN outside strings, as Python's json module writes them (and
    /// transformers' config files hold them: Nemotron-H's time_step_limit is [0.0, Infinity]);
    /// read as the doubles Python reads, as Hugging Face reads them.
    python,
};

namespace detail {

// Stand-ins for Python's non-finite literals while nlohmann parses: strings no real config holds.
inline constexpr std::string_view python_literals[] = {"-Infinity", "Infinity", "NaN"};
inline constexpr std::string_view python_literal_marks[] = {
    "\\u0001kvplan:-Infinity", "\\u0001kvplan:Infinity", "\\u0001kvplan:NaN"};

/// `text` with every Infinity, -Infinity and NaN outside strings replaced by a marked string.
[[nodiscard]] inline std::string mark_python_literals(const std::string& text) {
    std::string out;
    out.reserve(text.size());
    bool in_string = false;
    for (std::size_t i = 0; i < text.size(); ++i) {
        const char c = text[i];
        if (in_string) {
            out.push_back(c);
            if (c == '\\' && i + 1 < text.size())
                out.push_back(text[++i]);
            else if (c == '"')
                in_string = false;
            continue;
        }
        if (c == '"') in_string = true;
        bool replaced = false;
        for (std::size_t k = 0; k < 3 && !replaced; ++k) {
            if (text.compare(i, python_literals[k].size(), python_literals[k]) == 0) {
                out.append("\"").append(python_literal_marks[k]).append("\"");
                i += python_literals[k].size() - 1;
                replaced = true;
            }
        }
        if (!replaced) out.push_back(c);
    }
    return out;
}

}  // namespace detail

namespace detail {

/// Builds a JSON document from nlohmann's SAX events, refusing what nlohmann's own parser lets
/// through: a key twice in one object (the last one would win while a reader of the file sees
/// the first) and nesting deeper than max_json_depth. Restores the marks of
/// mark_python_literals as the doubles they stand for.
class StrictJsonBuilder {
   public:
    explicit StrictJsonBuilder(Json& root) : root_(root) {}

    bool null() { return value(nullptr); }
    bool boolean(bool v) { return value(v); }
    bool number_integer(Json::number_integer_t v) { return value(v); }
    bool number_unsigned(Json::number_unsigned_t v) { return value(v); }
    bool number_float(Json::number_float_t v, const Json::string_t&) { return value(v); }
    bool string(Json::string_t& v) {
        if (v.size() > 8 && v[0] == '\x01' && v.compare(1, 7, "kvplan:") == 0) {
            const std::string_view lit = std::string_view(v).substr(8);
            const double inf = std::numeric_limits<double>::infinity();
            return value(lit == "NaN"        ? std::numeric_limits<double>::quiet_NaN()
                         : lit == "Infinity" ? inf
                                             : -inf);
        }
        return value(std::move(v));
    }
    bool binary(Json::binary_t& v) { return value(std::move(v)); }
    bool start_object(std::size_t) { return open(Json::object()); }
    bool start_array(std::size_t) { return open(Json::array()); }
    bool end_object() { return close(); }
    bool end_array() { return close(); }
    bool key(Json::string_t& k) {
        Json& object = *stack_.back();
        if (object.contains(k)) {
            error_field_ = path(k);
            error_ = "each key once in an object (a reader would take the last)";
            found_ = std::string("the key '").append(printable(k)).append("' a second time");
            return false;
        }
        keys_.back() = k;
        slot_ = &object[k];
        return true;
    }
    bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception& e) {
        // nlohmann's message: "[json.exception.parse_error.101] parse error at line 3, column
        // 5: syntax error while parsing value - invalid literal; last read: '...'". The line,
        // the column and what was wrong are kept; the bytes read are not (the file may be one
        // the user did not name).
        std::string msg = e.what();
        const auto at = msg.find("at line");
        if (at != std::string::npos) msg = msg.substr(at + 3);
        if (const auto last = msg.find("; last read"); last != std::string::npos) {
            const auto expected = msg.find("; expected", last + 1);
            msg.erase(last, expected == std::string::npos ? std::string::npos : expected - last);
        }
        error_field_ = "(document)";
        error_ = "valid JSON";
        found_ = msg;
        return false;
    }

    /// Throws InvalidInput naming `where` with what stopped the parse.
    [[noreturn]] void fail(std::string_view where) const {
        throw_field_error<InvalidInput>(where, error_field_, error_, found_);
    }

   private:
    /// The JSON path of `key` in the innermost object: "text_config.head_dim", "a[2].b".
    [[nodiscard]] std::string path(std::string_view key) const {
        // Appended piece by piece: GCC 12 warns falsely on "[" + std::to_string(...) once
        // inlined (-Wrestrict, GCC bug 105651).
        std::string p;
        for (std::size_t i = 0; i + 1 < stack_.size(); ++i) {
            if (stack_[i]->is_array()) {
                p.append(1, '[').append(std::to_string(stack_[i]->size() - 1)).append(1, ']');
            } else {
                if (!p.empty()) p.append(1, '.');
                p.append(printable(keys_[i]));
            }
        }
        if (!p.empty()) p.append(1, '.');
        return p.append(printable(key));
    }

    Json* place(Json&& v) {
        if (stack_.empty()) {
            root_ = std::move(v);
            return &root_;
        }
        Json& top = *stack_.back();
        if (top.is_array()) {
            top.push_back(std::move(v));
            return &top.back();
        }
        *slot_ = std::move(v);
        return slot_;
    }
    template <class V>
    bool value(V&& v) {
        place(Json(std::forward<V>(v)));
        return true;
    }
    bool open(Json&& container) {
        if (stack_.size() >= max_json_depth) {
            error_field_ = "(document)";
            error_ =
                "objects and arrays nested at most " + std::to_string(max_json_depth) + " deep";
            found_ = "deeper nesting";
            return false;
        }
        stack_.push_back(place(std::move(container)));
        keys_.emplace_back();
        return true;
    }
    bool close() {
        stack_.pop_back();
        keys_.pop_back();
        return true;
    }

    Json& root_;
    std::vector<Json*> stack_;
    std::vector<std::string> keys_;  ///< per open container: the key being read (objects)
    Json* slot_ = nullptr;           ///< the value of the key just read
    std::string error_field_, error_, found_;
};

}  // namespace detail

/// Parses `text`, a JSON document from `where` (a file name, for messages), with the numbers
/// `numbers` allows: the one JSON parser of every kvplan reader. Throws InvalidInput naming
/// `where` for text that is not one JSON document (with the line and column of the first error,
/// and none of the text), a key given twice in one object (with its JSON path) and nesting
/// deeper than max_json_depth.
[[nodiscard]] inline Json parse_json_text(std::string_view text, std::string_view where,
                                          JsonNumbers numbers = JsonNumbers::strict) {
    // nlohmann's parser takes a NUL for the end of the text: whatever follows one would be
    // ignored. Valid JSON holds none (inside a string it is written \u0000).
    if (const auto nul = text.find('\0'); nul != std::string_view::npos) {
        const std::string_view before = text.substr(0, nul);
        const auto line = static_cast<std::size_t>(std::count(before.begin(), before.end(), '\n'));
        const auto last_nl = before.rfind('\n');
        const std::size_t column = nul - (last_nl == std::string_view::npos ? 0 : last_nl + 1);
        detail::throw_field_error<InvalidInput>(where, "(document)", "valid JSON",
                                                "a NUL byte at line " + std::to_string(line + 1) +
                                                    ", column " + std::to_string(column + 1));
    }
    Json root;
    detail::StrictJsonBuilder builder(root);
    const bool ok =
        numbers == JsonNumbers::strict
            ? Json::sax_parse(text, &builder)
            : Json::sax_parse(detail::mark_python_literals(std::string(text)), &builder);
    if (!ok) builder.fail(where);
    return root;
}

/// Reads and parses a JSON file of at most `max_bytes`, with the numbers `numbers` allows. Throws
/// InvalidInput naming the file when it is missing, unreadable, larger than `max_bytes` (checked
/// before reading a regular file; a pipe is read no further than `max_bytes` + 1), or not one
/// JSON document (parse_json_text). The file is opened once (detail::read_input_text).
[[nodiscard]] inline Json read_json_file(const std::filesystem::path& file,
                                         JsonNumbers numbers = JsonNumbers::strict,
                                         std::uint64_t max_bytes = max_json_file_bytes) {
    InputLimit limit = json_file_limit;
    limit.max_bytes = max_bytes;
    return parse_json_text(detail::read_input_text(file, limit),
                           detail::without_controls(file.string()), numbers);
}

/// Reads and parses a JSON file of kind `limit` (bench_result_limit...), as read_json_file does.
[[nodiscard]] inline Json read_json_file(const std::filesystem::path& file, JsonNumbers numbers,
                                         const InputLimit& limit) {
    return parse_json_text(detail::read_input_text(file, limit),
                           detail::without_controls(file.string()), numbers);
}

/// A field where two JSON documents differ: its path key by key, and its value in each (nullptr
/// where absent). The values point into the documents compared.
struct JsonFieldChange {
    std::vector<std::string> steps;
    const Json* before = nullptr;
    const Json* after = nullptr;
};

/// The fields where `before` and `after` differ, in key order: objects are walked key by key,
/// anything else (arrays included, and an object only one side has that is empty) is compared
/// whole. The one walk over two documents that `kvplan diff` and `kvplan check --baseline` share;
/// a list, not recursion, so its depth costs no stack.
[[nodiscard]] inline std::vector<JsonFieldChange> json_field_changes(const Json& before,
                                                                     const Json& after) {
    std::vector<JsonFieldChange> out;
    std::vector<JsonFieldChange> todo{{{}, &before, &after}};
    while (!todo.empty()) {
        JsonFieldChange item = std::move(todo.back());
        todo.pop_back();
        const Json* a = item.before;
        const Json* b = item.after;
        const auto object_or_absent = [](const Json* v) { return v == nullptr || v->is_object(); };
        const bool lone_empty = (a == nullptr && b->empty()) || (b == nullptr && a->empty());
        if (!object_or_absent(a) || !object_or_absent(b) || lone_empty) {
            // Compared whole only here, at a leaf: two objects are walked, never compared.
            if (a == nullptr || b == nullptr || *a != *b) out.push_back(std::move(item));
            continue;
        }
        std::vector<std::string> keys;
        for (const Json* side : {a, b})
            if (side != nullptr)
                for (auto it = side->begin(); it != side->end(); ++it) keys.push_back(it.key());
        std::sort(keys.begin(), keys.end());
        keys.erase(std::unique(keys.begin(), keys.end()), keys.end());
        const auto child = [](const Json* side, const std::string& k) -> const Json* {
            if (side == nullptr) return nullptr;
            const auto it = side->find(k);
            return it == side->end() ? nullptr : &*it;
        };
        // Pushed last key first, so that they come off the list in key order. The first key takes
        // this path's steps, the others a copy: a chain of one-key objects n deep costs n steps,
        // not n^2 / 2 (10,000 deep: 50 million string copies).
        for (auto k = keys.rbegin(); k != keys.rend(); ++k) {
            JsonFieldChange next{{}, child(a, *k), child(b, *k)};
            if (std::next(k) == keys.rend())
                next.steps = std::move(item.steps);
            else
                next.steps = item.steps;
            next.steps.push_back(*k);
            todo.push_back(std::move(next));
        }
    }
    return out;
}

/// One JSON object being read, with the file it came from and its path inside the document, so
/// every error names both. Asking for a field checks its type; fields never asked for are ignored.
class JsonReader {
   public:
    /// Reads `object` from `source` (a file name, or a name for messages) at JSON path `path`
    /// ("" for the root). Throws InvalidInput if `object` is not an object.
    JsonReader(const Json& object, std::string source, std::string path = "")
        : j_(&object), source_(std::move(source)), path_(std::move(path)) {
        if (!object.is_object())
            detail::throw_field_error<InvalidInput>(source_, path_.empty() ? "(document)" : path_,
                                                    "a JSON object", detail::describe_json(object));
    }

    [[nodiscard]] const std::string& source() const noexcept { return source_; }
    [[nodiscard]] const Json& json() const noexcept { return *j_; }

    /// The JSON path of `key` in this object: "text_config.head_dim".
    [[nodiscard]] std::string path(std::string_view key) const {
        return path_.empty() ? std::string(key) : path_ + "." + std::string(key);
    }

    /// Throws InvalidInput for `key`: "source: path: expected ..., found ...".
    [[noreturn]] void fail(std::string_view key, std::string_view expected,
                           std::string_view found) const {
        detail::throw_field_error<InvalidInput>(source_, path(key), expected, found);
    }

    /// The value of `key`, or nullptr when absent.
    [[nodiscard]] const Json* find(std::string_view key) const {
        const auto it = j_->find(key);
        return it == j_->end() ? nullptr : &*it;
    }
    /// Whether `key` is present and not null.
    [[nodiscard]] bool has(std::string_view key) const {
        const Json* v = find(key);
        return v != nullptr && !v->is_null();
    }
    /// Whether `key` is present (null included).
    [[nodiscard]] bool contains(std::string_view key) const { return find(key) != nullptr; }

    /// The first of `keys` present and not null, or nullopt: aliases such as n_layer for
    /// num_hidden_layers.
    [[nodiscard]] std::optional<std::string_view> first_present(
        std::initializer_list<std::string_view> keys) const {
        for (std::string_view k : keys)
            if (has(k)) return k;
        return std::nullopt;
    }

    /// A required integer >= 1 (or >= 0 if `allow_zero`) and <= `max`.
    [[nodiscard]] std::uint64_t positive_integer(
        std::string_view key, std::uint64_t max = std::numeric_limits<std::uint64_t>::max()) const {
        const Json* v = find(key);
        if (v == nullptr) fail(key, expected_integer(false, max), "nothing (the field is missing)");
        return integer_value(key, *v, false, max);
    }
    /// An optional integer >= 1 and <= `max`: nullopt when absent or null.
    [[nodiscard]] std::optional<std::uint64_t> optional_positive_integer(
        std::string_view key, std::uint64_t max = std::numeric_limits<std::uint64_t>::max()) const {
        const Json* v = find(key);
        if (v == nullptr || v->is_null()) return std::nullopt;
        return integer_value(key, *v, false, max);
    }
    /// An optional integer >= 0 and <= `max`: nullopt when absent or null.
    [[nodiscard]] std::optional<std::uint64_t> optional_count(
        std::string_view key, std::uint64_t max = std::numeric_limits<std::uint64_t>::max()) const {
        const Json* v = find(key);
        if (v == nullptr || v->is_null()) return std::nullopt;
        return integer_value(key, *v, true, max);
    }

    /// A required number > 0 (integer or not).
    [[nodiscard]] double positive_number(std::string_view key) const {
        const Json* v = find(key);
        if (v == nullptr) fail(key, "a number > 0", "nothing (the field is missing)");
        return number_value(key, *v);
    }
    /// A number > 0, or nullopt when the field is null; absent is an error (the field is required,
    /// null being its way of saying "none").
    [[nodiscard]] std::optional<double> positive_number_or_null(std::string_view key) const {
        const Json* v = find(key);
        if (v == nullptr) fail(key, "a number > 0 or null", "nothing (the field is missing)");
        if (v->is_null()) return std::nullopt;
        return number_value(key, *v);
    }
    /// An optional number > 0: nullopt when absent or null.
    [[nodiscard]] std::optional<double> optional_positive_number(std::string_view key) const {
        const Json* v = find(key);
        if (v == nullptr || v->is_null()) return std::nullopt;
        return number_value(key, *v);
    }

    /// An optional boolean: nullopt when absent or null.
    [[nodiscard]] std::optional<bool> optional_boolean(std::string_view key) const {
        const Json* v = find(key);
        if (v == nullptr || v->is_null()) return std::nullopt;
        if (!v->is_boolean()) fail(key, "true or false", detail::describe_json(*v));
        return v->get<bool>();
    }

    /// A required non-empty string.
    [[nodiscard]] std::string string(std::string_view key) const {
        const Json* v = find(key);
        if (v == nullptr) fail(key, "a string", "nothing (the field is missing)");
        return string_value(key, *v);
    }
    /// An optional string: nullopt when absent or null.
    [[nodiscard]] std::optional<std::string> optional_string(std::string_view key) const {
        const Json* v = find(key);
        if (v == nullptr || v->is_null()) return std::nullopt;
        return string_value(key, *v);
    }

    /// A required array; its elements are read with element_path().
    [[nodiscard]] const Json& array(std::string_view key) const {
        const Json* v = find(key);
        if (v == nullptr) fail(key, "an array", "nothing (the field is missing)");
        if (!v->is_array()) fail(key, "an array", detail::describe_json(*v));
        return *v;
    }
    /// An optional array: nullptr when absent or null.
    [[nodiscard]] const Json* optional_array(std::string_view key) const {
        const Json* v = find(key);
        if (v == nullptr || v->is_null()) return nullptr;
        if (!v->is_array()) fail(key, "an array", detail::describe_json(*v));
        return v;
    }
    /// An optional array of strings; throws naming the element that is not a string.
    [[nodiscard]] std::optional<std::vector<std::string>> optional_string_array(
        std::string_view key) const {
        const Json* a = optional_array(key);
        if (a == nullptr) return std::nullopt;
        std::vector<std::string> out;
        for (std::size_t i = 0; i < a->size(); ++i) {
            const Json& e = (*a)[i];
            if (!e.is_string()) fail(element(key, i), "a string", detail::describe_json(e));
            out.push_back(e.get<std::string>());
        }
        return out;
    }
    /// An optional array of integers >= 0; throws naming the element that is not one.
    [[nodiscard]] std::optional<std::vector<std::uint64_t>> optional_count_array(
        std::string_view key) const {
        const Json* a = optional_array(key);
        if (a == nullptr) return std::nullopt;
        std::vector<std::uint64_t> out;
        for (std::size_t i = 0; i < a->size(); ++i)
            out.push_back(integer_value(element(key, i), (*a)[i], true,
                                        std::numeric_limits<std::uint64_t>::max()));
        return out;
    }

    /// A required nested object.
    [[nodiscard]] JsonReader object(std::string_view key) const {
        const Json* v = find(key);
        if (v == nullptr) fail(key, "an object", "nothing (the field is missing)");
        return JsonReader(*v, source_, path(key));
    }
    /// An optional nested object: nullopt when absent or null.
    [[nodiscard]] std::optional<JsonReader> optional_object(std::string_view key) const {
        const Json* v = find(key);
        if (v == nullptr || v->is_null()) return std::nullopt;
        return JsonReader(*v, source_, path(key));
    }

    /// Throws InvalidInput for the first key of this object (in key order) that `known` does not
    /// list: "source: path.key: expected a key of `what` (k1, k2, ...), found the unknown key
    /// 'key'; did you mean 'k1'?". `hints` map other spellings (an engine's name for a field) to
    /// the key meant. Readers call it before reading, so that a misspelled required key is
    /// reported as unknown, with its nearest, rather than as missing.
    template <class Names>
    void only_keys(const Names& known, std::string_view what,
                   const std::vector<detail::NameHint>& hints = {}) const {
        for (const auto& item : j_->items())
            if (std::find(std::begin(known), std::end(known), item.key()) == std::end(known))
                unknown_key(item.key(), known, what, hints);
    }
    void only_keys(std::initializer_list<std::string_view> known, std::string_view what,
                   const std::vector<detail::NameHint>& hints = {}) const {
        only_keys<std::initializer_list<std::string_view>>(known, what, hints);
    }

    /// Throws InvalidInput for `key`, which this object's `known` keys do not include, naming the
    /// nearest of them (see only_keys).
    template <class Names>
    [[noreturn]] void unknown_key(std::string_view key, const Names& known, std::string_view what,
                                  const std::vector<detail::NameHint>& hints = {}) const {
        std::string expected = "a key of ";
        expected.append(what).append(" (");
        bool first = true;
        for (const auto& k : known) {
            if (!first) expected += ", ";
            expected.append(std::string_view(k));
            first = false;
        }
        expected += ")";
        std::string found = "the unknown key '";
        found.append(detail::printable(key)).append("'");
        found += detail::did_you_mean(key, known, hints);
        detail::throw_field_error<InvalidInput>(source_, path(detail::printable(key)), expected,
                                                found);
    }

    /// "key[i]", the name of element i of array `key`, relative to this object.
    [[nodiscard]] static std::string element(std::string_view key, std::size_t i) {
        return std::string(key) + "[" + std::to_string(i) + "]";
    }

   private:
    static std::string expected_integer(bool allow_zero, std::uint64_t max) {
        std::string e = allow_zero ? "an integer >= 0" : "a positive integer";
        if (max != std::numeric_limits<std::uint64_t>::max())
            e += " (at most " + std::to_string(max) + ")";
        return e;
    }

    std::uint64_t integer_value(std::string_view key, const Json& v, bool allow_zero,
                                std::uint64_t max) const {
        const std::string expected = expected_integer(allow_zero, max);
        if (v.is_number_unsigned()) {
            const std::uint64_t n = v.get<std::uint64_t>();
            if (n == 0 && !allow_zero) fail(key, expected, "0");
            if (n > max) fail(key, expected, std::to_string(n));
            return n;
        }
        if (v.is_number_integer()) {  // signed: built in code rather than parsed
            const std::int64_t n = v.get<std::int64_t>();
            if (n < 0 || (n == 0 && !allow_zero) || static_cast<std::uint64_t>(n) > max)
                fail(key, expected, std::to_string(n));
            return static_cast<std::uint64_t>(n);
        }
        fail(key, expected, detail::describe_json(v));
    }

    double number_value(std::string_view key, const Json& v) const {
        if (!v.is_number()) fail(key, "a number > 0", detail::describe_json(v));
        const double d = v.get<double>();
        if (!(d > 0.0)) fail(key, "a number > 0", v.dump());
        return d;
    }

    std::string string_value(std::string_view key, const Json& v) const {
        if (!v.is_string()) fail(key, "a string", detail::describe_json(v));
        return v.get<std::string>();
    }

    const Json* j_;
    std::string source_;
    std::string path_;
};

}  // namespace kvplan

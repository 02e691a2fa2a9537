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
#include <fstream>
#include <initializer_list>
#include <limits>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "detail/nearest.hpp"
#include "error.hpp"

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

/// The largest JSON file kvplan reads: 1 MiB. Configs are kilobytes (the largest bundled one,
/// a config.json or a GPU spec, is under 4 KB), and a CI gate reads files from the pull requests
/// it judges, so a larger file is refused before any of it is read: parsing costs memory several
/// times the file's size.
inline constexpr std::uint64_t max_json_file_bytes = std::uint64_t{1} << 20;

/// The largest Hugging Face config.json (or hf_quant_config.json) kvplan reads: 16 MiB. A quantized
/// checkpoint's config may list every module it quantizes (MiniMax-M3-NVFP4's config.json is 3.09
/// MB, 2.4 MB of it quantization_config); 16 MiB admits five times that and still bounds what a
/// parse costs.
inline constexpr std::uint64_t max_config_json_bytes = std::uint64_t{16} << 20;

/// Reads and parses a JSON file of at most `max_bytes`, with the numbers `numbers` allows. Throws
/// InvalidInput naming the file when it is missing, unreadable, larger than `max_bytes` (checked
/// before reading a regular file; a pipe is read no further than `max_bytes` + 1), or not JSON
/// (with the line and column of the first error).
[[nodiscard]] inline Json read_json_file(const std::filesystem::path& file,
                                         JsonNumbers numbers = JsonNumbers::strict,
                                         std::uint64_t max_bytes = max_json_file_bytes) {
    const std::string where = file.string();
    std::error_code ec;
    const auto status = std::filesystem::status(file, ec);
    if (!std::filesystem::exists(status))
        detail::throw_field_error<InvalidInput>(where, "file", "an existing JSON file",
                                                "no such file");
    if (std::filesystem::is_directory(status))
        detail::throw_field_error<InvalidInput>(where, "file", "a JSON file", "a directory");
    const auto too_large = [&](const std::string& found) {
        std::string limit = std::to_string(max_bytes) + " bytes";
        if (max_bytes % (std::uint64_t{1} << 20) == 0)
            limit = std::to_string(max_bytes >> 20) + " MiB (" + limit + ")";
        detail::throw_field_error<InvalidInput>(
            where, "file", "a JSON file of at most " + limit + ", as configs are kilobytes", found);
    };
    std::uint64_t size = 0;
    const bool regular = std::filesystem::is_regular_file(status);
    if (regular) {
        size = std::filesystem::file_size(file, ec);
        if (ec)
            detail::throw_field_error<InvalidInput>(where, "file", "a readable file", "no access");
        if (size > max_bytes) too_large("a file of " + std::to_string(size) + " bytes");
    }
    std::ifstream in(file, std::ios::binary);
    if (!in) detail::throw_field_error<InvalidInput>(where, "file", "a readable file", "no access");
    // Read at most max_bytes + 1, so that a file which grew since it was measured, or a pipe, is
    // refused rather than read whole.
    std::string text;
    std::uint64_t want = regular ? size : std::min<std::uint64_t>(max_bytes, 1U << 16);
    while (true) {
        const std::size_t have = text.size();
        const std::uint64_t room = max_bytes + 1 - have;
        const std::size_t chunk =
            static_cast<std::size_t>(std::min(std::max(want, std::uint64_t{1}), room));
        text.resize(have + chunk);
        in.read(text.data() + have, static_cast<std::streamsize>(chunk));
        text.resize(have + static_cast<std::size_t>(in.gcount()));
        if (text.size() > max_bytes) too_large("more than " + std::to_string(max_bytes) + " bytes");
        if (!in) break;
        want = text.size();  // a pipe: grow geometrically
    }
    if (in.bad())
        detail::throw_field_error<InvalidInput>(where, "file", "a readable file", "a read error");
    try {
        if (numbers == JsonNumbers::strict) return Json::parse(text);
        // The marks become doubles again as they are parsed.
        const Json::parser_callback_t restore = [](int, Json::parse_event_t event, Json& v) {
            if (event == Json::parse_event_t::value && v.is_string()) {
                const std::string& s = v.get_ref<const std::string&>();
                if (s.size() > 8 && s[0] == '\x01' && s.compare(1, 7, "kvplan:") == 0) {
                    const std::string_view lit = std::string_view(s).substr(8);
                    const double inf = std::numeric_limits<double>::infinity();
                    v = lit == "NaN"        ? std::numeric_limits<double>::quiet_NaN()
                        : lit == "Infinity" ? inf
                                            : -inf;
                }
            }
            return true;
        };
        return Json::parse(detail::mark_python_literals(text), restore);
    } catch (const Json::parse_error& e) {
        // nlohmann's message: "[json.exception.parse_error.101] parse error at line 3, column 5:
        // syntax error ..."; keep the part from "line".
        std::string msg = e.what();
        const auto at = msg.find("at line");
        if (at != std::string::npos) msg = msg.substr(at + 3);
        detail::throw_field_error<InvalidInput>(where, "(document)", "valid JSON", msg);
    }
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

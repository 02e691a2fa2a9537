#pragma once

// A reader for flat JSON objects: top-level keys with their values as text (strings decoded,
// nested objects and arrays kept as written). What trace lines and calibration profiles need,
// without a JSON library in the opt-in headers that use it. Not API.

#include <cctype>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "../error.hpp"
#include "../input_limits.hpp"
#include "text.hpp"

namespace kvplan::detail {

/// A JSON string starting at text[pos] == '"'; advances pos past the closing quote. Escapes are
/// decoded except \u, which is kept as written (trace keys and values are ASCII). The result views
/// `text` when there is nothing to decode, else `buf`.
[[nodiscard]] inline std::string_view json_string_view(std::string_view text, std::size_t& pos,
                                                       std::string_view where, std::string& buf) {
    const std::size_t start = pos + 1;
    for (std::size_t i = start; i < text.size(); ++i) {
        if (text[i] == '"') {
            pos = i + 1;
            return text.substr(start, i - start);
        }
        if (text[i] == '\\') break;
    }
    buf.clear();
    for (++pos; pos < text.size(); ++pos) {
        const char c = text[pos];
        if (c == '"') {
            ++pos;
            return buf;
        }
        if (c == '\\' && pos + 1 < text.size()) {
            const char e = text[++pos];
            switch (e) {
                case 'n':
                    buf.push_back('\n');
                    break;
                case 't':
                    buf.push_back('\t');
                    break;
                case 'r':
                    buf.push_back('\r');
                    break;
                case 'b':
                    buf.push_back('\b');
                    break;
                case 'f':
                    buf.push_back('\f');
                    break;
                case 'u':
                    buf.append("\\u");
                    break;
                default:
                    buf.push_back(e);
            }
        } else {
            buf.push_back(c);
        }
    }
    throw_field_error<InvalidInput>(where, "JSON", "a closing '\"'", "end of text");
}

/// As json_string_view, into a string of its own.
[[nodiscard]] inline std::string json_string(std::string_view text, std::size_t& pos,
                                             std::string_view where) {
    std::string buf;
    return std::string(json_string_view(text, pos, where, buf));
}

inline void json_skip_space(std::string_view text, std::size_t& pos) {
    while (pos < text.size() && std::isspace(static_cast<unsigned char>(text[pos]))) ++pos;
}

/// Skips one JSON value of any kind at pos, returning its text (strings decoded, into `buf` when
/// they hold escapes; anything else as written in `text`).
[[nodiscard]] inline std::string_view json_value_view(std::string_view text, std::size_t& pos,
                                                      std::string_view where, std::string& buf) {
    json_skip_space(text, pos);
    if (pos >= text.size())
        throw_field_error<InvalidInput>(where, "JSON", "a value", "end of text");
    if (text[pos] == '"') return json_string_view(text, pos, where, buf);
    if (text[pos] == '{' || text[pos] == '[') {
        int depth = 0;
        const std::size_t start = pos;
        std::string skipped;
        while (pos < text.size()) {
            const char c = text[pos];
            if (c == '"') {
                (void)json_string_view(text, pos, where, skipped);
                continue;
            }
            if (c == '{' || c == '[') ++depth;
            if (c == '}' || c == ']') --depth;
            if (depth >= static_cast<int>(max_json_depth))
                throw_field_error<InvalidInput>(
                    where, "JSON",
                    "objects and arrays nested at most " + std::to_string(max_json_depth) + " deep",
                    "deeper nesting");
            ++pos;
            if (depth == 0) return text.substr(start, pos - start);
        }
        throw_field_error<InvalidInput>(where, "JSON", "a closed object or array", "end of text");
    }
    const std::size_t start = pos;
    while (pos < text.size() && text[pos] != ',' && text[pos] != '}' && text[pos] != ']' &&
           !std::isspace(static_cast<unsigned char>(text[pos])))
        ++pos;
    if (pos == start)
        throw_field_error<InvalidInput>(where, "JSON", "a value", quoted(text.substr(pos, 1)));
    return text.substr(start, pos - start);
}

/// As json_value_view, into a string of its own.
inline std::string json_value(std::string_view text, std::size_t& pos, std::string_view where) {
    std::string buf;
    return std::string(json_value_view(text, pos, where, buf));
}

/// Calls on_field(key, value) for each top-level field of the JSON object that is the whole of
/// `text`, in order, with string values decoded and other values as written ("null", "12",
/// "[1, 2]"). The views last until on_field returns. Throws InvalidInput naming `where` when
/// `text` is not one object, or holds a key twice (a reader of the line sees the first, this one
/// would take the last), or nests deeper than max_json_depth. Allocates only for strings with
/// escapes and for objects of more than 16 keys.
template <class OnField>
inline void for_each_flat_json_field(std::string_view text, std::string_view where,
                                     OnField&& on_field) {
    std::string key_buf, value_buf;
    // The keys seen: views of `text`, or copies of those decoded into key_buf.
    std::string_view seen[16];
    std::size_t n_seen = 0;
    std::vector<std::string> more;
    const auto once = [&](std::string_view key) {
        for (std::size_t i = 0; i < n_seen; ++i)
            if (seen[i] == key) return false;
        for (const std::string& k : more)
            if (k == key) return false;
        const bool in_text = key.empty() || (key.data() >= text.data() &&
                                             key.data() + key.size() <= text.data() + text.size());
        if (in_text && n_seen < 16)
            seen[n_seen++] = key;
        else
            more.emplace_back(key);
        return true;
    };
    std::size_t p = 0;
    json_skip_space(text, p);
    if (p >= text.size() || text[p] != '{')
        throw_field_error<InvalidInput>(where, "JSON", "an object", quoted(text));
    ++p;
    json_skip_space(text, p);
    if (p < text.size() && text[p] == '}') {
        ++p;
    } else {
        for (;;) {
            json_skip_space(text, p);
            if (p >= text.size() || text[p] != '"')
                throw_field_error<InvalidInput>(where, "JSON", "a quoted key",
                                                quoted(text.substr(p)));
            const std::string_view key = json_string_view(text, p, where, key_buf);
            if (!once(key))
                throw_field_error<InvalidInput>(where, "JSON", "each key once in an object",
                                                "the key " + quoted(key) + " a second time");
            json_skip_space(text, p);
            if (p >= text.size() || text[p] != ':')
                throw_field_error<InvalidInput>(where, "JSON", "':' after a key",
                                                quoted(text.substr(p)));
            ++p;
            const std::string_view value = json_value_view(text, p, where, value_buf);
            on_field(key, value);
            json_skip_space(text, p);
            if (p < text.size() && text[p] == ',') {
                ++p;
                continue;
            }
            if (p < text.size() && text[p] == '}') {
                ++p;
                break;
            }
            throw_field_error<InvalidInput>(where, "JSON", "',' or '}'", quoted(text.substr(p)));
        }
    }
    json_skip_space(text, p);
    if (p != text.size())
        throw_field_error<InvalidInput>(where, "JSON", "the end after the object",
                                        quoted(text.substr(p)));
}

/// The top-level fields of the JSON object that is the whole of `text`, in order: (key, value)
/// with string values decoded and other values as written ("null", "12", "[1, 2]"). Throws
/// InvalidInput naming `where` when `text` is not one object.
[[nodiscard]] inline std::vector<std::pair<std::string, std::string>> flat_json_object(
    std::string_view text, std::string_view where) {
    std::vector<std::pair<std::string, std::string>> fields;
    for_each_flat_json_field(text, where, [&](std::string_view key, std::string_view value) {
        fields.emplace_back(std::string(key), std::string(value));
    });
    return fields;
}

}  // namespace kvplan::detail

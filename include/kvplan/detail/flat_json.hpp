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
#include "text.hpp"

namespace kvplan::detail {

/// A JSON string starting at text[pos] == '"'; advances pos past the closing quote. Escapes are
/// decoded except \u, which is kept as written (trace keys and values are ASCII).
[[nodiscard]] inline std::string json_string(std::string_view text, std::size_t& pos,
                                             std::string_view where) {
    std::string out;
    for (++pos; pos < text.size(); ++pos) {
        const char c = text[pos];
        if (c == '"') {
            ++pos;
            return out;
        }
        if (c == '\\' && pos + 1 < text.size()) {
            const char e = text[++pos];
            switch (e) {
                case 'n':
                    out.push_back('\n');
                    break;
                case 't':
                    out.push_back('\t');
                    break;
                case 'r':
                    out.push_back('\r');
                    break;
                case 'b':
                    out.push_back('\b');
                    break;
                case 'f':
                    out.push_back('\f');
                    break;
                case 'u':
                    out.append("\\u");
                    break;
                default:
                    out.push_back(e);
            }
        } else {
            out.push_back(c);
        }
    }
    throw_field_error<InvalidInput>(where, "JSON", "a closing '\"'", "end of text");
}

inline void json_skip_space(std::string_view text, std::size_t& pos) {
    while (pos < text.size() && std::isspace(static_cast<unsigned char>(text[pos]))) ++pos;
}

/// Skips one JSON value of any kind at pos, returning its text (strings decoded).
inline std::string json_value(std::string_view text, std::size_t& pos, std::string_view where) {
    json_skip_space(text, pos);
    if (pos >= text.size())
        throw_field_error<InvalidInput>(where, "JSON", "a value", "end of text");
    if (text[pos] == '"') return json_string(text, pos, where);
    if (text[pos] == '{' || text[pos] == '[') {
        int depth = 0;
        const std::size_t start = pos;
        while (pos < text.size()) {
            const char c = text[pos];
            if (c == '"') {
                (void)json_string(text, pos, where);
                continue;
            }
            if (c == '{' || c == '[') ++depth;
            if (c == '}' || c == ']') --depth;
            ++pos;
            if (depth == 0) return std::string(text.substr(start, pos - start));
        }
        throw_field_error<InvalidInput>(where, "JSON", "a closed object or array", "end of text");
    }
    const std::size_t start = pos;
    while (pos < text.size() && text[pos] != ',' && text[pos] != '}' && text[pos] != ']' &&
           !std::isspace(static_cast<unsigned char>(text[pos])))
        ++pos;
    if (pos == start)
        throw_field_error<InvalidInput>(where, "JSON", "a value", quoted(text.substr(pos, 1)));
    return std::string(text.substr(start, pos - start));
}

/// The top-level fields of the JSON object that is the whole of `text`, in order: (key, value)
/// with string values decoded and other values as written ("null", "12", "[1, 2]"). Throws
/// InvalidInput naming `where` when `text` is not one object.
[[nodiscard]] inline std::vector<std::pair<std::string, std::string>> flat_json_object(
    std::string_view text, std::string_view where) {
    std::vector<std::pair<std::string, std::string>> fields;
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
            std::string key = json_string(text, p, where);
            json_skip_space(text, p);
            if (p >= text.size() || text[p] != ':')
                throw_field_error<InvalidInput>(where, "JSON", "':' after a key",
                                                quoted(text.substr(p)));
            ++p;
            std::string value = json_value(text, p, where);
            fields.emplace_back(std::move(key), std::move(value));
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
    return fields;
}

}  // namespace kvplan::detail

#pragma once

// Where a value sits in the text of a JSON document: the line and column of an object member's key
// or of an array element, found by its path. A CI gate reports a finding at the line of the
// config.json field a change touched and of the policy's requirement, which a parsed document no
// longer knows. Standard library only; the text is scanned, not parsed into a tree, and text that
// is not JSON finds nothing rather than throwing.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace kvplan {

/// A place in a text, both 1-based; the column counts bytes.
struct TextPosition {
    std::uint32_t line = 1;
    std::uint32_t column = 1;
    friend constexpr bool operator==(const TextPosition&, const TextPosition&) = default;
};

namespace detail::json_position {

/// Appends code point `cp` to `out` as UTF-8.
inline void append_utf8(std::string& out, std::uint32_t cp) {
    if (cp < 0x80) {
        out.push_back(static_cast<char>(cp));
    } else if (cp < 0x800) {
        out.push_back(static_cast<char>(0xC0 | (cp >> 6)));
        out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    } else if (cp < 0x10000) {
        out.push_back(static_cast<char>(0xE0 | (cp >> 12)));
        out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
        out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    } else {
        out.push_back(static_cast<char>(0xF0 | (cp >> 18)));
        out.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
        out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
        out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    }
}

/// A scanner over the text that keeps the line and column of where it is.
class Scanner {
   public:
    /// Skips a UTF-8 byte order mark, as JSON parsers do.
    explicit Scanner(std::string_view text) noexcept : s_(text) {
        if (s_.substr(0, 3) == "\xEF\xBB\xBF") i_ = 3;
    }

    [[nodiscard]] bool done() const noexcept { return i_ >= s_.size(); }
    [[nodiscard]] char peek() const noexcept { return done() ? '\0' : s_[i_]; }
    [[nodiscard]] TextPosition position() const noexcept { return pos_; }

    void next() noexcept {
        if (done()) return;
        if (s_[i_] == '\n') {
            ++pos_.line;
            pos_.column = 1;
        } else {
            ++pos_.column;
        }
        ++i_;
    }

    void skip_space() noexcept {
        while (!done() && (peek() == ' ' || peek() == '\t' || peek() == '\n' || peek() == '\r'))
            next();
    }

    /// A string at '"', decoded as nlohmann decodes keys; false when it is not one.
    [[nodiscard]] bool string(std::string& out) {
        out.clear();
        if (peek() != '"') return false;
        next();
        while (!done()) {
            const char c = peek();
            next();
            if (c == '"') return true;
            if (c != '\\') {
                out.push_back(c);
                continue;
            }
            const char e = peek();
            next();
            switch (e) {
                case '"':
                    out.push_back('"');
                    break;
                case '\\':
                    out.push_back('\\');
                    break;
                case '/':
                    out.push_back('/');
                    break;
                case 'b':
                    out.push_back('\b');
                    break;
                case 'f':
                    out.push_back('\f');
                    break;
                case 'n':
                    out.push_back('\n');
                    break;
                case 'r':
                    out.push_back('\r');
                    break;
                case 't':
                    out.push_back('\t');
                    break;
                case 'u': {
                    std::uint32_t cp = 0;
                    if (!hex4(cp)) return false;
                    // A surrogate pair is one code point.
                    if (cp >= 0xD800 && cp <= 0xDBFF && peek() == '\\') {
                        next();
                        std::uint32_t low = 0;
                        if (peek() != 'u') return false;
                        next();
                        if (!hex4(low) || low < 0xDC00 || low > 0xDFFF) return false;
                        cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00);
                    }
                    append_utf8(out, cp);
                    break;
                }
                default:
                    return false;
            }
        }
        return false;
    }

    /// A number, true, false or null: skipped to the next delimiter.
    [[nodiscard]] bool scalar() noexcept {
        const std::size_t start = i_;
        while (!done()) {
            const char c = peek();
            if (c == ',' || c == '}' || c == ']' || c == ' ' || c == '\t' || c == '\n' || c == '\r')
                break;
            next();
        }
        return i_ != start;
    }

   private:
    [[nodiscard]] bool hex4(std::uint32_t& v) noexcept {
        v = 0;
        for (int k = 0; k < 4; ++k) {
            const char c = peek();
            std::uint32_t d = 0;
            if (c >= '0' && c <= '9')
                d = static_cast<std::uint32_t>(c - '0');
            else if (c >= 'a' && c <= 'f')
                d = static_cast<std::uint32_t>(c - 'a' + 10);
            else if (c >= 'A' && c <= 'F')
                d = static_cast<std::uint32_t>(c - 'A' + 10);
            else
                return false;
            v = v * 16 + d;
            next();
        }
        return true;
    }

    std::string_view s_;
    std::size_t i_ = 0;
    TextPosition pos_{};
};

/// Whether `at` (the path of the value being entered) is `want`.
[[nodiscard]] inline bool same_path(const std::vector<std::string>& at,
                                    std::span<const std::string> want) noexcept {
    if (at.size() != want.size()) return false;
    for (std::size_t k = 0; k < at.size(); ++k)
        if (at[k] != want[k]) return false;
    return true;
}

}  // namespace detail::json_position

/// The position in `text` of the value at `path`: for an object member, where its key starts; for
/// an array element, where its value starts; for the empty path, where the document starts. Path
/// steps are object keys as decoded (escapes undone) and array indices in decimal, as in a JSON
/// Pointer: {"text_config", "num_key_value_heads"}, {"requirements", "2"}. A key written twice
/// finds its first. nullopt when the path is not in the text or the text is not JSON up to it.
/// Scans iteratively, so a deep document cannot exhaust the stack.
[[nodiscard]] inline std::optional<TextPosition> json_position(std::string_view text,
                                                               std::span<const std::string> path) {
    using detail::json_position::Scanner;
    Scanner s(text);
    // One frame per open container: whether it is an object, and the path step of its current
    // member or element.
    struct Frame {
        bool object = false;
        std::size_t index = 0;
    };
    std::vector<Frame> frames;
    std::vector<std::string> at;  // the path of the value about to be read
    std::string key;
    s.skip_space();
    if (path.empty()) {
        if (s.done()) return std::nullopt;
        return s.position();
    }
    // A value starts here; containers push a frame, scalars are skipped.
    const auto value = [&]() -> bool {
        s.skip_space();
        const char c = s.peek();
        if (c == '{' || c == '[') {
            frames.push_back({c == '{', 0});
            s.next();
            return true;
        }
        if (c == '"') return s.string(key);
        return s.scalar();
    };
    if (!value()) return std::nullopt;
    // `at` holds one step per frame whose member or element is being read; a frame just opened
    // has none yet, and a closed frame's step is dropped when its parent reads its next member.
    while (!frames.empty()) {
        s.skip_space();
        Frame& f = frames.back();
        const char c = s.peek();
        if (c == (f.object ? '}' : ']')) {
            s.next();
            frames.pop_back();
            continue;
        }
        if (f.index != 0) {
            if (c != ',') return std::nullopt;
            s.next();
            s.skip_space();
        }
        at.resize(frames.size() - 1);
        const TextPosition here = s.position();
        if (f.object) {
            if (!s.string(key)) return std::nullopt;
            at.push_back(key);
            s.skip_space();
            if (s.peek() != ':') return std::nullopt;
            s.next();
        } else {
            at.push_back(std::to_string(f.index));
        }
        ++f.index;
        if (detail::json_position::same_path(at, path)) return here;
        if (!value()) return std::nullopt;
    }
    return std::nullopt;
}

/// json_position() with the path written as steps separated by '.', with "[i]" for an element:
/// "text_config.num_key_value_heads", "requirements[2]". Keys holding '.' or '[' need the span
/// form.
[[nodiscard]] inline std::optional<TextPosition> json_position(std::string_view text,
                                                               std::string_view dotted) {
    std::vector<std::string> steps;
    std::string step;
    for (std::size_t k = 0; k < dotted.size(); ++k) {
        const char c = dotted[k];
        if (c == '.' || c == '[' || c == ']') {
            if (!step.empty()) steps.push_back(step);
            step.clear();
            continue;
        }
        step.push_back(c);
    }
    if (!step.empty()) steps.push_back(step);
    return json_position(text, std::span<const std::string>(steps));
}

}  // namespace kvplan

#pragma once

// Text for error messages without <string>: a borrowed view of characters (TextRef) and a bounded
// buffer that messages are built in (Message). The core throws from these; the opt-in headers pass
// their std::string and std::string_view straight in, as anything with data() and size() converts.

#include <cstddef>
#include <cstdint>
#include <type_traits>

namespace kvplan::detail {

/// Anything that holds contiguous characters: std::string, std::string_view, Message...
template <class S>
concept CharSpan = requires(const S& s) {
    requires std::is_convertible_v<decltype(s.data()), const char*>;
    requires std::is_convertible_v<decltype(s.size()), std::size_t>;
};

/// A borrowed run of characters, as std::string_view is.
struct TextRef {
    const char* data = "";
    std::size_t size = 0;

    constexpr TextRef() noexcept = default;
    constexpr TextRef(const char* s) noexcept : data(s) {  // NOLINT: implicit from a literal
        while (s[size] != '\0') ++size;
    }
    constexpr TextRef(const char* s, std::size_t n) noexcept : data(s), size(n) {}
    template <CharSpan S>
    constexpr TextRef(const S& s) noexcept : data(s.data()), size(s.size()) {}  // NOLINT

    [[nodiscard]] constexpr bool empty() const noexcept { return size == 0; }
    friend constexpr bool operator==(TextRef a, TextRef b) noexcept {
        if (a.size != b.size) return false;
        for (std::size_t i = 0; i < a.size; ++i)
            if (a.data[i] != b.data[i]) return false;
        return true;
    }
};

/// A message built in place: at most `capacity` characters, always NUL-terminated. Longer text is
/// cut and ends in "...", so building one never allocates and never fails.
class Message {
   public:
    static constexpr std::size_t capacity = 1023;

    constexpr Message() noexcept = default;

    constexpr Message& append(TextRef t) noexcept {
        for (std::size_t i = 0; i < t.size; ++i) push(t.data[i]);
        return *this;
    }
    template <class I>
    requires(std::is_integral_v<I> && !std::is_same_v<I, char> &&
             !std::is_same_v<I, bool>) constexpr Message& append(I value) noexcept {
        if constexpr (std::is_signed_v<I>) {
            if (value < 0) {
                push('-');
                return append_digits(0 - static_cast<std::uint64_t>(value));
            }
        }
        return append_digits(static_cast<std::uint64_t>(value));
    }

    [[nodiscard]] constexpr const char* data() const noexcept { return buf_; }
    [[nodiscard]] constexpr const char* c_str() const noexcept { return buf_; }
    [[nodiscard]] constexpr std::size_t size() const noexcept { return len_; }
    [[nodiscard]] constexpr bool empty() const noexcept { return len_ == 0; }

   private:
    constexpr void push(char c) noexcept {
        if (len_ < capacity) {
            buf_[len_++] = c;
        } else if (!cut_) {  // mark the cut in place of the last three characters
            cut_ = true;
            buf_[capacity - 3] = buf_[capacity - 2] = buf_[capacity - 1] = '.';
        }
    }
    constexpr Message& append_digits(std::uint64_t v) noexcept {
        char digits[20]{};
        std::size_t n = 0;
        do {
            digits[n++] = static_cast<char>('0' + v % 10);
            v /= 10;
        } while (v != 0);
        while (n != 0) push(digits[--n]);
        return *this;
    }

    char buf_[capacity + 1]{};
    std::size_t len_ = 0;
    bool cut_ = false;
};

/// The pieces, text or integers, one after another: text("tp ", 3, " of ", 8).
template <class... Parts>
[[nodiscard]] constexpr Message text(const Parts&... parts) noexcept {
    Message m;
    (m.append(parts), ...);
    return m;
}

}  // namespace kvplan::detail

#pragma once

// A value or nothing, for the core's few "or none" answers (a context that is unbounded, a
// spelling that names no type), without what <optional> costs every translation unit that includes
// the core. It converts to std::optional (or any optional type of the same value) where one is
// wanted, so callers may keep theirs.

#include <type_traits>

#include "error.hpp"

namespace kvplan {

template <class T>
requires std::is_trivially_copyable_v<T> && std::is_default_constructible_v<T>
class Optional {
   public:
    using value_type = T;

    constexpr Optional() noexcept = default;                             // empty
    constexpr Optional(T value) noexcept : value_(value), has_(true) {}  // NOLINT: as std::optional

    [[nodiscard]] constexpr bool has_value() const noexcept { return has_; }
    constexpr explicit operator bool() const noexcept { return has_; }

    /// The value; a broken precondition when empty.
    [[nodiscard]] constexpr const T& operator*() const noexcept {
        KVPLAN_EXPECTS(has_);
        return value_;
    }
    [[nodiscard]] constexpr const T* operator->() const noexcept { return &**this; }
    [[nodiscard]] constexpr const T& value() const noexcept { return **this; }
    [[nodiscard]] constexpr T value_or(T fallback) const noexcept {
        return has_ ? value_ : fallback;
    }

    /// To std::optional<T>, or any optional-like type of the same value: empty stays empty.
    template <class O>
    requires std::is_same_v<typename O::value_type, T> && std::is_default_constructible_v<O> &&
        std::is_constructible_v<O, const T&> &&(!std::is_same_v<O, Optional>)constexpr
        operator O() const {  // NOLINT: lets callers keep their std::optional
        return has_ ? O(value_) : O();
    }

    /// Equal to a value when it holds that value; empty equals no value.
    friend constexpr bool operator==(const Optional& a, const T& b) noexcept {
        return a.has_ && a.value_ == b;
    }
    friend constexpr bool operator==(const Optional& a, const Optional& b) noexcept {
        return a.has_ == b.has_ && (!a.has_ || a.value_ == b.value_);
    }

   private:
    T value_{};
    bool has_ = false;
};

}  // namespace kvplan

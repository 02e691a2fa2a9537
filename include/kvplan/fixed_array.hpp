#pragma once

// A fixed-size array that is a constexpr aggregate, like std::array, without what <array> costs
// every translation unit that includes the core (see bench/compile_cost.sh).

#include <cstddef>

namespace kvplan {

template <class T, std::size_t N>
struct FixedArray {
    static_assert(N > 0, "a FixedArray holds at least one element");

    T elems[N];  // public, so brace initialization works as for std::array

    [[nodiscard]] static constexpr std::size_t size() noexcept { return N; }
    [[nodiscard]] constexpr T& operator[](std::size_t i) noexcept { return elems[i]; }
    [[nodiscard]] constexpr const T& operator[](std::size_t i) const noexcept { return elems[i]; }
    [[nodiscard]] constexpr T* data() noexcept { return elems; }
    [[nodiscard]] constexpr const T* data() const noexcept { return elems; }
    [[nodiscard]] constexpr T* begin() noexcept { return elems; }
    [[nodiscard]] constexpr T* end() noexcept { return elems + N; }
    [[nodiscard]] constexpr const T* begin() const noexcept { return elems; }
    [[nodiscard]] constexpr const T* end() const noexcept { return elems + N; }

    friend constexpr bool operator==(const FixedArray&, const FixedArray&) = default;
};

template <class T, class... U>
FixedArray(T, U...) -> FixedArray<T, 1 + sizeof...(U)>;

}  // namespace kvplan

#pragma once

// Randomness for property tests, the same on every standard library. The standard's engines are
// specified to the bit, but its distributions (uniform_int_distribution, uniform_real_distribution)
// and std::shuffle are not: libstdc++ and libc++ draw different values from the same seed, so a
// failure seen under one compiler would not reproduce under the other. These are our own.
//
// The seed: $KVPLAN_TEST_SEED when set (decimal, or hexadecimal after 0x), else the test's own
// fixed seed. KVPLAN_TEST_RNG declares a generator and has Catch2 print its seed with any failure
// of the scope it is declared in, so that `KVPLAN_TEST_SEED=<seed>` reruns that failure.

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <limits>
#include <stdexcept>
#include <string>
#include <utility>

namespace kvplan::test {

/// SplitMix64 (Steele, Lea and Flood, "Fast splittable pseudorandom number generators", 2014):
/// a 64-bit state stepped by a constant and mixed; every seed, zero included, gives a full-period
/// stream. Also usable where a UniformRandomBitGenerator is expected (its operator()).
class Rng {
   public:
    using result_type = std::uint64_t;
    explicit Rng(std::uint64_t seed) noexcept : state_(seed) {}

    [[nodiscard]] static constexpr result_type min() noexcept { return 0; }
    [[nodiscard]] static constexpr result_type max() noexcept {
        return std::numeric_limits<result_type>::max();
    }

    /// The next 64 random bits.
    result_type operator()() noexcept {
        std::uint64_t z = (state_ += 0x9E3779B97F4A7C15ULL);
        z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
        z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
        return z ^ (z >> 31);
    }

    /// A whole number uniform in [lo, hi] (lo <= hi), without modulo bias: draws at or above the
    /// largest multiple of the range's size are drawn again (at most half of them, for any size).
    template <class T = std::uint64_t>
    T between(T lo, T hi) noexcept {
        const auto span = static_cast<std::uint64_t>(hi) - static_cast<std::uint64_t>(lo);
        if (span == max()) return static_cast<T>((*this)());
        const std::uint64_t n = span + 1;
        const std::uint64_t limit = max() - max() % n;  // a multiple of n
        std::uint64_t x = (*this)();
        while (x >= limit) x = (*this)();
        return static_cast<T>(static_cast<std::uint64_t>(lo) + x % n);
    }

    /// A double uniform in [lo, hi): the top 53 bits as a fraction of 2^53, scaled.
    double real(double lo, double hi) noexcept {
        const double u = static_cast<double>((*this)() >> 11) * 0x1.0p-53;
        return lo + (hi - lo) * u;
    }

    /// True with probability 1 / n.
    bool one_in(std::uint64_t n) noexcept { return between<std::uint64_t>(1, n) == 1; }

   private:
    std::uint64_t state_;
};

/// The items of [first, last) in a random order (Fisher-Yates, as std::shuffle but the same
/// order from the same seed on every library).
template <class It>
void shuffle(It first, It last, Rng& rng) {
    const auto n = static_cast<std::uint64_t>(last - first);
    for (std::uint64_t i = n; i > 1; --i) {
        const std::uint64_t j = rng.between<std::uint64_t>(0, i - 1);
        using std::swap;
        swap(first[static_cast<std::ptrdiff_t>(i - 1)], first[static_cast<std::ptrdiff_t>(j)]);
    }
}

/// $KVPLAN_TEST_SEED when set, else `fixed`. A value that is not a number throws (the test fails
/// with the message) rather than falling back silently.
[[nodiscard]] inline std::uint64_t seed(std::uint64_t fixed) {
    const char* env = std::getenv("KVPLAN_TEST_SEED");
    if (env == nullptr || *env == '\0') return fixed;
    char* end = nullptr;
    const unsigned long long v = std::strtoull(env, &end, 0);
    if (end == env || *end != '\0' || *env == '-')
        throw std::invalid_argument(
            std::string("KVPLAN_TEST_SEED: expected a whole number, found '") + env + "'");
    return v;
}

}  // namespace kvplan::test

/// `kvplan::test::Rng name` seeded by kvplan::test::seed(fixed); a failure in the enclosing scope
/// prints the seed (Catch2's INFO: for test files, which include Catch2 themselves; the rest of
/// this header serves code without it, such as the fuzz harnesses).
#define KVPLAN_TEST_RNG(name, fixed)                                           \
    const std::uint64_t name##_seed = ::kvplan::test::seed(fixed);             \
    INFO("random seed " << name##_seed << " (KVPLAN_TEST_SEED=" << name##_seed \
                        << " draws the same values)");                         \
    ::kvplan::test::Rng name(name##_seed)

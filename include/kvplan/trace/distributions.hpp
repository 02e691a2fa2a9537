#pragma once

// Distributions over a trace's requests: token lengths as counts per length, their nearest-rank
// percentiles, the KV each length holds, and paged against contiguous waste.
//
// Token counts are integers and a trace repeats them: a million requests have a few thousand
// distinct lengths. Counting requests per length is exact (a percentile is still an observed
// value, at the same rank as in the sorted list), takes one pass, and everything per request that
// depends only on its length (its KV, its blocks) is then computed once per length.

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <span>
#include <utility>
#include <vector>

#include "../detail/checked.hpp"
#include "../dtype.hpp"
#include "../error.hpp"
#include "../kv_bytes.hpp"
#include "../layout.hpp"
#include "../model.hpp"
#include "../paging.hpp"
#include "../units.hpp"
#include "reading.hpp"

namespace kvplan {

namespace detail {

/// The 1-based rank of the nearest-rank p-th percentile of n values: ceil(p / 100 x n), clamped
/// to [1, n].
[[nodiscard]] inline std::uint64_t nearest_rank_position(std::uint64_t n, double p) {
    const double exact = p / 100.0 * static_cast<double>(n);
    // The small tolerance keeps p x n that is whole in exact arithmetic from rounding up a rank.
    double r = std::ceil(exact - 1e-9);
    if (r < 1) r = 1;
    if (r > static_cast<double>(n)) r = static_cast<double>(n);
    return static_cast<std::uint64_t>(r);
}

}  // namespace detail

/// The nearest-rank percentile of sorted values: the smallest value v such that at least p % of the
/// values are <= v, i.e. sorted[ceil(p / 100 x n) - 1] (p = 0 gives the minimum). Always an
/// observed value, never an interpolation. Precondition: `sorted` is non-empty and ascending, 0 <=
/// p <= 100.
template <class T>
[[nodiscard]] T nearest_rank(std::span<const T> sorted, double p) {
    KVPLAN_EXPECTS(!sorted.empty() && p >= 0.0 && p <= 100.0);
    return sorted[detail::nearest_rank_position(sorted.size(), p) - 1];
}

/// The figures a distribution is reported by.
template <class T>
struct Percentiles {
    T p50{};
    T p95{};
    T p99{};
    T max{};
};

/// Nearest-rank p50, p95, p99 and the maximum of `values` (sorted in place). Precondition: not
/// empty.
template <class T>
[[nodiscard]] Percentiles<T> percentiles_of(std::vector<T>& values) {
    KVPLAN_EXPECTS(!values.empty());
    std::sort(values.begin(), values.end());
    const std::span<const T> v{values};
    return {nearest_rank(v, 50), nearest_rank(v, 95), nearest_rank(v, 99), v.back()};
}

/// Values with how many times each occurs, ascending: what a sorted list says, at the size of its
/// distinct values.
template <class T>
class Histogram {
   public:
    struct Bin {
        T value{};
        std::uint64_t count = 0;
    };

    Histogram() = default;
    /// From bins in any order: equal values merge, empty bins are dropped.
    explicit Histogram(std::vector<Bin> bins) : bins_(std::move(bins)) {
        std::erase_if(bins_, [](const Bin& b) { return b.count == 0; });
        const auto by_value = [](const Bin& a, const Bin& b) { return a.value < b.value; };
        if (!std::is_sorted(bins_.begin(), bins_.end(), by_value))
            std::sort(bins_.begin(), bins_.end(), by_value);
        std::size_t out = 0;
        for (std::size_t i = 0; i < bins_.size(); ++i) {
            if (out > 0 && bins_[out - 1].value == bins_[i].value)
                bins_[out - 1].count =
                    detail::add(bins_[out - 1].count, bins_[i].count, "a count of requests");
            else
                bins_[out++] = bins_[i];
        }
        bins_.resize(out);
        for (const Bin& b : bins_) count_ = detail::add(count_, b.count, "a count of requests");
    }

    [[nodiscard]] std::span<const Bin> bins() const noexcept { return bins_; }
    /// Values counted, repeats included.
    [[nodiscard]] std::uint64_t count() const noexcept { return count_; }
    [[nodiscard]] bool empty() const noexcept { return count_ == 0; }

    /// The r-th smallest value, repeats counted (sorted[r - 1]). Precondition: 1 <= r <= count().
    [[nodiscard]] T at_rank(std::uint64_t r) const {
        KVPLAN_EXPECTS(r >= 1 && r <= count_);
        std::uint64_t below = 0;
        for (const Bin& b : bins_) {
            below += b.count;
            if (below >= r) return b.value;
        }
        return bins_.back().value;
    }
    /// The nearest-rank percentile, as nearest_rank on the sorted values. Precondition: not
    /// empty, 0 <= p <= 100.
    [[nodiscard]] T percentile(double p) const {
        KVPLAN_EXPECTS(!empty() && p >= 0.0 && p <= 100.0);
        return at_rank(detail::nearest_rank_position(count_, p));
    }
    /// p50, p95, p99 and the maximum. Precondition: not empty.
    [[nodiscard]] Percentiles<T> percentiles() const {
        return {percentile(50), percentile(95), percentile(99), max()};
    }
    [[nodiscard]] T min() const {
        KVPLAN_EXPECTS(!empty());
        return bins_.front().value;
    }
    [[nodiscard]] T max() const {
        KVPLAN_EXPECTS(!empty());
        return bins_.back().value;
    }

   private:
    std::vector<Bin> bins_;
    std::uint64_t count_ = 0;
};

/// Values counted from a list of them.
template <class T>
[[nodiscard]] Histogram<T> histogram_of(std::span<const T> values) {
    std::vector<T> v(values.begin(), values.end());
    std::sort(v.begin(), v.end());
    std::vector<typename Histogram<T>::Bin> bins;
    for (const T& x : v) {
        if (bins.empty() || !(bins.back().value == x))
            bins.push_back({x, 1});
        else
            ++bins.back().count;
    }
    return Histogram<T>(std::move(bins));
}

namespace detail {

/// Counts token lengths: directly indexed up to a million tokens (a pass, no sort), listed and
/// sorted beyond.
class LengthCounter {
   public:
    void add(std::uint64_t tokens) {
        if (tokens < dense_limit) {
            if (tokens >= dense_.size())
                dense_.resize(std::min<std::uint64_t>(
                    dense_limit, std::max<std::uint64_t>(tokens + 1, 2 * dense_.size())));
            ++dense_[tokens];
        } else {
            sparse_.push_back(tokens);
        }
    }

    [[nodiscard]] Histogram<std::uint64_t> finish() && {
        std::vector<Histogram<std::uint64_t>::Bin> bins;
        for (std::uint64_t t = 0; t < dense_.size(); ++t)
            if (dense_[t] != 0) bins.push_back({t, dense_[t]});
        std::sort(sparse_.begin(), sparse_.end());
        for (std::uint64_t t : sparse_) {
            if (bins.empty() || bins.back().value != t)
                bins.push_back({t, 1});
            else
                ++bins.back().count;
        }
        return Histogram<std::uint64_t>(std::move(bins));
    }

   private:
    static constexpr std::uint64_t dense_limit = std::uint64_t{1} << 20;
    std::vector<std::uint64_t> dense_;
    std::vector<std::uint64_t> sparse_;
};

}  // namespace detail

/// Requests counted by length: prompt, generated and total (prompt + generated) tokens.
struct LengthCounts {
    Histogram<std::uint64_t> prompt;
    Histogram<std::uint64_t> output;
    Histogram<std::uint64_t> total;
};

/// The lengths of `requests`, in one pass.
[[nodiscard]] inline LengthCounts length_counts(std::span<const TraceRequest> requests) {
    detail::LengthCounter p, o, a;
    for (const TraceRequest& q : requests) {
        p.add(q.prompt_tokens);
        o.add(q.output_tokens);
        a.add(q.total_tokens());
    }
    return {std::move(p).finish(), std::move(o).finish(), std::move(a).finish()};
}

[[nodiscard]] inline LengthCounts length_counts(const Trace& t) {
    return length_counts(t.requests);
}

/// The mean of counted values: the sum over bins of value x count, in double, / count. Exact sums
/// while they stay below 2^53, as a token sum does. Precondition: not empty.
[[nodiscard]] inline double mean_of(const Histogram<std::uint64_t>& h) {
    KVPLAN_EXPECTS(!h.empty());
    double sum = 0;
    for (const auto& b : h.bins())
        sum += static_cast<double>(b.value) * static_cast<double>(b.count);
    return sum / static_cast<double>(h.count());
}

/// Token lengths over a trace.
struct TraceLengths {
    std::size_t requests = 0;
    Percentiles<std::uint64_t> prompt, output, total;  ///< total = prompt + output
    double mean_prompt = 0, mean_output = 0, mean_total = 0;
};

/// Percentiles and means of counted lengths. Precondition: not empty.
[[nodiscard]] inline TraceLengths trace_lengths(const LengthCounts& c) {
    TraceLengths r;
    r.requests = static_cast<std::size_t>(c.total.count());
    r.prompt = c.prompt.percentiles();
    r.output = c.output.percentiles();
    r.total = c.total.percentiles();
    r.mean_prompt = mean_of(c.prompt);
    r.mean_output = mean_of(c.output);
    r.mean_total = mean_of(c.total);
    return r;
}

[[nodiscard]] inline TraceLengths trace_lengths(const Trace& t) {
    return trace_lengths(length_counts(t));
}

/// KV held by a request of `tokens` tokens at completion, in blocks of `block_size` tokens (1:
/// exact bytes), on one rank (`shard`; the whole model by default).
[[nodiscard]] inline Bytes kv_held(const Model& m, KvFormat f, std::uint64_t tokens,
                                   std::uint32_t block_size, const Shard& shard = {}) {
    KVPLAN_EXPECTS(block_size >= 1);
    return block_size == 1 ? kv_bytes_per_sequence(m, f, tokens, shard)
                           : paged_sequence(m, f, tokens, block_size, shard).reserved;
}

/// KV held by each request at completion (prompt + generated tokens, a conservative bound: the last
/// generated token's K and V are in fact never written), paged in blocks of `block_size` tokens, on
/// one rank (`shard`; the whole model by default). block_size 1 means exact bytes.
[[nodiscard]] inline std::vector<Bytes> kv_per_request(const Trace& t, const Model& m, KvFormat f,
                                                       std::uint32_t block_size = 1,
                                                       const Shard& shard = {}) {
    KVPLAN_EXPECTS(block_size >= 1);
    std::vector<Bytes> out;
    out.reserve(t.requests.size());
    for (const TraceRequest& q : t.requests)
        out.push_back(kv_held(m, f, q.total_tokens(), block_size, shard));
    return out;
}

/// KV per request counted, from requests counted by total tokens: kv_per_request computed once
/// per length.
[[nodiscard]] inline Histogram<Bytes> kv_histogram(const Histogram<std::uint64_t>& total_tokens,
                                                   const Model& m, KvFormat f,
                                                   std::uint32_t block_size = 1,
                                                   const Shard& shard = {}) {
    std::vector<Histogram<Bytes>::Bin> bins;
    bins.reserve(total_tokens.bins().size());
    for (const auto& b : total_tokens.bins())
        bins.push_back({kv_held(m, f, b.value, block_size, shard), b.count});
    return Histogram<Bytes>(std::move(bins));
}

/// KV per request when every request starts with the same prompt prefix, held once by the
/// engine's prefix cache (Demand::shared_prefix_tokens over a length distribution).
struct SharedPrefixKv {
    Histogram<Bytes> own;      ///< kv_histogram's sizes less the bytes each request shares
    Bytes held_once{};         ///< the prefix's bytes the pool holds once (the most any shares)
    std::uint64_t blocks = 0;  ///< full blocks of the prefix in a request's table
};

/// kv_histogram with a shared prefix of `prefix_tokens`, by paged_shared_prefix's rules (only full
/// blocks, a sliding layer only while in its window, at most length - 1 tokens: a request whose
/// whole prompt is cached computes its last token). A batch of n then holds held_once + the n
/// requests' own sizes. Precondition: the prefix is part of every prompt.
[[nodiscard]] inline SharedPrefixKv kv_histogram_shared(
    const Histogram<std::uint64_t>& total_tokens, const Model& m, KvFormat f,
    std::uint32_t block_size, const Shard& shard, std::uint64_t prefix_tokens) {
    std::vector<Histogram<Bytes>::Bin> bins;
    bins.reserve(total_tokens.bins().size());
    SharedPrefixKv out;
    for (const auto& b : total_tokens.bins()) {
        const std::uint64_t prefix = b.value == 0 ? 0 : std::min(prefix_tokens, b.value - 1);
        const SharedPrefixUse two =
            paged_shared_prefix(m, f, 2, prefix, b.value, block_size, shard);
        const Bytes held = kv_held(m, f, b.value, block_size, shard);
        const Bytes shared = std::min(two.saved(), held);
        bins.push_back({held - shared, b.count});
        out.held_once = std::max(out.held_once, shared);
        out.blocks = std::max(out.blocks, two.shared_blocks);
    }
    out.own = Histogram<Bytes>(std::move(bins));
    return out;
}

/// The sum of counted sizes, exact (OverflowError past 2^64 - 1 bytes).
[[nodiscard]] inline Bytes sum_of(const Histogram<Bytes>& h) {
    Bytes sum{};
    for (const auto& b : h.bins()) sum += b.value * b.count;
    return sum;
}

/// The distribution of KV per request: exact bytes and paged bytes, and their means.
struct KvDistribution {
    Percentiles<Bytes> exact;  ///< kv_bytes_per_sequence(prompt + generated)
    Percentiles<Bytes> paged;  ///< the blocks it holds
    Bytes mean_exact{};        ///< sum / requests, rounded down
    Bytes mean_paged{};
};

/// From requests counted by total tokens (LengthCounts::total). Precondition: not empty.
[[nodiscard]] inline KvDistribution kv_distribution(const Histogram<std::uint64_t>& total_tokens,
                                                    const Model& m, KvFormat f,
                                                    std::uint32_t block_size,
                                                    const Shard& shard = {}) {
    KVPLAN_EXPECTS(!total_tokens.empty());
    const Histogram<Bytes> e = kv_histogram(total_tokens, m, f, 1, shard);
    const Histogram<Bytes> p = kv_histogram(total_tokens, m, f, block_size, shard);
    const std::uint64_t n = total_tokens.count();
    return {e.percentiles(), p.percentiles(), sum_of(e) / n, sum_of(p) / n};
}

[[nodiscard]] inline KvDistribution kv_distribution(const Trace& t, const Model& m, KvFormat f,
                                                    std::uint32_t block_size,
                                                    const Shard& shard = {}) {
    return kv_distribution(length_counts(t).total, m, f, block_size, shard);
}

/// Paged against contiguous reservation summed over the requests of a trace that fit in
/// max_model_len (longer ones an engine would refuse; they are counted, and left out of every sum
/// so the three sums cover the same requests).
struct TraceWaste {
    std::size_t requests = 0;      ///< requests summed
    std::size_t over_max_len = 0;  ///< requests longer than max_model_len, left out
    Bytes used{};                  ///< exact KV at completion
    Bytes paged{};                 ///< blocks held at completion
    Bytes contiguous{};            ///< max_model_len reserved per request
    [[nodiscard]] Bytes paged_waste() const { return paged - used; }
    [[nodiscard]] Bytes contiguous_waste() const { return contiguous - used; }
    /// Waste as a fraction of what is reserved (0 when nothing is).
    [[nodiscard]] double paged_waste_fraction() const {
        return paged.is_zero() ? 0.0 : paged_waste().in(B) / paged.in(B);
    }
    [[nodiscard]] double contiguous_waste_fraction() const {
        return contiguous.is_zero() ? 0.0 : contiguous_waste().in(B) / contiguous.in(B);
    }
    /// The same in percent, as reports show them.
    [[nodiscard]] double paged_waste_percent() const { return paged_waste_fraction() * 100.0; }
    [[nodiscard]] double contiguous_waste_percent() const {
        return contiguous_waste_fraction() * 100.0;
    }
};

/// From requests counted by total tokens (LengthCounts::total).
[[nodiscard]] inline TraceWaste trace_waste(const Histogram<std::uint64_t>& total_tokens,
                                            const Model& m, KvFormat f, std::uint64_t max_model_len,
                                            std::uint32_t block_size, const Shard& shard = {}) {
    KVPLAN_EXPECTS(block_size >= 1);
    TraceWaste w;
    const Bytes contiguous_each = kv_bytes_per_sequence(m, f, max_model_len, shard);
    for (const auto& [tokens, count] : total_tokens.bins()) {
        if (tokens > max_model_len) {
            w.over_max_len += static_cast<std::size_t>(count);
            continue;
        }
        const PagedUse p = paged_sequence(m, f, tokens, block_size, shard);
        w.requests += static_cast<std::size_t>(count);
        w.used += p.used * count;
        w.paged += p.reserved * count;
        w.contiguous += contiguous_each * count;
    }
    return w;
}

[[nodiscard]] inline TraceWaste trace_waste(const Trace& t, const Model& m, KvFormat f,
                                            std::uint64_t max_model_len, std::uint32_t block_size,
                                            const Shard& shard = {}) {
    return trace_waste(length_counts(t).total, m, f, max_model_len, block_size, shard);
}

}  // namespace kvplan

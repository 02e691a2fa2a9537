#pragma once

// Admission on a block pool, step by step as vLLM's scheduler takes and frees blocks:
//   admit    a waiting request's first step (KVCacheManager.allocate_slots for a new request,
//            vllm/v1/core/kv_cache_manager.py): two checks against the free blocks, then the step's
//            blocks are taken;
//   grow     a later step of `n` tokens, a prefill chunk or one decode token: the blocks the
//            window left are freed first (remove_skipped_blocks), then the step's new blocks are
//            taken if they are free; if not, vLLM preempts a running request and tries again;
//   release  the request finished or was preempted: every block it holds goes back.
//
// What is accounted, exactly: the free blocks of the one pool after each step, as vLLM's
// scheduler leaves them with synchronous scheduling (a step's computed tokens are processed when
// the next step is scheduled), no speculative tokens, and prefix hits on cached blocks that are
// not evicted. With async scheduling vLLM frees a window's blocks one step later (allocate_slots
// subtracts the in-flight tokens); the blocks taken are the same.
//
// Two policies. `engine` admits as vLLM does: the first step's blocks must be free now, and a
// later step may find the pool dry (vLLM then preempts). `no_preemption` also reserves, for every
// running request, the most blocks it can still hold (at admission: its peak over the steps left;
// once its prompt is in: its steady figure, the most it holds while decoding), and admits only
// when the new request's peak fits beside those reservations: no grow ever fails.

#include <cstddef>
#include <cstdint>

#include "../detail/checked.hpp"
#include "../error.hpp"
#include "block_pool.hpp"

namespace kvplan {

/// When a request is admitted.
enum class AdmitPolicy : std::uint8_t {
    engine,         ///< vLLM's rule: its first step's blocks are free now
    no_preemption,  ///< and the blocks it can still take fit beside every running request's
};

/// What admit decided.
enum class AdmitStatus : std::uint8_t {
    admitted,  ///< running: the step's blocks are taken
    wait,      ///< not now: it fits once running requests free blocks
    never,     ///< not even in an empty pool, or past max_model_len
};

/// The answer of admit.
struct AdmitResult {
    AdmitStatus status = AdmitStatus::wait;
    std::uint64_t blocks = 0;     ///< admitted: blocks taken from the pool; else: blocks asked for
    std::uint64_t available = 0;  ///< blocks the ask was compared with
    [[nodiscard]] constexpr explicit operator bool() const noexcept {
        return status == AdmitStatus::admitted;
    }
};

/// The answer of grow.
struct GrowResult {
    bool grown = false;
    std::uint64_t taken = 0;  ///< grown: blocks taken; else: blocks the step asked for
    std::uint64_t freed = 0;  ///< blocks the window let go, returned to the pool either way
    [[nodiscard]] constexpr explicit operator bool() const noexcept { return grown; }
};

/// How a request enters.
struct AdmitOptions {
    SharedPrefix* prefix = nullptr;  ///< the cached prefix its prompt starts with
    /// Prompt tokens its first step computes, and each later prefill step (the scheduler's token
    /// budget, at most max_num_batched_tokens); 0: the rest of the prompt in one step.
    std::uint64_t chunk = 0;
};

/// The blocks one request takes in an otherwise empty pool: prompt, output and prefix hit given.
struct RequestNeed {
    std::uint64_t gate = 0;       ///< vLLM's whole-prompt check before its first step (0: off)
    std::uint64_t admission = 0;  ///< blocks its first step takes
    std::uint64_t peak = 0;       ///< the most it holds at any step
    std::uint64_t steady = 0;     ///< the most it holds while decoding (0: it never decodes)
};

namespace detail {

[[nodiscard]] constexpr std::uint64_t gcd(std::uint64_t a, std::uint64_t b) noexcept {
    while (b != 0) {
        const std::uint64_t r = a % b;
        a = b;
        b = r;
    }
    return a;
}

/// lcm(a, b), or `cap` once it reaches it.
[[nodiscard]] constexpr std::uint64_t lcm_capped(std::uint64_t a, std::uint64_t b,
                                                 std::uint64_t cap) noexcept {
    const std::uint64_t q = a / gcd(a, b);
    return q >= cap || b >= cap / q ? cap : q * b;
}

/// Throws OverflowError unless every block count of a request of `last` slots fits in 64 bits
/// (no table holds more than last + 1 blocks), so the arithmetic below never wraps.
constexpr void guard_block_counts(const BlockPoolSpec& s, std::uint64_t last) {
    std::uint64_t tables = 0;
    for (std::uint32_t i = 0; i < s.num_groups; ++i) tables += s.groups[i].count;
    (void)mul(add(last, 1, "a request's tokens"), tables, "a request's block count");
}

/// Blocks one table of `g` holds of a shared prefix of `prefix_tokens` (full groups only).
[[nodiscard]] constexpr std::uint64_t shared_in_table(const BlockGroup& g,
                                                      std::uint64_t prefix_tokens) noexcept {
    return g.kind == BlockGroupKind::full ? prefix_tokens / g.block_size : 0;
}

/// Blocks a shared prefix of `prefix_tokens` holds over every table.
[[nodiscard]] constexpr std::uint64_t prefix_blocks(const BlockPoolSpec& s,
                                                    std::uint64_t prefix_tokens) noexcept {
    std::uint64_t n = 0;
    for (std::uint32_t i = 0; i < s.num_groups; ++i)
        n += s.groups[i].count * shared_in_table(s.groups[i], prefix_tokens);
    return n;
}

/// A request's own blocks over every group after a step to `tokens` from `processed`.
[[nodiscard]] constexpr std::uint64_t own_blocks(const BlockPoolSpec& s, std::uint64_t tokens,
                                                 std::uint64_t processed,
                                                 std::uint64_t prefix_tokens) {
    std::uint64_t n = 0;
    for (std::uint32_t i = 0; i < s.num_groups; ++i) {
        const BlockGroup& g = s.groups[i];
        n += g.count * (group_blocks(g, tokens, processed) - shared_in_table(g, prefix_tokens));
    }
    return n;
}

/// vLLM's whole-prompt check for a new request (get_num_blocks_to_allocate with
/// apply_admission_cap): per table, the prompt's blocks (windows capped) less the hit's, plus the
/// hit blocks still in the window, which come off the free queue; the shared prefix's full blocks
/// are free of charge while another request holds them.
[[nodiscard]] constexpr std::uint64_t gate_blocks(const BlockPoolSpec& s, std::uint64_t prompt,
                                                  std::uint64_t hit, std::uint64_t prefix_tokens,
                                                  bool prefix_held) {
    std::uint64_t n = 0;
    for (std::uint32_t i = 0; i < s.num_groups; ++i) {
        const BlockGroup& g = s.groups[i];
        std::uint64_t t = 0;
        switch (g.kind) {
            case BlockGroupKind::full:
                t = ceil_div(prompt, g.block_size) -
                    (prefix_held ? shared_in_table(g, prefix_tokens) : 0);
                break;
            case BlockGroupKind::sliding_window:
            case BlockGroupKind::chunked_local: {
                std::uint64_t required = ceil_div(prompt, g.block_size);
                if (g.admission_cap != 0 && g.admission_cap < required) required = g.admission_cap;
                const std::uint64_t local = hit / g.block_size;
                const std::uint64_t nulls = skipped_tokens(g, hit) / g.block_size;
                t = (required > local ? required - local : 0) + (local - nulls);
                break;
            }
            case BlockGroupKind::state:
                t = group_blocks(g, prompt, hit);
                break;
        }
        n += g.count * t;
    }
    return n;
}

/// Steps a request's own blocks repeat over, when each step adds `stride` tokens, capped at
/// `cap`. Every group's blocks at step k + period are at least those at step k (a full table only
/// grows; a window's and a chunk's held blocks repeat once the step crosses whole blocks; an
/// aligned state repeats every block), so the most over a run of steps is among its last `period`.
[[nodiscard]] constexpr std::uint64_t step_period(const BlockPoolSpec& s, std::uint64_t stride,
                                                  std::uint64_t cap) noexcept {
    std::uint64_t m = 1;
    for (std::uint32_t i = 0; i < s.num_groups && m < cap; ++i) {
        const BlockGroup& g = s.groups[i];
        std::uint64_t tokens = 1;  // the group's period in tokens
        if (g.kind == BlockGroupKind::sliding_window ||
            (g.kind == BlockGroupKind::state && g.align))
            tokens = g.block_size;
        else if (g.kind == BlockGroupKind::chunked_local)
            tokens = lcm_capped(g.block_size, g.span, ~std::uint64_t{0});
        m = lcm_capped(m, tokens / gcd(tokens, stride), cap);
    }
    return m < cap ? m : cap;
}

/// The most own blocks over `count` steps, the k-th (from 0) giving `first + k x stride` slots
/// after `first + (k - 1) x stride` were computed.
[[nodiscard]] constexpr std::uint64_t most_over_steps(const BlockPoolSpec& s, std::uint64_t first,
                                                      std::uint64_t stride, std::uint64_t count,
                                                      std::uint64_t prefix_tokens) {
    if (count == 0) return 0;
    const std::uint64_t period = step_period(s, stride, count);
    std::uint64_t best = 0;
    for (std::uint64_t k = count - period; k < count; ++k) {
        const std::uint64_t t = first + k * stride;
        const std::uint64_t b = own_blocks(s, t, t - stride, prefix_tokens);
        if (b > best) best = b;
    }
    return best;
}

/// most_over_steps for one-token steps, the decode steps, walked without a division per step:
/// from t to t + 1 slots (t processed) a table grows when t is a multiple of its block; a window
/// drops a block when t + 1 - window is a positive multiple of the block; a chunk drops its blocks
/// when t is a multiple of the chunk; an aligned state holds a second block when t is a multiple
/// of its block.
[[nodiscard]] constexpr std::uint64_t most_over_decode(const BlockPoolSpec& s, std::uint64_t first,
                                                       std::uint64_t count,
                                                       std::uint64_t prefix_tokens) {
    if (count == 0) return 0;
    std::uint64_t t = first + count - step_period(s, 1, count);
    FixedArray<std::uint64_t, max_block_groups> held{}, at{}, window_at{};
    std::uint64_t total = 0;
    for (std::uint32_t i = 0; i < s.num_groups; ++i) {
        const BlockGroup& g = s.groups[i];
        held[i] = group_blocks(g, t, t - 1) - shared_in_table(g, prefix_tokens);
        at[i] = t % g.block_size;  // t mod block
        if (g.kind == BlockGroupKind::sliding_window) window_at[i] = g.span % g.block_size;
        if (g.kind == BlockGroupKind::chunked_local) window_at[i] = t % g.span;  // t mod chunk
        total += g.count * held[i];
    }
    std::uint64_t best = total;
    for (const std::uint64_t end = first + count - 1; t < end; ++t) {
        total = 0;
        for (std::uint32_t i = 0; i < s.num_groups; ++i) {
            const BlockGroup& g = s.groups[i];
            const bool block_edge = at[i] == 0;
            switch (g.kind) {
                case BlockGroupKind::full:
                    held[i] += block_edge ? 1 : 0;
                    break;
                case BlockGroupKind::sliding_window:
                    held[i] += block_edge ? 1 : 0;
                    held[i] -= t + 1 > g.span && (at[i] + 1) % g.block_size == window_at[i] ? 1 : 0;
                    break;
                case BlockGroupKind::chunked_local:
                    if (window_at[i] == 0)
                        held[i] = ceil_div(t + 1, g.block_size) - t / g.block_size;
                    else
                        held[i] += block_edge ? 1 : 0;
                    window_at[i] = window_at[i] + 1 == g.span ? 0 : window_at[i] + 1;
                    break;
                case BlockGroupKind::state:
                    held[i] = (g.align && block_edge ? 2 : 1) + g.extra_blocks;
                    break;
            }
            at[i] = at[i] + 1 == g.block_size ? 0 : at[i] + 1;
            total += g.count * held[i];
        }
        if (total > best) best = total;
    }
    return best;
}

/// The most own blocks over a request's decode steps: slots prompt + 1 to prompt + max_new - 1.
[[nodiscard]] constexpr std::uint64_t steady_own(const BlockPoolSpec& s, std::uint64_t prompt,
                                                 std::uint64_t max_new,
                                                 std::uint64_t prefix_tokens) {
    return most_over_decode(s, prompt + 1, max_new - 1, prefix_tokens);
}

/// The most own blocks over the steps after the one that left `tokens` slots: the rest of the
/// prompt in chunks, then decode, whose most is `decode` (steady_own).
[[nodiscard]] constexpr std::uint64_t future_own(const BlockPoolSpec& s, std::uint64_t tokens,
                                                 std::uint64_t prompt, std::uint64_t chunk,
                                                 std::uint64_t decode,
                                                 std::uint64_t prefix_tokens) {
    std::uint64_t best = 0;
    if (tokens < prompt) {
        const std::uint64_t whole = (prompt - tokens - 1) / chunk;  // chunks that end before it
        best = most_over_steps(s, tokens + chunk, chunk, whole, prefix_tokens);
        const std::uint64_t last = own_blocks(s, prompt, tokens + whole * chunk, prefix_tokens);
        if (last > best) best = last;
    }
    return decode > best ? decode : best;
}

}  // namespace detail

/// The blocks a request of `prompt` tokens generating up to `max_new` takes in an empty pool of
/// `s`, with `cached` prompt tokens found in the prefix cache (a multiple of every group's block
/// size, below the prompt) and `chunk` prompt tokens per prefill step (0: the whole prompt in one
/// step). Its last step gives it prompt + max_new - 1 slots: the last token generated is never fed
/// back. The prefix's blocks are counted, as the first request to use it pays them.
[[nodiscard]] constexpr RequestNeed request_need(const BlockPoolSpec& s, std::uint64_t prompt,
                                                 std::uint64_t max_new, std::uint64_t cached = 0,
                                                 std::uint64_t chunk = 0) {
    KVPLAN_EXPECTS(prompt >= 1 && max_new >= 1 && cached < prompt);
    validate(s);
    detail::guard_block_counts(s, detail::add(prompt, max_new - 1, "a request's tokens"));
    const std::uint64_t step = chunk == 0 || chunk > prompt - cached ? prompt - cached : chunk;
    const std::uint64_t first = cached + step;
    const std::uint64_t pfx = detail::prefix_blocks(s, cached);
    RequestNeed n;
    n.gate = s.full_sequence_must_fit ? detail::gate_blocks(s, prompt, cached, cached, false) : 0;
    n.admission = detail::own_blocks(s, first, cached, cached) + pfx;
    const std::uint64_t decode = detail::steady_own(s, prompt, max_new, cached);
    const std::uint64_t future = detail::future_own(s, first, prompt, step, decode, cached) + pfx;
    n.peak = future > n.admission ? future : n.admission;
    n.steady = max_new > 1 ? decode + pfx : 0;
    return n;
}

/// Requests of one shape the pool runs at once under AdmitPolicy::no_preemption when each is
/// admitted after the previous one's prompt is in: the last admitted needs its peak, the others
/// their steady figure, so 1 + (usable - peak) / steady (usable / peak if it never decodes).
[[nodiscard]] constexpr std::uint64_t concurrent_requests(const BlockPoolSpec& s,
                                                          std::uint64_t prompt,
                                                          std::uint64_t max_new) {
    const RequestNeed n = request_need(s, prompt, max_new);
    const std::uint64_t usable = s.usable_blocks();
    if (n.peak > usable) return 0;
    return n.steady == 0 ? usable / n.peak : 1 + (usable - n.peak) / n.steady;
}

/// A block pool in use: the free blocks, and under no_preemption the blocks reserved. Requests
/// are RequestBlocks owned by the caller; the pool keeps no per-request state and never allocates.
class BlockPool {
   public:
    /// A pool of `spec` with every usable block free. Throws InvalidInput for a bad spec.
    constexpr explicit BlockPool(const BlockPoolSpec& spec,
                                 AdmitPolicy policy = AdmitPolicy::engine)
        : spec_(spec), policy_(policy), free_(spec.usable_blocks()) {
        validate(spec_);
    }

    [[nodiscard]] constexpr const BlockPoolSpec& spec() const noexcept { return spec_; }
    [[nodiscard]] constexpr AdmitPolicy policy() const noexcept { return policy_; }
    /// Blocks no request holds (cached blocks nobody holds count as free, as in vLLM).
    [[nodiscard]] constexpr std::uint64_t free_blocks() const noexcept { return free_; }
    /// Blocks requests and shared prefixes hold.
    [[nodiscard]] constexpr std::uint64_t used_blocks() const noexcept {
        return spec_.usable_blocks() - free_;
    }
    /// Blocks reserved for running requests and their prefixes (no_preemption; 0 under engine).
    [[nodiscard]] constexpr std::uint64_t committed_blocks() const noexcept { return committed_; }
    /// Requests admitted and not released.
    [[nodiscard]] constexpr std::uint64_t running() const noexcept { return running_; }

    /// Admits a waiting request of `prompt` tokens that may generate `max_new` into `r` and runs
    /// its first step: `o.chunk` prompt tokens (all of them by default) after the prefix hit. The
    /// step's blocks must be free beside the watermark, and so must the whole prompt's
    /// (full_sequence_must_fit); under no_preemption its peak must fit beside the reservations.
    /// `never`: prompt + max_new - 1 exceeds max_model_len, or the request cannot run even alone:
    /// its first step or its last needs more than the usable blocks (no_preemption: its peak).
    /// Preconditions: `r` is not running; prompt, max_new >= 1; a prefix is shorter than the
    /// prompt and a multiple of every group's block size, and when it is not yet cached the first
    /// step computes all of it (o.chunk covers it).
    [[nodiscard]] constexpr AdmitResult admit(RequestBlocks& r, std::uint64_t prompt,
                                              std::uint64_t max_new, const AdmitOptions& o = {}) {
        KVPLAN_EXPECTS(!r.running && prompt >= 1 && max_new >= 1);
        const std::uint64_t last = detail::add(prompt, max_new - 1, "a request's tokens");
        SharedPrefix* px = o.prefix;
        const std::uint64_t pt = px != nullptr ? px->tokens : 0;
        KVPLAN_EXPECTS(pt < prompt);
        for (std::uint32_t i = 0; i < spec_.num_groups; ++i)
            KVPLAN_EXPECTS(spec_.groups[i].kind == BlockGroupKind::state ||
                           pt % spec_.groups[i].block_size == 0);
        const std::uint64_t usable = spec_.usable_blocks();
        AdmitResult res;
        res.available = free_;
        if (spec_.max_model_len != 0 && last > spec_.max_model_len) {
            res.status = AdmitStatus::never;
            return res;
        }
        detail::guard_block_counts(spec_, last);

        const bool held = px != nullptr && px->holders > 0;
        const std::uint64_t hit = px != nullptr && (held || px->cached) ? pt : 0;
        const std::uint64_t rest = prompt - hit;
        const std::uint64_t chunk = o.chunk == 0 || o.chunk > rest ? rest : o.chunk;
        const std::uint64_t tokens = hit + chunk;
        KVPLAN_EXPECTS(tokens >= pt);  // a prefix not yet cached is computed by the first step
        const std::uint64_t pfx = detail::prefix_blocks(spec_, pt);
        const std::uint64_t own = detail::own_blocks(spec_, tokens, hit, pt);
        const std::uint64_t step = own + (held ? 0 : pfx);
        const std::uint64_t gate =
            spec_.full_sequence_must_fit ? detail::gate_blocks(spec_, prompt, hit, pt, held) : 0;
        const std::uint64_t gate_alone =
            held ? detail::gate_blocks(spec_, prompt, hit, pt, false) : gate;
        // KVCacheManager.allocate_slots: the watermark applies to a waiting request when others
        // run; each check compares with the same free count.
        const std::uint64_t watermark = running_ > 0 ? spec_.watermark_blocks : 0;
        const std::uint64_t ask = (gate > step ? gate : step) + watermark;
        // Alone in the pool: its first step, and its last (a full table is longest there), must
        // fit.
        std::uint64_t alone = gate_alone > own + pfx ? gate_alone : own + pfx;
        if (last > tokens) {
            const std::uint64_t end = detail::own_blocks(spec_, last, last - 1, pt) + pfx;
            if (end > alone) alone = end;
        }
        res.blocks = ask;
        if (alone > usable) {
            res.status = AdmitStatus::never;
            return res;
        }
        std::uint64_t reserve = 0, steady = 0;
        if (policy_ == AdmitPolicy::no_preemption) {
            steady = detail::steady_own(spec_, prompt, max_new, pt);
            const std::uint64_t future =
                detail::future_own(spec_, tokens, prompt, chunk, steady, pt);
            reserve = own > future ? own : future;
            if (reserve + pfx > usable) {
                res.status = AdmitStatus::never;
                res.blocks = reserve + pfx;
                return res;
            }
            const std::uint64_t room = usable - committed_;
            const std::uint64_t want = reserve + (held ? 0 : pfx);
            if (want > room) {
                res.blocks = want;
                res.available = room;
                return res;
            }
        }
        if (ask > free_) return res;

        // Taken: the step's own blocks per group, and the prefix's for its first holder.
        for (std::uint32_t i = 0; i < spec_.num_groups; ++i) {
            const BlockGroup& g = spec_.groups[i];
            r.held[i] = g.count * (group_blocks(g, tokens, hit) - detail::shared_in_table(g, pt));
        }
        for (std::uint32_t i = spec_.num_groups; i < max_block_groups; ++i) r.held[i] = 0;
        free_ -= step;
        if (px != nullptr) {
            if (!held) {
                px->blocks = pfx;
                if (policy_ == AdmitPolicy::no_preemption) committed_ += pfx;
            }
            ++px->holders;
            px->cached = true;
        }
        r.prompt = prompt;
        r.max_new = max_new;
        r.tokens = tokens;
        r.chunk = chunk;
        r.prefix = px;
        r.committed = reserve;
        r.steady = steady;
        r.running = true;
        committed_ += reserve;
        ++running_;
        res.status = AdmitStatus::admitted;
        res.blocks = step;
        return res;
    }

    /// Runs a later step of `r` that computes `n` more tokens (the next prefill chunk, or 1 when
    /// decoding). The blocks the window left are freed first; the step's new blocks are taken if
    /// free. Otherwise nothing else changes and the step can be retried, after a preemption.
    /// Preconditions: `r` is running; 1 <= n and its slots stay within prompt + max_new - 1;
    /// under no_preemption the steps are those its reservation counted: the admission's chunk
    /// until the prompt is in (the last one shorter), then one token.
    [[nodiscard]] constexpr GrowResult grow(RequestBlocks& r, std::uint64_t n = 1) {
        KVPLAN_EXPECTS(r.running && n >= 1 && n <= r.tokens_left());
        KVPLAN_EXPECTS(policy_ != AdmitPolicy::no_preemption || n == r.next_step());
        const std::uint64_t from = r.tokens, to = from + n;
        const std::uint64_t pt = r.prefix != nullptr ? r.prefix->tokens : 0;
        FixedArray<std::uint64_t, max_block_groups> kept{};
        std::uint64_t take = 0, freed = 0;
        for (std::uint32_t i = 0; i < spec_.num_groups; ++i) {
            const BlockGroup& g = spec_.groups[i];
            const std::uint64_t now =
                g.count * (group_blocks(g, to, from) - detail::shared_in_table(g, pt));
            // New blocks: the table's growth; for a state, align mode's new running state.
            const std::uint64_t table_growth =
                detail::ceil_div(to, g.block_size) - detail::ceil_div(from, g.block_size);
            const std::uint64_t grown =
                g.count * (g.kind != BlockGroupKind::state ? table_growth
                                                           : (g.align && table_growth > 0 ? 1 : 0));
            kept[i] = now - grown;
            freed += r.held[i] - kept[i];
            take += grown;
        }
        free_ += freed;
        GrowResult res{.grown = false, .taken = take, .freed = freed};
        if (take > free_) {
            for (std::uint32_t i = 0; i < spec_.num_groups; ++i) r.held[i] = kept[i];
            return res;
        }
        for (std::uint32_t i = 0; i < spec_.num_groups; ++i) {
            const BlockGroup& g = spec_.groups[i];
            r.held[i] = g.count * (group_blocks(g, to, from) - detail::shared_in_table(g, pt));
        }
        free_ -= take;
        r.tokens = to;
        if (policy_ == AdmitPolicy::no_preemption && to >= r.prompt) {
            // Its prompt is in: it reserves what it holds now or will hold while decoding.
            const std::uint64_t now = r.blocks();
            const std::uint64_t reserve = now > r.steady ? now : r.steady;
            committed_ -= r.committed - reserve;
            r.committed = reserve;
        }
        res.grown = true;
        return res;
    }

    /// Returns every block `r` holds, and its prefix's once no other request uses it: a finished
    /// request, or a preempted one (vLLM's scheduler frees it whole and recomputes it later).
    /// Returns the blocks freed. Precondition: `r` is running.
    constexpr std::uint64_t release(RequestBlocks& r) {
        KVPLAN_EXPECTS(r.running);
        std::uint64_t freed = r.blocks();
        committed_ -= r.committed;
        if (r.prefix != nullptr && --r.prefix->holders == 0) {
            freed += r.prefix->blocks;
            if (policy_ == AdmitPolicy::no_preemption) committed_ -= r.prefix->blocks;
            r.prefix->blocks = 0;
        }
        free_ += freed;
        --running_;
        r = RequestBlocks{};
        return freed;
    }

   private:
    BlockPoolSpec spec_;
    AdmitPolicy policy_;
    std::uint64_t free_ = 0;
    std::uint64_t committed_ = 0;
    std::uint64_t running_ = 0;
};

}  // namespace kvplan

#pragma once

// A small deterministic generator of valid model configs for property tests: random layer counts,
// heads, head dimensions, windows, MLA latents, constant states, shared layers and MoE shapes,
// from a seed (random.hpp: $KVPLAN_TEST_SEED or the test's own) so a failure reproduces exactly.

#include <array>
#include <catch2/catch.hpp>
#include <cstdint>
#include <kvplan/layout.hpp>
#include <kvplan/model.hpp>
#include <string>
#include <vector>

#include "random.hpp"

namespace kvplan::testing {

/// The tests' one generator (random.hpp: our own distributions, the same values from the same
/// seed on every standard library), with the draws a generated config makes.
class Rng {
   public:
    explicit Rng(std::uint64_t seed) : rng_(seed) {}
    /// Uniform in [lo, hi].
    std::uint64_t between(std::uint64_t lo, std::uint64_t hi) { return rng_.between(lo, hi); }
    /// True with probability percent / 100.
    bool chance(unsigned percent) { return rng_.between<std::uint64_t>(0, 99) < percent; }
    template <class T, std::size_t N>
    T pick(const std::array<T, N>& a) {
        return a[rng_.between<std::size_t>(0, N - 1)];
    }
    template <class T, std::size_t N>
    T pick(const FixedArray<T, N>& a) {
        return a[rng_.between<std::size_t>(0, N - 1)];
    }

   private:
    kvplan::test::Rng rng_;
};

/// A random but valid config: construct a Model from it and it validates.
inline ModelConfig generate_config(Rng& r, std::uint32_t index = 0) {
    ModelConfig c;
    c.name = ModelName(("generated-" + std::to_string(index)).c_str());
    const std::uint32_t kv_heads =
        static_cast<std::uint32_t>(r.pick(std::array{1, 2, 4, 8, 16, 32}));
    const std::uint32_t group = static_cast<std::uint32_t>(r.pick(std::array{1, 2, 4, 8}));
    const std::uint32_t head_dim =
        static_cast<std::uint32_t>(r.pick(std::array{32, 64, 80, 96, 128, 160, 256}));
    c.num_heads = kv_heads * group;
    c.hidden_size = std::uint64_t{c.num_heads} * head_dim;
    c.intermediate_size = c.hidden_size * r.between(2, 4);
    c.vocab_size = r.pick(std::array<std::uint64_t, 3>{32000, 128256, 151936});
    c.max_position_embeddings = r.pick(std::array<std::uint64_t, 4>{0, 4096, 32768, 131072});

    // The main spec (it always holds bytes), then up to three others.
    std::vector<CacheSpec> specs;
    const bool mla = r.chance(20);
    if (mla) {
        specs.push_back(
            mla_latent(static_cast<std::uint32_t>(r.pick(std::array{64, 128, 256, 512})),
                       static_cast<std::uint32_t>(r.pick(std::array{0, 32, 64}))));
        c.mla = {.q_lora_rank = 0, .qk_nope_head_dim = head_dim, .v_head_dim = head_dim};
    } else {
        CacheSpec full = full_attention(kv_heads, head_dim);
        if (r.chance(15)) full.v_head_dim = head_dim / 2;  // K and V of different widths
        specs.push_back(full);
    }
    if (r.chance(40))
        specs.push_back(sliding_window(
            kv_heads, head_dim,
            r.chance(20) ? r.between(1, 64)
                         : r.pick(std::array<std::uint64_t, 4>{128, 512, 1024, 4096})));
    if (r.chance(15)) specs.push_back(constant_state(Bytes::exactly(r.between(1, 1u << 20))));
    if (r.chance(10)) specs.push_back(shared_cache());

    // A repeating pattern over the specs, starting with the main one.
    const std::size_t period = r.between(1, 6);
    std::vector<std::size_t> pattern{0};
    for (std::size_t i = 1; i < period; ++i) pattern.push_back(r.between(0, specs.size() - 1));
    const std::uint32_t layers =
        static_cast<std::uint32_t>(r.chance(5) ? r.between(200, max_layers) : r.between(1, 96));
    for (std::uint32_t i = 0; i < layers; ++i) c.layers.append(specs[pattern[i % period]]);

    if (r.chance(40)) {
        c.moe.experts = static_cast<std::uint32_t>(r.pick(std::array{8, 16, 64, 128, 256}));
        c.moe.experts_per_token = static_cast<std::uint32_t>(r.between(1, 8));
        c.moe.expert_intermediate_size = r.pick(std::array<std::uint64_t, 3>{512, 1408, 2048});
        c.moe.shared_experts = static_cast<std::uint32_t>(r.between(0, 2));
        c.moe.first_dense_layers =
            static_cast<std::uint32_t>(r.between(0, layers < 3 ? layers : 3));
        c.moe.layer_freq = static_cast<std::uint32_t>(r.between(1, 2));
    }
    return c;
}

/// The TP degrees the model can take, up to 64: divisors of num_heads that divide or are
/// multiples of every attention layer's KV heads.
inline std::vector<std::uint32_t> valid_tp(const Model& m) {
    std::vector<std::uint32_t> out;
    for (std::uint32_t tp = 1; tp <= 64; tp *= 2) {
        if (m.config().num_heads % tp != 0) continue;
        bool ok = true;
        for (std::uint32_t i = 0; i < m.layers().num_specs; ++i) {
            const CacheSpec& s = m.layers().specs[i];
            if (s.kind != CacheKind::full_attention && s.kind != CacheKind::sliding_window)
                continue;
            ok = ok && (tp <= s.kv_heads ? s.kv_heads % tp == 0 : tp % s.kv_heads == 0);
        }
        if (ok) out.push_back(tp);
    }
    return out;
}

}  // namespace kvplan::testing

// Sizes print as exact byte counts in Catch's failure messages.
namespace Catch {
template <>
struct StringMaker<kvplan::Bytes> {
    static std::string convert(kvplan::Bytes b) { return std::to_string(b.count()) + " B"; }
};
}  // namespace Catch

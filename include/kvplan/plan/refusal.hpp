#pragma once

// Why an engine does not start, in one sentence: the text every front end shows for a refusal
// (`kvplan fit`'s verdict, `kvplan plan`'s refused candidate, `kvplan check`'s reason, the Python
// module), so that a refusal reads the same wherever it is met. Standard library only: sizes print
// as kvplan/format.hpp prints them ("79.19 GiB", "512 B").

#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>

#include "../engine/kind.hpp"
#include "../engine/startup.hpp"
#include "../kv_bytes.hpp"
#include "../units.hpp"
#include "evaluate.hpp"

namespace kvplan {

namespace detail {

/// 1234567 -> "1,234,567".
[[nodiscard]] inline std::string grouped_digits(std::uint64_t n) {
    const std::string digits = std::to_string(n);
    std::string out;
    for (std::size_t i = 0; i < digits.size(); ++i) {
        if (i != 0 && (digits.size() - i) % 3 == 0) out.push_back(',');
        out.push_back(digits[i]);
    }
    return out;
}

/// A size in the largest binary unit not above it, two decimals ("79.19 GiB"); below 1 KiB the
/// whole bytes ("512 B"). The same text as fmt::format("{}", b) with kvplan/format.hpp.
[[nodiscard]] inline std::string size_text(Bytes b) {
    if (b.count() < 1024) return std::to_string(b.count()) + " B";
    constexpr ByteUnit units[] = {KiB, MiB, GiB, TiB};
    ByteUnit u = KiB;
    for (const ByteUnit& c : units)
        if (b.count() >= c.bytes) u = c;
    char buf[48];
    std::snprintf(buf, sizeof buf, "%.2f %s", b.in(u), u.symbol);
    return buf;
}

/// A number as "%g" prints it: "40", "2.5".
[[nodiscard]] inline std::string short_factor(double f) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%g", f);
    return buf;
}

}  // namespace detail

/// Why the engine of `a` does not start, with the figures that refuse it; empty when it starts.
[[nodiscard]] inline std::string refusal_text(const ReplicaAnswer& a) {
    using detail::grouped_digits;
    using detail::size_text;
    const std::string engine(display_name(a.serving.engine));
    const EngineMemory& m = a.memory();
    switch (a.refusal) {
        case Refusal::none:
            return "";
        case Refusal::context_limit: {
            std::string s = grouped_digits(a.demand.context) +
                            " tokens pass the model's limit of " + grouped_digits(a.limit.tokens) +
                            " tokens (" + a.limit.field + " = " +
                            grouped_digits(a.limit.field_tokens);
            if (a.limit.rope_factor != 1.0)
                s += ", x " + detail::short_factor(a.limit.rope_factor) + " rope scaling (" +
                     a.limit.rope_type + ")";
            return s + "); " + engine +
                   " refuses that length (--allow-long-context serves it, as "
                   "VLLM_ALLOW_LONG_MAX_MODEL_LEN=1 lets vLLM)";
        }
        case Refusal::weights:
            if (m.charged == m.weights)
                return "the weights (" + size_text(m.weights) + ") need " + size_text(m.shortfall) +
                       " more than the engine's " + size_text(m.fraction_bytes) + " of memory";
            return "the weights (" + size_text(m.weights) + ") and the terms charged with them (" +
                   size_text(m.charged - m.weights) + ") need " + size_text(m.shortfall) +
                   " more than the engine's " + size_text(m.fraction_bytes) + " of memory";
        case Refusal::outside_fraction:
            // TensorRT-LLM takes its fraction of what is free after the weights and the profiling
            // run: those must fit the GPU itself, and no fraction helps when they do not.
            if (a.serving.engine == Engine::trtllm) {
                const Bytes beside =
                    m.lora + m.activation + m.cuda_context + m.comm_buffers + m.cuda_graphs;
                return "the weights (" + size_text(m.weights) + ") and the terms beside them (" +
                       size_text(beside) + ") need " +
                       size_text(m.weights + beside - m.memory_total) + " more than the GPU's " +
                       size_text(m.memory_total);
            }
            return "the terms kept outside the engine's fraction (" + size_text(m.outside) +
                   ") do not fit the " + size_text(m.memory_total - m.fraction_bytes) +
                   " it leaves: lower the fraction";
        case Refusal::request: {
            // vLLM checks for memory before it sizes a request, and names an estimated length
            // only when one token fits (vllm/v1/core/kv_cache_utils.py,
            // _check_enough_kv_cache_memory).
            if (a.serving.engine == Engine::vllm && a.kv_budget.is_zero())
                return "vLLM has no memory for the cache blocks (0 B of KV memory per GPU; "
                       "vllm/v1/core/kv_cache_utils.py, _check_enough_kv_cache_memory)";
            std::string s = "one sequence of " + grouped_digits(a.demand.context) +
                            " tokens does not fit the " + size_text(a.kv_budget) +
                            " of KV memory per GPU";
            if (a.estimated_max_model_len && *a.estimated_max_model_len > 0)
                s += "; the estimated maximum model length is " +
                     grouped_digits(*a.estimated_max_model_len) + " tokens";
            return s;
        }
        case Refusal::quantization_block: {
            const StartupCheck& c = a.startup;
            std::string fix;
            if (c.expert_parallel_starts)
                fix = a.serving.engine == Engine::sglang
                          ? "--ep-size " + std::to_string(a.replica.parallel.tp) +
                                " keeps every expert whole"
                      : a.serving.engine == Engine::trtllm
                          ? "--ep_size " + std::to_string(a.replica.parallel.tp) +
                                " keeps every expert whole"
                          : "--enable-expert-parallel keeps every expert whole";
            if (c.starting_tp != 0)
                fix += std::string(fix.empty() ? "" : "; ") + "tp " +
                       std::to_string(c.starting_tp) + " (pp x " +
                       std::to_string(a.replica.parallel.tp / c.starting_tp) + ") starts";
            if (c.expert_parallel_tp != 0) {
                const std::uint32_t dp = a.replica.parallel.dp > 0 ? a.replica.parallel.dp : 1;
                fix += std::string(fix.empty() ? "" : "; ") + "tp " +
                       std::to_string(c.expert_parallel_tp) + " x dp " +
                       std::to_string(dp * (a.replica.parallel.tp / c.expert_parallel_tp)) +
                       " with --enable-expert-parallel starts";
            }
            const char* part =
                c.part == StartupPart::routed_experts   ? "routed experts' gate/up and down"
                : c.part == StartupPart::shared_experts ? "shared experts' gate/up and down"
                                                        : "dense MLP's gate/up and down";
            return std::string("the ") + part + " (" + grouped_digits(c.width) + " wide) split " +
                   std::to_string(c.ways) + " ways leave " + grouped_digits(c.per_rank) +
                   " per GPU, no multiple of the " + std::to_string(c.block) +
                   "-wide fp8 weight block (" + std::string(c.source) +
                   (a.serving.engine == Engine::trtllm
                        ? ", DeepSeekFP8BlockScalesFusedMoEMethod: its assertion as it loads the "
                          "weight scales)"
                        : ", create_weights)") +
                   (fix.empty() ? std::string() : ": " + fix);
        }
        case Refusal::kv_dtype: {
            const KvDtypeCheck& c = a.kv_dtype_check;
            const std::string dtype(c.name);
            const std::string release = "v" + c.release.text();
            std::string s;
            if (c.rule == KvDtypeRule::no_engine_name) {
                // The engine's own list, then what it takes here.
                s = engine + " has no " + std::string(name(c.dtype)) +
                    " KV cache in any release: its cache dtypes (" + std::string(c.source) +
                    (c.engine == Engine::vllm     ? ", CacheDType"
                     : c.engine == Engine::sglang ? ", --kv-cache-dtype choices"
                                                  : ", KvCacheConfig.dtype") +
                    ") do not list it; on this GPU it takes";
                const char* sep = " ";
                for (const KvDtype x : all_kv_dtypes)
                    if (c.kv_dtype_accepted(x)) {
                        s += sep;
                        s += name(x);
                        sep = ", ";
                    }
            } else if (c.rule == KvDtypeRule::release_too_old) {
                s = "vLLM " + release + " does not know --kv-cache-dtype " + dtype +
                    ", which came in v" + c.since.text() + " (" + std::string(c.source) +
                    ", CacheDType): the release exits at argument parsing";
                if (c.newer_release_starts)
                    s += "; --engine-version " + c.since.text() + " or later starts";
                else
                    s += ", and every release that names it refuses it with MLA (" +
                         grouped_digits(c.mla_layers) + " MLA layers)";
            } else if (c.rule == KvDtypeRule::no_sparse_mla_backend) {
                s = "vLLM " + release + " has no attention backend for sparse MLA with " +
                    "--kv-cache-dtype " + dtype +
                    " on compute capability 12.x: " + std::string(c.why);
                if (c.newer_release_starts) {
                    // The release and, where needed, the dtype together.
                    s += "; --engine-version " + c.since.text() + " or later";
                    if (c.starts_with) s += std::string(" with --kv-dtype ") + name(*c.starts_with);
                    return s + " starts";
                }
            } else {
                s = "vLLM refuses an " + dtype + " KV cache for a model with MLA layers (" +
                    grouped_digits(c.mla_layers) + " here; " + std::string(c.source) +
                    ", VllmConfig.validate_nvfp4_kv_cache_with_mla)";
            }
            if (c.starts_with)
                s += std::string("; --kv-dtype ") + name(*c.starts_with) + " (" +
                     size_text(kv_bytes_per_token(a.replica.model, KvFormat{*c.starts_with})) +
                     " per token against " + size_text(a.kv_per_token) + ") starts";
            return s;
        }
        case Refusal::cache:
            if (a.serving.engine == Engine::vllm && !a.report.vllm.refused.empty())
                return std::string(a.report.vllm.refused);
            return engine + " leaves no room for the KV cache";
    }
    return std::string(name(a.refusal));
}

/// The verdict line of a replica that does not start: "DOES NOT START: <model> under <engine> on
/// <where>: <refusal_text>", `where` naming the GPUs as the caller shows them.
[[nodiscard]] inline std::string does_not_start_text(const ReplicaAnswer& a,
                                                     std::string_view where) {
    const ModelName& n = a.replica.model.name();
    return "DOES NOT START: " + std::string(n.data(), n.size()) + " under " +
           std::string(name(a.serving.engine)) + " on " + std::string(where) + ": " +
           refusal_text(a);
}

}  // namespace kvplan

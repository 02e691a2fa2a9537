#pragma once

// The engine's start-up before it measures memory, step by step as vLLM runs it
// (vllm/v1/worker/gpu_worker.py: load_model, then determine_available_memory):
//
//   configuration  the KV dtype the release and the model take (vllm_kv_dtype_check, here:
//                  argument parsing and VllmConfig's validators), the layout's checks that throw
//                  InvalidLayout (layout.hpp: heads, KV heads and experts per rank, the expert
//                  width under dp x tp) and the quantized layers' widths per rank (startup_check,
//                  here): vLLM raises while it creates the weights, before any memory is measured;
//   weights        the weights as the engine holds them once loaded (loaded_weights, here):
//                  MXFP4 experts padded and repacked for the kernel the GPU runs;
//   memory         the activation peak and the pool (engine/report.hpp, engine_memory).
//
// A refused check is an answer, not an error: evaluate() (plan/evaluate.hpp) returns DOES NOT
// START with the rule, its figures and, where one exists, the change that makes it start.

#include <cstdint>
#include <optional>
#include <string_view>

#include "../detail/checked.hpp"
#include "../detail/enum_table.hpp"
#include "../fixed_array.hpp"
#include "../gpu.hpp"
#include "../gpu_family.hpp"
#include "../kv_bytes.hpp"
#include "../kv_support.hpp"
#include "../layout.hpp"
#include "../model.hpp"
#include "../units.hpp"
#include "../weights.hpp"
#include "kind.hpp"
#include "kv_dtype_names.hpp"
#include "release.hpp"
#include "sglang.hpp"
#include "vllm_backend.hpp"
#include "vllm_deepseek_v4.hpp"

namespace kvplan {

/// The part of a layer a start-up check found too narrow on a rank.
enum class StartupPart : std::uint8_t {
    routed_experts,  ///< each routed expert's gate/up outputs and down input
    shared_experts,  ///< the shared experts' gate/up outputs and down input
    dense_mlp,       ///< a dense MLP's gate/up outputs and down input
};

inline constexpr FixedArray<detail::EnumName<StartupPart>, 3> startup_part_names{{
    {StartupPart::routed_experts, "routed_experts"},
    {StartupPart::shared_experts, "shared_experts"},
    {StartupPart::dense_mlp, "dense_mlp"},
}};

[[nodiscard]] constexpr const char* name(StartupPart p) noexcept {
    return detail::enum_name(startup_part_names, p);
}

/// A quantized layer's width per rank that is no multiple of its weight block: the engine raises
/// while it creates the weights. Both engines check the same rule: vLLM in
/// vllm/model_executor/layers/quantization/fp8.py (Fp8MoEMethod.create_weights for the experts,
/// "The output_size of gate's and up's weight = 192 is not divisible by weight quantization
/// block_n = 128"; validate_fp8_block_shape in utils/fp8_utils.py for the dense and shared
/// layers), SGLang in python/sglang/srt/layers/quantization/fp8.py (Fp8MoEMethod.create_weights,
/// the same message).
///
/// The rule holds in every vLLM release kvplan knows: no release pads a block-FP8 checkpoint's
/// routed-expert shards to whole blocks. The padding proposed for them (PR #39046 and the ROCm
/// PR #48173) was closed unmerged, PR #52915 (padding any sub-block FP8 shard, 2026-08-19) is
/// still open, and a v0.28-era start of a block-FP8 MoE refuses at tp 2, 4 and 8 with this
/// message (issue #54178, 2026-08-28). What was merged pads other weights: FP8 online
/// quantization's own blocks of a bf16 checkpoint (PR #44763; kvplan's --weight-dtype fp8 quantizes
/// per tensor, which no block constrains) and DeepSeek-V4's block-FP8 shared expert at tp 16
/// (PR #46001, that model's MLP only). So the refusal is not made per release.
struct StartupCheck {
    bool refused = false;
    StartupPart part = StartupPart::routed_experts;
    std::uint64_t width = 0;     ///< the part's whole width (moe_intermediate_size)
    std::uint32_t ways = 1;      ///< ranks it is split over
    std::uint64_t per_rank = 0;  ///< width / ways: gate/up's output and down's input per rank
    std::uint32_t block = 0;     ///< the weight block (weight_block_size)
    std::string_view source{};   ///< the engine file that raises
    /// Expert parallelism keeps every routed expert whole on its GPU (vLLM
    /// --enable-expert-parallel, SGLang --ep-size = tp), and every part then passes.
    bool expert_parallel_starts = false;
    /// The largest tensor-parallel degree below the layout's at which every part passes, the other
    /// GPUs going to pipeline stages (0: none does).
    std::uint32_t starting_tp = 0;
    /// vLLM, where expert parallelism alone does not start it: the largest tensor-parallel degree
    /// below the layout's at which the dense and shared parts pass with the routed experts whole,
    /// the other GPUs going to data-parallel ranks (tp x dp with --enable-expert-parallel, the
    /// layout DeepSeek's models are served in; 0: none does). Under data parallelism vLLM splits
    /// the dense MLP and the shared experts over tp alone and, with expert parallelism, spreads the
    /// experts whole over dp x tp (vllm/model_executor/layers/fused_moe/config.py).
    std::uint32_t expert_parallel_tp = 0;
};

namespace detail {

/// Whether a part `width` wide split `ways` ways keeps whole blocks of `block` on each rank: the
/// rank's gate/up output rows and down input columns, width / ways (vLLM splits a width
/// evenly; a width that does not divide is refused by the layout before this check).
[[nodiscard]] constexpr bool whole_blocks(std::uint64_t width, std::uint32_t ways,
                                          std::uint32_t block) noexcept {
    if (width == 0 || ways <= 1 || block == 0) return true;
    return width % ways == 0 && (width / ways) % block == 0;
}

/// The fp8 block of the tensors of group `g` under `w` (0: not block-quantized).
[[nodiscard]] constexpr std::uint32_t fp8_block_of(const WeightOptions& w, ParamGroup g) noexcept {
    WeightFormat f = w.format;
    if (g == ParamGroup::routed_experts && w.expert_format) f = *w.expert_format;
    if (g == ParamGroup::shared_experts && w.shared_expert_format) f = *w.shared_expert_format;
    if (g == ParamGroup::dense_mlp && w.dense_mlp_format) f = *w.dense_mlp_format;
    return f == WeightFormat::fp8 ? w.layout.fp8_block : 0;
}

/// The first MLP part of `m` whose width, split as `p` says, breaks its fp8 block.
[[nodiscard]] constexpr StartupCheck first_broken_block(const Model& m, std::uint32_t dense_tp,
                                                        std::uint32_t shared_tp,
                                                        std::uint32_t expert_tp,
                                                        const WeightOptions& w) {
    const ModelConfig& c = m.config();
    StartupCheck s;
    const auto check = [&](StartupPart part, ParamGroup g, std::uint64_t width,
                           std::uint32_t ways) {
        const std::uint32_t block = fp8_block_of(w, g);
        if (s.refused || whole_blocks(width, ways, block)) return;
        s.refused = true;
        s.part = part;
        s.width = width;
        s.ways = ways;
        s.per_rank = width / ways;
        s.block = block;
    };
    bool dense = false, moe = false;
    for (std::uint32_t i = 0; i < m.num_layers(); ++i) {
        if (!m.has_mlp(i)) continue;
        (c.moe.is_moe_layer(i) ? moe : dense) = true;
    }
    if (moe)
        check(StartupPart::routed_experts, ParamGroup::routed_experts,
              c.moe.expert_intermediate_size, expert_tp);
    if (moe)
        check(StartupPart::shared_experts, ParamGroup::shared_experts,
              detail::shared_expert_width(c.moe), shared_tp);
    if (dense) check(StartupPart::dense_mlp, ParamGroup::dense_mlp, c.intermediate_size, dense_tp);
    return s;
}

}  // namespace detail

/// The quantized widths per rank engine `e` checks when it creates the weights of `m` under `l`,
/// in the format `w`: the first part that keeps no whole blocks, with the
/// changes that make it start. vLLM and SGLang check every part; TensorRT-LLM's PyTorch backend
/// the routed experts alone: DeepSeekFP8BlockScalesFusedMoEMethod (tensorrt_llm/_torch/modules/
/// fused_moe/quantization.py, the block-FP8 MoE of the CUTLASS and DeepGEMM backends) asserts
/// intermediate_size_per_partition % FP8_QUANT_BLOCK_SIZE (128) == 0 as it loads a per-expert
/// checkpoint's weight_scale_inv (load_expert_all_weight_scale_fp8_block_scale, the VANILLA
/// loading mode of DeepSeek's and Qwen3's FP8 checkpoints); its per-rank scale grid is ceil(width
/// / 128) rows, so the shard would split a block. Its dense block-FP8 Linear
/// (FP8BlockScalesLinearMethod, tensorrt_llm/_torch/modules/linear.py) takes ceil-divided scale
/// shards and asserts nothing: the dense and shared parts pass. The ideal profile passes.
[[nodiscard]] constexpr StartupCheck startup_check(Engine e, const Model& m, const Layout& l,
                                                   const WeightOptions& w) {
    const Placement p = l.placement();
    if (e != Engine::vllm && e != Engine::sglang && e != Engine::trtllm) return {};
    // TensorRT-LLM: the dense and shared parts as if unsplit (no check of theirs).
    const bool experts_only = e == Engine::trtllm;
    const auto broken = [&](std::uint32_t dense, std::uint32_t shared, std::uint32_t expert) {
        return detail::first_broken_block(m, experts_only ? 1 : dense, experts_only ? 1 : shared,
                                          expert, w);
    };
    StartupCheck s = broken(p.dense_mlp_tp, p.shared_expert_tp, p.expert_tp);
    if (!s.refused) return s;
    s.source = e == Engine::vllm     ? "vllm/model_executor/layers/quantization/fp8.py"
               : e == Engine::sglang ? "python/sglang/srt/layers/quantization/fp8.py"
                                     : "tensorrt_llm/_torch/modules/fused_moe/quantization.py";
    // Expert parallelism: each routed expert whole on one GPU, the rest split as before.
    s.expert_parallel_starts =
        m.config().moe.experts != 0 && !broken(p.dense_mlp_tp, p.shared_expert_tp, 1).refused;
    // A smaller tp (the same GPUs in more pipeline stages): every degree tp set shrinks with it.
    const std::uint32_t tp = l.tp();
    for (std::uint32_t t = tp / 2; t >= 1 && s.starting_tp == 0; t /= 2) {
        const std::uint32_t f = tp / t;
        const auto shrink = [&](std::uint32_t d) { return d % f == 0 ? d / f : d; };
        if (tp % t == 0 &&
            !broken(shrink(p.dense_mlp_tp), shrink(p.shared_expert_tp), shrink(p.expert_tp))
                 .refused)
            s.starting_tp = t;
    }
    if (e == Engine::vllm && m.config().moe.experts != 0 && !s.expert_parallel_starts)
        for (std::uint32_t t = tp / 2; t >= 1 && s.expert_parallel_tp == 0; t /= 2) {
            const std::uint32_t f = tp / t;
            const auto shrink = [&](std::uint32_t d) { return d % f == 0 ? d / f : d; };
            if (tp % t == 0 && !detail::first_broken_block(m, shrink(p.dense_mlp_tp),
                                                           shrink(p.shared_expert_tp), 1, w)
                                    .refused)
                s.expert_parallel_tp = t;
        }
    return s;
}

/// The rule by which the engine refuses a KV cache's dtype before it loads anything.
enum class KvDtypeRule : std::uint8_t {
    none,  ///< the release takes the dtype for this model
    /// the release's --kv-cache-dtype choices lack the name: `vllm serve` exits at argument
    /// parsing (vllm/config/cache.py, CacheDType, the choices vllm/engine/arg_utils.py gives)
    release_too_old,
    /// an nvfp4 cache for a model with MLA layers: VllmConfig.validate_nvfp4_kv_cache_with_mla
    /// (vllm/config/vllm.py) raises while the configuration is built
    nvfp4_with_mla,
    /// no release of the engine lists the dtype among its cache dtypes: vLLM's
    /// --kv-cache-dtype choices (vllm/config/cache.py, CacheDType), SGLang's
    /// (python/sglang/srt/server_args.py), TensorRT-LLM's KvCacheConfig.dtype
    /// (tensorrt_llm/llmapi/llm_args.py); the engine exits before it loads anything
    no_engine_name,
    /// vLLM has no attention backend for a sparse MLA model's cache on the GPU: on SM 12.x
    /// main's one sparse MLA backend, FLASHINFER_MLA_SPARSE_SM120, takes the packed fp8_ds_mla
    /// cache only, and older lines have none (engine/vllm_backend.hpp, vllm_sparse_mla_refusal);
    /// the model's attention layers find no backend as they are built
    no_sparse_mla_backend,
};

inline constexpr FixedArray<detail::EnumName<KvDtypeRule>, 5> kv_dtype_rule_names{{
    {KvDtypeRule::none, "none"},
    {KvDtypeRule::release_too_old, "release_too_old"},
    {KvDtypeRule::nvfp4_with_mla, "nvfp4_with_mla"},
    {KvDtypeRule::no_engine_name, "no_engine_name"},
    {KvDtypeRule::no_sparse_mla_backend, "no_sparse_mla_backend"},
}};

[[nodiscard]] constexpr const char* name(KvDtypeRule r) noexcept {
    return detail::enum_name(kv_dtype_rule_names, r);
}

/// The engine's start-up check of the KV cache's dtype: the rule that refuses it, its figures,
/// the engine file, and the change that starts it. The user's input is valid (kvplan sizes the
/// cache in that dtype); the engine says no. A dtype the GPU cannot hold at all (kv_support.hpp) is
/// not this: no engine runs it, and evaluate() refuses it as invalid input.
struct KvDtypeCheck {
    KvDtypeRule rule = KvDtypeRule::none;
    Engine engine = Engine::vllm;   ///< the engine that refuses
    KvDtype dtype = KvDtype::bf16;  ///< the dtype refused
    std::string_view name{};        ///< its --kv-cache-dtype value
    EngineVersion release{};        ///< the release asked for
    EngineVersion since{};          ///< release_too_old: the first release line that names it
    std::uint32_t mla_layers = 0;   ///< the model's MLA layers
    std::string_view source{};      ///< the engine file that refuses
    /// no_sparse_mla_backend: why, in vllm_sparse_mla_refusal's words (they cite the files)
    std::string_view why{};
    /// A newer release (`since` or later) starts it: false when that release refuses it too
    /// (nvfp4 with MLA).
    bool newer_release_starts = false;
    /// The dtype that starts on this release instead, where one is needed: fp8_e4m3, the dtype
    /// vLLM's own message proposes ("'fp8' or 'auto'") at half of bf16's bytes.
    std::optional<KvDtype> starts_with{};
    /// no_engine_name: the dtypes the engine takes for this model on this GPU, one bit per
    /// KvDtype (1 << its value; kv_dtype_accepted tests one).
    std::uint32_t accepted = 0;

    [[nodiscard]] constexpr bool kv_dtype_accepted(KvDtype d) const noexcept {
        return (accepted >> static_cast<unsigned>(d)) & 1U;
    }
    [[nodiscard]] constexpr bool refused() const noexcept { return rule != KvDtypeRule::none; }
};

/// vLLM release `v`'s check of a KV cache of `d` for `m`: a name the release does not list
/// (engine/kv_dtype_names.hpp) exits at argument parsing, before anything else; an nvfp4 cache
/// (nvfp4, nvfp4_4over6) for a model with MLA layers raises in VllmConfig's validator, whatever
/// the other layers (the guard tests cache_dtype.startswith("nvfp4") and model_config.use_mla;
/// it came with nvfp4 itself, PR #40177, so every release that names nvfp4 has it). A dtype no
/// vLLM release names (mxfp4) passes here: kv_dtype_check refuses it.
[[nodiscard]] constexpr KvDtypeCheck vllm_kv_dtype_check(const Model& m, KvDtype d,
                                                         EngineVersion v) noexcept {
    KvDtypeCheck c;
    c.dtype = d;
    c.release = v;
    c.mla_layers = m.layers().layers_of_kind(CacheKind::mla_latent);
    const bool nvfp4 = d == KvDtype::nvfp4 || d == KvDtype::nvfp4_4over6;
    const bool mla_refuses = nvfp4 && c.mla_layers > 0;
    if (const auto row = vllm_kv_dtype_too_new(d, v)) {
        c.rule = KvDtypeRule::release_too_old;
        c.name = row->name;
        c.since = row->since;
        c.source = "vllm/config/cache.py";
        c.newer_release_starts = !mla_refuses;
        if (mla_refuses) c.starts_with = KvDtype::fp8_e4m3;
    } else if (mla_refuses) {
        c.rule = KvDtypeRule::nvfp4_with_mla;
        c.name = *vllm_kv_dtype_name(d, v);
        c.source = "vllm/config/vllm.py";
        c.starts_with = KvDtype::fp8_e4m3;
    }
    return c;
}

/// Whether engine `e` (vLLM: release line `v`) has a cache dtype name for `d`. A full-width float
/// cache needs none: every engine's "auto" takes the model's dtype, 16 bits for a 16-bit
/// checkpoint (--dtype float32 for 32), so only the narrow formats are looked up
/// (engine/kv_dtype_names.hpp cites each engine's list).
[[nodiscard]] constexpr bool engine_names_kv_dtype(Engine e, KvDtype d, EngineVersion v) noexcept {
    if (d == KvDtype::fp32 || d == KvDtype::fp16 || d == KvDtype::bf16) return true;
    switch (e) {
        case Engine::vllm:
            return vllm_kv_dtype_name(d, v).has_value();
        case Engine::sglang:
            return sglang_kv_dtype_name(d).has_value();
        case Engine::trtllm:
            return trtllm_kv_dtype_name(d).has_value();
        case Engine::ideal:
            return true;
    }
    return true;
}

/// Engine `e`'s start-up check of a KV cache of `d` for `m` on `g` (vLLM: release `v`). A dtype
/// the engine has no name for in any release (mxfp4 in all three; int8, int4 and vLLM's own
/// formats outside vLLM; fp8_e5m2 in TensorRT-LLM) exits at argument parsing or KvCacheConfig's
/// validation: DOES NOT START, with the dtypes the engine takes for `m` on `g` and the one that
/// starts (fp8_e4m3 for a dtype of 8 bits or fewer where the GPU holds it, else bf16). Else
/// vLLM's own checks (vllm_kv_dtype_check). A dtype the GPU cannot hold at all is not this:
/// kv_dtype_refusal (kv_support.hpp) refuses it as invalid input before.
[[nodiscard]] inline KvDtypeCheck kv_dtype_check(Engine e, const Model& m, KvDtype d,
                                                 EngineVersion v, const GpuSpec& g) {
    const bool ever = e == Engine::vllm
                          ? vllm_kv_dtype_row(d).has_value() || engine_names_kv_dtype(e, d, v)
                          : engine_names_kv_dtype(e, d, v);
    if (ever && e != Engine::vllm) return KvDtypeCheck{};
    if (ever) {
        KvDtypeCheck c = vllm_kv_dtype_check(m, d, v);
        if (c.refused()) return c;
        // The attention layers then pick their backend: a sparse MLA cache no backend takes on
        // this GPU (SM 12.x) raises there, before the weights load.
        if (const auto why = vllm_sparse_mla_refusal(m, g, d, v)) {
            c.rule = KvDtypeRule::no_sparse_mla_backend;
            c.name = vllm_kv_dtype_name(d, v).value_or("auto");
            c.why = *why;
            c.source = "vllm/v1/attention/backends/mla/flashinfer_mla_sparse_sm120.py";
            c.since = vllm_sm120_sparse_mla_since;
            c.newer_release_starts = v < vllm_sm120_sparse_mla_since;
            // DeepSeek-V4's compressed MLA is fp8_ds_mla whatever is asked: no dtype to change.
            if (!has_compressed_mla(m) && d != KvDtype::fp8_ds_mla)
                c.starts_with = KvDtype::fp8_ds_mla;
        }
        return c;
    }
    KvDtypeCheck c;
    c.rule = KvDtypeRule::no_engine_name;
    c.engine = e;
    c.dtype = d;
    c.release = v;
    c.mla_layers = m.layers().layers_of_kind(CacheKind::mla_latent);
    c.source = e == Engine::vllm     ? "vllm/config/cache.py"
               : e == Engine::sglang ? "python/sglang/srt/server_args.py"
                                     : "tensorrt_llm/llmapi/llm_args.py";
    for (const KvDtype x : all_kv_dtypes) {
        // Named by the engine (vLLM: by this release), held by the GPU, and not refused for
        // this model (vLLM's nvfp4 with MLA); 32-bit caches are left out as no fix.
        if (x == KvDtype::fp32 || !engine_names_kv_dtype(e, x, v) || kv_dtype_refusal(x, g, e))
            continue;
        if (e == Engine::vllm && vllm_kv_dtype_check(m, x, v).refused()) continue;
        if (e == Engine::sglang && x == KvDtype::fp16) continue;      // no SGLang name: "auto" only
        if (x == KvDtype::fp8_ds_mla && c.mla_layers == 0) continue;  // FlashMLA's MLA layout
        c.accepted |= 1U << static_cast<unsigned>(x);
    }
    c.starts_with =
        bits(d) <= 8 && c.kv_dtype_accepted(KvDtype::fp8_e4m3) ? KvDtype::fp8_e4m3 : KvDtype::bf16;
    return c;
}

/// The kernel an engine runs a quantized format with, which sets how it holds the weights.
enum class WeightKernel : std::uint8_t {
    as_stored,         ///< the checkpoint's bytes, as the engine loads them
    mxfp4_triton,      ///< vLLM's Triton MoE on Hopper (triton_kernels matmul_ogs)
    mxfp4_marlin,      ///< vLLM's Marlin MoE (weight-only FP4) on Ampere, Ada and SM 12.x
    mxfp4_flashinfer,  ///< vLLM's FlashInfer TRT-LLM MoE on Blackwell (SM 10.x)
    int4_triton_rocm,  ///< SGLang's Triton W4A16 MoE on ROCm (its int32 index tensors kept)
};

inline constexpr FixedArray<detail::EnumName<WeightKernel>, 5> weight_kernel_names{{
    {WeightKernel::as_stored, "as_stored"},
    {WeightKernel::mxfp4_triton, "mxfp4_triton"},
    {WeightKernel::mxfp4_marlin, "mxfp4_marlin"},
    {WeightKernel::mxfp4_flashinfer, "mxfp4_flashinfer"},
    {WeightKernel::int4_triton_rocm, "int4_triton_rocm"},
}};

[[nodiscard]] constexpr const char* name(WeightKernel k) noexcept {
    return detail::enum_name(weight_kernel_names, k);
}

/// One GPU's weights as stored and as the engine holds them once loaded.
struct LoadedWeights {
    WeightKernel kernel = WeightKernel::as_stored;
    Bytes stored{};  ///< the checkpoint's bytes on the GPU
    Bytes loaded{};  ///< what the engine holds ("Model loading took")
    /// The rotary cos/sin table, within `loaded` (vllm_rotary_table_bytes,
    /// sglang_rotary_table_bytes).
    Bytes rotary_table{};
    /// What the caching allocator holds past the tensors, within `loaded` (SGLang's load counts
    /// it: sglang_allocator_slack).
    Bytes allocator_slack{};
    /// What the engine holds less than the checkpoint's tensors, taken out of `loaded`: vLLM's
    /// int32 tid2eid tables of DeepSeek-V4's int64 ones (vllm_hash_table_narrowing).
    Bytes narrowed{};
    /// The routed experts' widths per rank as stored and as the kernel pads them (MXFP4 only).
    std::uint64_t intermediate = 0, padded_intermediate = 0;
    std::uint64_t hidden = 0, padded_hidden = 0;
    std::uint64_t experts = 0;  ///< routed experts the GPU holds over its stage's MoE layers
};

namespace detail {

/// One MXFP4 expert of one rank: gate/up (2 x intermediate rows of hidden) and down (hidden rows
/// of intermediate), 4-bit values and an 8-bit scale per 32 along the input, as stored.
[[nodiscard]] constexpr Bytes mxfp4_expert_bytes(std::uint64_t intermediate, std::uint64_t hidden) {
    const WeightEncoding enc = encoding(WeightFormat::mxfp4);
    return encoded_bytes(enc, 2 * intermediate, hidden, 1) +
           encoded_bytes(enc, hidden, intermediate, 1);
}

/// Its scales alone: one byte per 32 inputs of every row.
[[nodiscard]] constexpr Bytes mxfp4_expert_scale_bytes(std::uint64_t intermediate,
                                                       std::uint64_t hidden) {
    return Bytes::exactly(add(mul(2 * intermediate, ceil_div(hidden, 32), "scales"),
                              mul(hidden, ceil_div(intermediate, 32), "scales"), "scales"));
}

/// One MXFP4 expert in the Hopper layouts of triton_kernels' matmul_ogs, as vLLM's and SGLang's
/// _swizzle_mxfp4 convert it (vllm/model_executor/layers/quantization/utils/mxfp4_utils.py;
/// python/sglang/srt/layers/quantization/mxfp4.py): each weight [rows, inputs / 2 bytes] and each
/// scale [rows, inputs / 32], rows being gate/up's 2 x intermediate and down's hidden. Both pass
/// num_warps = 8 (vLLM's mxfp4.py outside batched expert-parallel kernels, SGLang's always).
/// triton_kernels v3.5 (the tag vLLM's cmake/external_projects/triton_kernels.cmake fetches at
/// commits 66b3a7e1a511 and 0e7515776a8a), python/triton_kernels/triton_kernels/tensor_details/
/// layout_details:
///   hopper_value.py, HopperMXValueLayout.swizzle_data: rows padded to the mma tile's 16
///     (1 x 2 x 4 x 2 x 1 along them) and bytes to its 32 (4 x 2 x 4 x 1 x 1);
///   hopper_scale.py, HopperMXScaleLayout.swizzle_data: rows padded to SWIZZLE_ALIGN_M =
///     2 x num_warps x 2 x 8 = 256, scales per row to SWIZZLE_ALIGN_K = 2.
/// `values_to_64`: the layout of triton_kernels from Triton PR #8677 ("pad tensors in HopperValue
/// layout", November 2025, in the v3.6.0 tag), whose swizzle_data first pads both dimensions of
/// the value tensor to multiples of 64 (SWIZZLE_ALIGN_M = SWIZZLE_ALIGN_K = 64: "Pre-pad both
/// matrix dims to multiples of 64"), a weight's bytes per row as well as its rows, before the
/// tile's padding, which that leaves nothing to add; the scale layout as before.
/// gpt-oss's widths are whole tiles, so under v3.5 only its scales grow: 5,760 and 2,880 rows to
/// 5,888 and 3,072 at tp 1, 28,800 B an expert; its 1,440 bytes a row (2,880 inputs) are not a
/// multiple of 64, so the later layout adds 32 B to each of its 8,640 rows, 276,480 B an expert.
[[nodiscard]] constexpr Bytes mxfp4_triton_hopper_expert_bytes(std::uint64_t intermediate,
                                                               std::uint64_t hidden,
                                                               bool values_to_64 = false) {
    const auto to = [](std::uint64_t x, std::uint64_t m) { return ceil_div(x, m) * m; };
    const std::uint64_t pre = values_to_64 ? 64 : 1;
    const auto tensor = [&](std::uint64_t rows, std::uint64_t inputs) {
        const std::uint64_t values =
            mul(to(to(rows, pre), 16), to(to(ceil_div(inputs, 2), pre), 32), "values");
        const std::uint64_t scales = mul(to(rows, 256), to(ceil_div(inputs, 32), 2), "scales");
        return add(values, scales, "expert");
    };
    return Bytes::exactly(
        add(tensor(2 * intermediate, hidden), tensor(hidden, intermediate), "expert"));
}
static_assert(mxfp4_triton_hopper_expert_bytes(2880, 2880).count() ==
              5760ULL * 1440 + 5888 * 90 + 2880 * 1440 + 3072 * 90);
// Widths off the tiles: gate/up 200 rows of 100 bytes to 208 x 128 and scales 256 x 8; down 200
// rows of 50 bytes to 208 x 64 and scales 256 x 4.
static_assert(mxfp4_triton_hopper_expert_bytes(100, 200).count() ==
              208ULL * 128 + 256 * 8 + 208 * 64 + 256 * 4);
// Pre-padded to 64: gpt-oss at tp 1, 1,440 bytes a row to 1,472 (rows 5,760 and 2,880 already
// whole); at tp 2 (intermediate 1,472 after vLLM's rounding) gate/up's 2,944 rows are whole
// too and down's 736 bytes a row go to 768.
static_assert(mxfp4_triton_hopper_expert_bytes(2880, 2880, true).count() ==
              5760ULL * 1472 + 5888 * 90 + 2880 * 1472 + 3072 * 90);
static_assert(mxfp4_triton_hopper_expert_bytes(1472, 2880, true).count() ==
              2944ULL * 1472 + 3072 * 90 + 2880 * 768 + 3072 * 46);
// And the small case: 200 rows to 256, 100 and 50 bytes to 128 and 64.
static_assert(mxfp4_triton_hopper_expert_bytes(100, 200, true).count() ==
              256ULL * 128 + 256 * 8 + 256 * 64 + 256 * 4);

/// The routed experts a GPU of stage `stage` of `m` under `l` holds over its MoE layers, and
/// their intermediate and hidden widths per rank, into `lw`.
constexpr void set_rank_experts(LoadedWeights& lw, const Model& m, const Layout& l,
                                std::uint32_t stage) {
    const ModelConfig& c = m.config();
    const Placement p = l.placement();
    const Shard sh = l.stage(stage);
    std::uint64_t layers = 0;
    for (std::uint32_t i = sh.first_layer; i < shard_end(m, sh); ++i)
        if (m.has_mlp(i) && c.moe.is_moe_layer(i)) ++layers;
    lw.experts = mul(layers, p.experts_per_gpu, "experts");
    lw.intermediate = ceil_div(c.moe.expert_intermediate_size, p.expert_tp);
    // LatentMoE experts (Kimi-K3's routed_expert_hidden_size, Nemotron-3's moe_latent_size) read
    // and write the latent width: FusedMoE is built with it as hidden_size, and the MXFP4 kernels'
    // rounding (vllm/model_executor/layers/fused_moe/oracle/mxfp4.py,
    // mxfp4_round_up_hidden_size_and_intermediate_size) pads that width, not the model's.
    lw.hidden = c.moe.latent_size != 0 ? c.moe.latent_size : c.hidden_size;
}

/// A rotary cos/sin table of every GPU of `m`, `element` bytes a value: its positions (as
/// vllm_rotary_table_bytes says) x its rotary dimensions.
[[nodiscard]] constexpr Bytes rotary_table_bytes(const Model& m, std::uint64_t element) {
    const ModelConfig& c = m.config();
    std::uint64_t dim = c.rotary_dim;
    bool attends = false;
    for (std::uint32_t i = 0; i < c.layers.num_specs && i < max_cache_specs; ++i) {
        const CacheSpec& s = c.layers.specs[i];
        if (s.kind == CacheKind::constant_state || s.kind == CacheKind::mlp_only) continue;
        attends = true;
        if (dim == 0 && s.kind == CacheKind::mla_latent) dim = s.qk_rope_head_dim;
    }
    if (!attends) return {};
    if (dim == 0) dim = m.query_head_dim();
    const std::uint64_t positions =
        add(c.rotary_positions != 0 ? c.rotary_positions : context_limit(c).tokens,
            c.local_rotary_positions, "rotary table");
    return Bytes::exactly(mul(mul(positions, dim, "rotary table"), element, "rotary table"));
}

}  // namespace detail

/// The rotary embedding's cos/sin table vLLM holds on every GPU of a model with RoPE: a buffer of
/// max_position x rotary_dim in the model dtype (vllm/model_executor/layers/rotary_embedding/
/// base.py, RotaryEmbedding.__init__ and _compute_cos_sin_cache: cos and sin of rotary_dim / 2
/// frequencies each), registered on the module as it is built, so "Model loading took" counts it.
/// get_rope (rotary_embedding/__init__.py) keeps one instance per key of head size, rotary dim,
/// max position, rope parameters and dtype in _ROPE_DICT, so all the layers of a model share one
/// table: counted once per GPU, whatever the tp. Its positions are the context the config allows
/// (context_limit) unless the config sets rotary_positions: max_position_embeddings, which llama3
/// scaling keeps; yarn's table is ceil(original_max_position_embeddings x factor)
/// (YaRNScalingRotaryEmbedding._compute_cos_sin_cache), linear and dynamic scaling build
/// max_position x factor (LinearScalingRotaryEmbedding, DynamicNTKScalingRotaryEmbedding). The
/// dtype is the model's, bf16 or fp16 (2 bytes), for every model kvplan bundles but gpt-oss
/// (below). Llama-4-Scout: 10,485,760 x 128 x 2 = 2.5 GiB per GPU; Llama-3.1-8B: 131,072 x 128 x
/// 2 = 32 MiB, and
/// Llama-3-8B 2 MiB (8,192 positions), within its log's rounding. Sliding layers with a rope of
/// their own add a second table (local_rotary_positions; models/gemma3.py gives them
/// rope_local_base_freq and no scaling): Gemma-3-12B holds 1,048,576 x 256 x 2 B for its global
/// layers (linear x 8) and 131,072 x 256 x 2 B for the sliding ones, 576 MiB. A model that builds
/// its table in a dtype of its own says so (ModelConfig::rotary_table_element_bytes): gpt-oss's
/// float32, 131,072 x 64 x 4 B = 32 MiB.
[[nodiscard]] constexpr Bytes vllm_rotary_table_bytes(const Model& m) {
    const std::uint32_t own = m.config().rotary_table_element_bytes;
    return detail::rotary_table_bytes(m, own != 0 ? own : 2);
}

/// SGLang's weights as loaded (engine/sglang_weights.hpp, included at the end of this header).
[[nodiscard]] constexpr LoadedWeights sglang_loaded_weights(
    std::optional<GpuFamily> family, const Model& m, const Layout& l, std::uint32_t stage,
    const WeightOptions& w, Bytes stored, GpuArch arch, SglangMoeRunnerBackend moe = {});

/// The weights engine `e` holds on a GPU of stage `stage` of `m` under `l` once loaded, given
/// what the checkpoint puts there (`stored`, weight_bytes_per_rank's total), the GPU's family and
/// its architecture (SGLang's ROCm rules need CDNA 4, which has no family), and SGLang's MoE runner
/// backend. SGLang's rules are its own (sglang_loaded_weights). vLLM adds its rotary cos/sin table
/// to every model (vllm_rotary_table_bytes) and holds DeepSeek-V4's tid2eid tables in int32
/// (vllm_hash_table_narrowing); of the other weights, only the MXFP4 experts differ from the
/// checkpoint (vllm/model_executor/layers/quantization/mxfp4.py, get_mxfp4_backend,
/// create_weights and process_weights_after_loading):
///   Hopper     the Triton kernel: the intermediate width per rank rounded up to 64; the
///              swizzled scales are a second copy beside the loaded ones (w13_weight_scale
///              stays registered), in triton_kernels' layouts, whose alignment pads them
///              (mxfp4_triton_hopper_expert_bytes), and the expert biases become fp32; from
///              the release whose triton_kernels pre-pads the values to 64 (`release`:
///              vllm_triton_values_padded_to_64), the swizzled weights are padded so too;
///   Blackwell  FlashInfer's TRT-LLM kernel: intermediate and hidden rounded up to 256, biases
///              fp32;
///   others     Marlin (Ampere, Ada; mxfp4.py picks it where Triton's kernels are unsupported):
///              intermediate rounded up to 128 and hidden to 256.
/// fp8 on a GPU without fp8 (A100) runs through Marlin at the same bytes; int4 (AWQ,
/// GPTQ) repacks to Marlin at the same bytes too. A given override of the weights is kept.
[[nodiscard]] constexpr LoadedWeights loaded_weights(Engine e, std::optional<GpuFamily> family,
                                                     const Model& m, const Layout& l,
                                                     std::uint32_t stage, const WeightOptions& w,
                                                     Bytes stored, GpuArch arch = GpuArch::unknown,
                                                     EngineVersion release = vllm_newest_release,
                                                     SglangMoeRunnerBackend moe = {}) {
    if (e == Engine::sglang)
        return sglang_loaded_weights(family, m, l, stage, w, stored, arch, moe);
    LoadedWeights lw;
    lw.stored = lw.loaded = stored;
    // A given override is what the engine logged ("Model loading took"): the table is in it.
    if (e == Engine::vllm && w.override_params == 0 && w.override_bytes.is_zero()) {
        lw.rotary_table = vllm_rotary_table_bytes(m);
        lw.narrowed = vllm_hash_table_narrowing(m, l, stage);
        lw.loaded += lw.rotary_table;
        lw.loaded -= lw.narrowed;
    }
    const ModelConfig& c = m.config();
    const WeightFormat experts = w.expert_format ? *w.expert_format : w.format;
    if (e != Engine::vllm || experts != WeightFormat::mxfp4 || c.moe.experts == 0 || !family ||
        *family == GpuFamily::cdna3 || w.override_params != 0 || !w.override_bytes.is_zero())
        return lw;
    detail::set_rank_experts(lw, m, l, stage);
    const auto round_up = [](std::uint64_t x, std::uint64_t to) {
        return detail::ceil_div(x, to) * to;
    };
    bool second_scales = false, fp32_bias = false;
    switch (*family) {
        case GpuFamily::hopper:
            lw.kernel = WeightKernel::mxfp4_triton;
            lw.padded_intermediate = round_up(lw.intermediate, 64);
            lw.padded_hidden = lw.hidden;
            second_scales = fp32_bias = true;
            break;
        case GpuFamily::blackwell:
            lw.kernel = WeightKernel::mxfp4_flashinfer;
            lw.padded_intermediate = round_up(lw.intermediate, 256);
            lw.padded_hidden = round_up(lw.hidden, 256);
            fp32_bias = true;
            break;
        default:
            lw.kernel = WeightKernel::mxfp4_marlin;
            lw.padded_intermediate = round_up(lw.intermediate, 128);
            lw.padded_hidden = round_up(lw.hidden, 256);
            break;
    }
    // Per expert: the padded tensors less the stored ones, the biases' growth; on Hopper the
    // weights in triton_kernels' layouts beside the loaded scales, which stay on the layer.
    const Bytes before = detail::mxfp4_expert_bytes(lw.intermediate, lw.hidden);
    Bytes after = detail::mxfp4_expert_bytes(lw.padded_intermediate, lw.padded_hidden);
    if (second_scales)
        after = detail::mxfp4_triton_hopper_expert_bytes(lw.padded_intermediate, lw.hidden,
                                                         vllm_triton_values_padded_to_64(release)) +
                detail::mxfp4_expert_scale_bytes(lw.padded_intermediate, lw.hidden);
    if (c.mlp_bias) {
        // gate/up and down biases, bf16 as stored; fp32 (or padded bf16) as loaded.
        after +=
            Bytes::exactly((fp32_bias ? 4 : 2) * (2 * lw.padded_intermediate + lw.padded_hidden));
        after -= Bytes::exactly(2 * (2 * lw.intermediate + lw.hidden));
    }
    if (after > before) lw.loaded += (after - before) * lw.experts;
    return lw;
}

/// `stored` (weight_bytes_per_stage of `m` under `l` in `w`) with each stage's routed experts as
/// engine `e` holds them once loaded on `gpu` (vLLM's `release`, SGLang's MoE runner backend
/// `moe`), and vLLM's rotary table (loaded_weights): what the engine's memory counts.
[[nodiscard]] constexpr StageWeights loaded_stage_weights(
    Engine e, const GpuSpec& gpu, const Model& m, const Layout& l, const WeightOptions& w,
    const StageWeights& stored, EngineVersion release = vllm_newest_release,
    SglangMoeRunnerBackend moe = {}) {
    StageWeights out = stored;
    const std::optional<GpuFamily> family = gpu_family(gpu);
    for (std::uint32_t st = 0; st < l.pp(); ++st) {
        const LoadedWeights lw =
            loaded_weights(e, family, m, l, st, w, stored[st].total(), gpu.arch, release, moe);
        // The growth is the routed experts' (the only tensors a kernel repacks), the rotary
        // table's, a buffer of the attention layers' rotary embedding, and the allocator's
        // rounding (SGLang's), no tensor's; the router's hash tables narrow (vLLM's int32).
        out.stages[st][ParamGroup::routed_experts] +=
            lw.loaded + lw.narrowed - lw.stored - lw.rotary_table - lw.allocator_slack;
        out.stages[st][ParamGroup::attention] += lw.rotary_table;
        out.stages[st][ParamGroup::other] += lw.allocator_slack;
        out.stages[st][ParamGroup::router] -= lw.narrowed;
    }
    return out;
}

}  // namespace kvplan

#include "sglang_weights.hpp"  // IWYU pragma: keep (defines sglang_loaded_weights)

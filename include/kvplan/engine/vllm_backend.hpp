#pragma once

// vLLM's attention backend and the block size it forces, by GPU architecture and model kind. The
// rules of vllm/platforms/cuda.py (CudaPlatformBase.check_and_update_config, which forces the block
// size of the MLA backends, and _get_backend_priorities, read at commit 002db4951e0c) and
// vllm/platforms/rocm.py (_get_backend_priorities, read at commit 001eda31e3d0), the Blackwell
// sparse MLA order of main's _get_backend_priorities (num_heads and kv_cache_dtype arguments, PR
// #37252), with each
// backend's block sizes (vllm/v1/attention/backends/, get_supported_kernel_block_sizes: FlashMLA
// [64], FlashAttention MultipleOf(16)).
//
// A backend that forces a size changes the pool: DeepSeek-V3 on Hopper pages in blocks of 64
// tokens, not 16, so num_gpu_blocks is a quarter of what 16-token blocks would give.
//
// Hopper's FLASH_ATTN_MLA_SPARSE (vllm/v1/attention/backends/mla/flashattn_mla_sparse.py, PR
// #46189, merged June 2026): FlashAttention 3 over the sparse indices, SM 9.x only, fp16/bf16
// caches only ("FlashAttention MLA Sparse currently supports only FP16/BF16 KV cache"), no DCP,
// kernel blocks of [64]; get_kv_cache_shape (num_blocks, block_size, head_size): the plain
// 576-wide latent, 1,152 B a token in bf16, what FLASHMLA_SPARSE holds for a bf16 cache. It is
// not main's first choice on Hopper (vLLM issue #56564: "Using FLASHINFER_MLA_SPARSE_SM90 ...
// out of potential backends: ['FLASHINFER_MLA_SPARSE_SM90', 'FLASH_ATTN_MLA_SPARSE']", a
// v0.28.1 nightly), and picked or not it changes no figure here: the block stays the 64
// check_and_update_config forces and a bf16 latent its 1,152 B.

#include <cstdint>
#include <optional>
#include <string_view>

#include "../detail/enum_table.hpp"
#include "../fixed_array.hpp"
#include "../gpu.hpp"
#include "../gpu_family.hpp"
#include "../model.hpp"
#include "../paging.hpp"
#include "release.hpp"

namespace kvplan {

/// vLLM's attention backends, spelled as vLLM logs them (AttentionBackendEnum).
enum class VllmAttentionBackend : std::uint8_t {
    flash_attn,
    flashinfer,
    flash_attn_mla,
    flashmla,
    flashmla_sparse,
    flashinfer_mla_sparse,
    flashinfer_mla,
    cutlass_mla,
    triton_mla,
    rocm_attn,
    rocm_aiter_mla_sparse,
    minimax_m3_sparse,
    flashinfer_mla_sparse_sm120,
};

inline constexpr FixedArray<detail::EnumName<VllmAttentionBackend>, 13>
    vllm_attention_backend_names{{
        {VllmAttentionBackend::flash_attn, "FLASH_ATTN"},
        {VllmAttentionBackend::flashinfer, "FLASHINFER"},
        {VllmAttentionBackend::flash_attn_mla, "FLASH_ATTN_MLA"},
        {VllmAttentionBackend::flashmla, "FLASHMLA"},
        {VllmAttentionBackend::flashmla_sparse, "FLASHMLA_SPARSE"},
        {VllmAttentionBackend::flashinfer_mla_sparse, "FLASHINFER_MLA_SPARSE"},
        {VllmAttentionBackend::flashinfer_mla, "FLASHINFER_MLA"},
        {VllmAttentionBackend::cutlass_mla, "CUTLASS_MLA"},
        {VllmAttentionBackend::triton_mla, "TRITON_MLA"},
        {VllmAttentionBackend::rocm_attn, "ROCM_ATTN"},
        {VllmAttentionBackend::rocm_aiter_mla_sparse, "ROCM_AITER_MLA_SPARSE"},
        {VllmAttentionBackend::minimax_m3_sparse, "MINIMAX_M3_SPARSE"},
        {VllmAttentionBackend::flashinfer_mla_sparse_sm120, "FLASHINFER_MLA_SPARSE_SM120"},
    }};

/// The name vLLM logs ("Using FLASHMLA attention backend").
[[nodiscard]] constexpr std::string_view name(VllmAttentionBackend b) noexcept {
    return detail::enum_name(vllm_attention_backend_names, b);
}

/// The backend vLLM picks and the block size it then pages in.
struct VllmBackendChoice {
    VllmAttentionBackend backend = VllmAttentionBackend::flash_attn;
    std::uint32_t block_size = default_block_size;  ///< after the backend's forcing
    bool forced = false;                            ///< the backend changed the block size
    std::string_view rule{};                        ///< why, with the vLLM file it follows
};

/// The first vLLM line whose Blackwell list puts FLASHINFER_MLA_SPARSE before FLASHMLA_SPARSE
/// for a sparse MLA model whose query heads per rank are 16 or fewer, with a 16-bit cache: PR
/// #33451 ("Add FlashInfer Sparse MLA backend", opened the week before PR #33538, which kvplan
/// counts from v0.17; taken from v0.17 too).
inline constexpr EngineVersion vllm_flashinfer_sparse_mla_since{0, 17};
/// The first vLLM line whose Blackwell list puts FLASHINFER_MLA_SPARSE first for every quantized
/// cache: PR #37252 ("Set Flashinfer sparse MLA as default backend for FP8 kv cache", merged
/// 2026-03-17, after PR #35891 gave that backend its fp8 cache; v0.18.0's notes were published
/// 2026-03-20, the first line tagged after it).
inline constexpr EngineVersion vllm_flashinfer_sparse_mla_fp8_since{0, 18};
/// The first vLLM line kvplan gives FlashInfer's SM 12.x sparse MLA: main's, the newest line.
/// FlashInfer PR #3395 ("add SM120 sparse MLA kernels", May-June 2026) added SM120/SM121 paged
/// sparse MLA for DeepSeek-V4 (a packed uint8 cache of 584 B a token) and for DeepSeek-V3.2 / GLM
/// (576-wide queries over the 656 B fp8_ds_mla tile); vLLM main runs them as
/// DeepseekV4FlashInferSM120Attention (vllm/models/deepseek_v4/attention.py) and the
/// FLASHINFER_MLA_SPARSE_SM120 backend (vllm/v1/attention/backends/mla/
/// flashinfer_mla_sparse_sm120.py); vLLM issue #56837 shows the V4 path on a v0.29.1 nightly. The
/// first tag that shipped it is not pinned, so older lines keep the earlier answer (no sparse MLA
/// on SM 12.x).
inline constexpr EngineVersion vllm_sm120_sparse_mla_since = vllm_newest_release;

namespace detail {

/// Whether vLLM's FLASHINFER_MLA_SPARSE takes cache `kv` for model `m`: its
/// supported_kv_cache_dtypes are auto, float16, bfloat16, fp8 and fp8_e4m3, and
/// supports_combination asks a qk_nope_head_dim of 128 or 192
/// (vllm/v1/attention/backends/mla/flashinfer_mla_sparse.py).
[[nodiscard]] constexpr bool flashinfer_sparse_mla_takes(const Model& m, KvDtype kv) noexcept {
    const std::uint32_t nope = m.config().mla.qk_nope_head_dim;
    return (nope == 128 || nope == 192) &&
           (kv == KvDtype::bf16 || kv == KvDtype::fp16 || kv == KvDtype::fp8_e4m3);
}

/// vllm_attention_backend's rules on ROCm (`rocm`), SM 10.x (`blackwell`), SM 9.x (`hopper`),
/// SM 11.x and later (`sm12`), else SM 8.x; `tp` ranks share the query heads, under vLLM line
/// `release`.
[[nodiscard]] constexpr std::optional<VllmBackendChoice> vllm_backend_on(
    const Model& m, bool rocm, bool blackwell, bool hopper, bool sm12, KvDtype kv,
    std::uint32_t dcp, std::uint32_t block_size, std::uint32_t tp, EngineVersion release) noexcept {
    const LayerStack& L = m.layers();
    bool mla = false, sparse = false, indexed_gqa = false;
    for (std::uint32_t k = 0; k < L.num_specs; ++k) {
        if (L.layers_with_spec(k) == 0) continue;
        if (L.specs[k].kind == CacheKind::full_attention && L.specs[k].index_head_dim > 0)
            indexed_gqa = true;
        if (L.specs[k].kind != CacheKind::mla_latent) continue;
        mla = true;
        sparse = sparse || L.specs[k].index_head_dim > 0;
    }
    VllmBackendChoice c;
    c.block_size = block_size;
    const auto force = [&](std::uint32_t to, std::string_view rule) {
        c.forced = c.block_size != to;
        c.block_size = to;
        c.rule = rule;
    };
    if (indexed_gqa && !mla) {
        c.backend = VllmAttentionBackend::minimax_m3_sparse;
        if (block_size != 128)
            force(128,
                  "MiniMax-M3's sparse attention and indexer page in blocks of 128, one sparse "
                  "block a page (vllm/models/minimax_m3/common/sparse_attention.py, "
                  "get_supported_kernel_block_sizes)");
        else
            c.rule =
                "MiniMax-M3's sparse attention pages in blocks of 128 "
                "(vllm/models/minimax_m3/common/sparse_attention.py)";
        return c;
    }
    if (!mla) {
        c.backend = rocm        ? VllmAttentionBackend::rocm_attn
                    : blackwell ? VllmAttentionBackend::flashinfer
                                : VllmAttentionBackend::flash_attn;
        c.rule = rocm ? "ROCm's first backend (vllm/platforms/rocm.py, _get_backend_priorities)"
                 : blackwell
                     ? "Blackwell's first backend (vllm/platforms/cuda.py, _get_backend_priorities)"
                     : "the first backend off SM 10.x (vllm/platforms/cuda.py, "
                       "_get_backend_priorities)";
        return c;
    }
    // DeepSeek-V4: its layers attend through DeepseekV4FlashMLASparseBackend (ROCm's AITER
    // variant), and the block becomes DEEPSEEK_SPARSE_SWA's preferred 256 whatever is asked
    // (vllm/v1/attention/backends/mla/sparse_swa.py, get_preferred_block_size;
    // vllm/platforms/interface.py: "Setting kv cache block size to 256 for DEEPSEEK_SPARSE_SWA
    // backend").
    bool compressed = false;
    for (std::uint32_t k = 0; k < L.num_specs; ++k)
        compressed = compressed || (L.layers_with_spec(k) != 0 && is_compressed_mla(L.specs[k]));
    if (compressed) {
        // SM 12.x (the RTX PRO 6000): FlashMLA's sparse kernels are SM 9.x and 10.x only; main
        // runs V4 there through FlashInfer's SM120 sparse MLA (DeepseekV4FlashInferSM120Attention,
        // vllm/models/deepseek_v4/attention.py) over the same fp8_ds_mla pages (its SWA cache
        // packed uint8, 584 B a token: FlashInfer PR #3395), blocks of 256 as everywhere.
        if (sm12 && release < vllm_sm120_sparse_mla_since) return std::nullopt;
        c.backend = rocm   ? VllmAttentionBackend::rocm_aiter_mla_sparse
                    : sm12 ? VllmAttentionBackend::flashinfer_mla_sparse_sm120
                           : VllmAttentionBackend::flashmla_sparse;
        const std::string_view rule =
            sm12 ? "DeepSeek-V4 on SM 12.x runs FlashInfer's SM120 sparse MLA over fp8_ds_mla "
                   "pages, in DEEPSEEK_SPARSE_SWA's preferred blocks of 256 "
                   "(vllm/models/deepseek_v4/attention.py, "
                   "vllm/v1/attention/backends/mla/sparse_swa.py)"
                 : "DeepSeek-V4 pages in DEEPSEEK_SPARSE_SWA's preferred blocks of 256 "
                   "(vllm/v1/attention/backends/mla/sparse_swa.py, vllm/platforms/interface.py)";
        if (block_size != 256)
            force(256, rule);
        else
            c.rule = rule;
        return c;
    }
    if (sparse) {
        // FlashMLA sparse (and FlashInfer's SM 10.x sparse MLA) run on SM 9.x and 10.x only. On
        // SM 12.x main has FLASHINFER_MLA_SPARSE_SM120, which takes the packed fp8_ds_mla cache
        // alone (656 B a latent; its impl raises "FLASHINFER_MLA_SPARSE_SM120 requires the
        // packed fp8_ds_mla KV cache layout" for any other kv_cache_dtype:
        // vllm/v1/attention/backends/mla/flashinfer_mla_sparse_sm120.py) in the blocks of 64
        // check_and_update_config forces on every sparse model (vllm/platforms/cuda.py). Any
        // other cache, or an older line: no backend (vllm_sparse_mla_refusal says why).
        if (sm12) {
            if (release < vllm_sm120_sparse_mla_since || kv != KvDtype::fp8_ds_mla)
                return std::nullopt;
            c.backend = VllmAttentionBackend::flashinfer_mla_sparse_sm120;
            const std::string_view rule =
                "FLASHINFER_MLA_SPARSE_SM120, SM 12.x's sparse MLA, over the fp8_ds_mla cache in "
                "the blocks of 64 forced on sparse models "
                "(vllm/v1/attention/backends/mla/flashinfer_mla_sparse_sm120.py, "
                "vllm/platforms/cuda.py)";
            if (block_size != 64)
                force(64, rule);
            else
                c.rule = rule;
            return c;
        }
        if (rocm) {
            c.backend = VllmAttentionBackend::rocm_aiter_mla_sparse;
            c.rule = "ROCm's one sparse MLA backend (vllm/platforms/rocm.py)";
            return c;
        }
        // Blackwell (SM 10.x): _get_backend_priorities (vllm/platforms/cuda.py) ends its MLA list
        // with the sparse backends, FLASHINFER_MLA_SPARSE first for a quantized cache
        // (is_quantized_kv_cache: anything but auto, bfloat16, float16) or at 16 query heads a
        // rank or fewer (FlashMLA pads them), else FLASHMLA_SPARSE first; the first that takes
        // the cache wins. The query heads a rank: num_heads / tp (MLAAttention's num_heads).
        const bool quantized = kv != KvDtype::bf16 && kv != KvDtype::fp16;
        const std::uint32_t heads = m.config().num_heads / (tp == 0 ? 1 : tp);
        const bool flashinfer_first =
            blackwell && (quantized ? release >= vllm_flashinfer_sparse_mla_fp8_since
                                    : release >= vllm_flashinfer_sparse_mla_since && heads <= 16);
        const bool flashinfer = flashinfer_first && flashinfer_sparse_mla_takes(m, kv);
        c.backend = flashinfer ? VllmAttentionBackend::flashinfer_mla_sparse
                               : VllmAttentionBackend::flashmla_sparse;
        // check_and_update_config forces 64 for every sparse model; FlashInfer's sparse MLA
        // takes 32 or 64 (get_supported_kernel_block_sizes).
        if (block_size != 64)
            force(64, flashinfer
                          ? "a sparse MLA model pages in blocks of 64 (vllm/platforms/cuda.py, "
                            "check_and_update_config); FlashInfer sparse MLA, Blackwell's first "
                            "sparse backend for this cache and head count, takes them"
                          : "FlashMLA sparse pages in blocks of 64 (vllm/platforms/cuda.py, "
                            "check_and_update_config)");
        else
            c.rule = flashinfer ? "FlashInfer sparse MLA, Blackwell's first sparse backend for "
                                  "this cache and head count (vllm/platforms/cuda.py)"
                                : "FlashMLA sparse pages in blocks of 64 (vllm/platforms/cuda.py)";
        return c;
    }
    if (blackwell) {
        if (m.config().mla.qk_nope_head_dim == 128 && dcp == 1) {
            c.backend = VllmAttentionBackend::flashinfer_mla;
            if (block_size != 32 && block_size % 64 != 0)
                force(64,
                      "FlashInfer MLA, Blackwell's default for qk_nope_head_dim 128 at dcp 1, "
                      "takes 32 or a multiple of 64 (vllm/platforms/cuda.py, "
                      "check_and_update_config)");
            else
                c.rule =
                    "FlashInfer MLA, Blackwell's default for qk_nope_head_dim 128 at dcp 1 "
                    "(vllm/platforms/cuda.py)";
            return c;
        }
        c.backend = VllmAttentionBackend::cutlass_mla;
        if (block_size % 128 != 0)
            force(128,
                  "CUTLASS MLA, Blackwell's MLA backend otherwise, takes a multiple of 128 "
                  "(vllm/platforms/cuda.py, check_and_update_config)");
        else
            c.rule = "CUTLASS MLA, Blackwell's MLA backend otherwise (vllm/platforms/cuda.py)";
        return c;
    }
    if (hopper) {
        // FLASH_ATTN_MLA comes first on Hopper but takes only 16-bit caches.
        c.backend = kv == KvDtype::bf16 || kv == KvDtype::fp16
                        ? VllmAttentionBackend::flash_attn_mla
                        : VllmAttentionBackend::flashmla;
        if (block_size % 64 != 0)
            force(64,
                  "FlashMLA's dense kernel runs on Hopper: vLLM forces a multiple of 64 "
                  "(vllm/platforms/cuda.py, check_and_update_config)");
        else
            c.rule = "FlashMLA's dense kernel runs on Hopper (vllm/platforms/cuda.py)";
        return c;
    }
    c.backend = VllmAttentionBackend::triton_mla;
    c.rule = rocm   ? "ROCm's MLA backend without AITER (vllm/platforms/rocm.py)"
             : sm12 ? "no FlashAttention 3, FlashMLA or FlashInfer MLA on compute capability "
                      "12.x: Triton MLA (vllm/platforms/cuda.py, _get_backend_priorities)"
                    : "no FlashAttention 3 or FlashMLA before Hopper: Triton MLA "
                      "(vllm/platforms/cuda.py, _get_backend_priorities)";
    return c;
}

}  // namespace detail

/// vLLM's backend for model `m` on GPU family `family` with decode context parallelism `dcp`,
/// the KV dtype `kv`, and `block_size` tokens asked for (--block-size, or vLLM's 16), or nullopt
/// for a GPU whose family kvplan does not know (the block size then stays as asked).
///   MLA, sparse indexer (DeepSeek-V3.2): FLASHMLA_SPARSE, block 64 on CUDA
///     (check_and_update_config: "Forcing kv cache block size to 64 for FlashMLASparse"); on
///     Blackwell FLASHINFER_MLA_SPARSE where it comes first and takes the cache: a quantized
///     cache from v0.18, a 16-bit one at 16 query heads a rank (num_heads / tp) or fewer from
///     v0.17 (vllm_flashinfer_sparse_mla_since, _fp8_since); ROCM_AITER_MLA_SPARSE on ROCm, the
///     block as asked.
///   MLA on Blackwell (10.x): FLASHINFER_MLA when qk_nope_head_dim is 128 and dcp is 1 (block 32,
///     or a multiple of 64, else 64); otherwise CUTLASS_MLA (a multiple of 128, else 128).
///   MLA on Hopper: FlashMLA's dense kernel runs there, so the block becomes a multiple of 64;
///     the backend picked is the first valid of FLASH_ATTN_MLA (bf16 KV only), FLASHMLA.
///   MLA on Ampere and Ada: TRITON_MLA (no FlashAttention 3, no FlashMLA), the block as asked.
///   MLA on CDNA3: TRITON_MLA (ROCm's AITER MLA is off unless VLLM_ROCM_USE_AITER is set).
///   Full attention with an indexer (MiniMax-M3's sparse layers): MINIMAX_M3_SPARSE, whose
///     kernels and indexer cache take blocks of 128 tokens, one sparse block a page
///     (vllm/models/minimax_m3/common/sparse_attention.py and indexer.py,
///     get_supported_kernel_block_sizes [128]).
///   Other attention: FLASHINFER on Blackwell, FLASH_ATTN on the other NVIDIA GPUs, ROCM_ATTN on
///     CDNA3; each takes blocks of a multiple of 16 as asked.
[[nodiscard]] constexpr std::optional<VllmBackendChoice> vllm_attention_backend(
    const Model& m, std::optional<GpuFamily> family, KvDtype kv, std::uint32_t dcp,
    std::uint32_t block_size, std::uint32_t tp = 1,
    EngineVersion release = vllm_newest_release) noexcept {
    if (!family) return std::nullopt;
    return detail::vllm_backend_on(m, *family == GpuFamily::cdna3, *family == GpuFamily::blackwell,
                                   *family == GpuFamily::hopper, false, kv, dcp, block_size, tp,
                                   release);
}

/// vllm_attention_backend on GPU `g`, by its compute capability where it is stated, as
/// vllm/platforms/cuda.py decides (_get_backend_priorities: the Blackwell lists for
/// device_capability.major == 10 only; FlashMLA and FlashMLA sparse supports_compute_capability:
/// major 9 or 10), else by the family its id names. SM 12.x (the RTX PRO 6000) takes the lists of
/// the other NVIDIA GPUs: FLASH_ATTN, or TRITON_MLA for MLA (no FlashAttention 3, FlashMLA or
/// FlashInfer MLA there); its sparse MLA is FlashInfer's SM120 kernels on main (DeepSeek-V4 in
/// blocks of 256; FLASHINFER_MLA_SPARSE_SM120 for an fp8_ds_mla cache in blocks of 64), nullopt
/// otherwise (vllm_sparse_mla_refusal). ROCm's rules were read for gfx942 (CDNA3); another gfx
/// target gives nullopt.
[[nodiscard]] constexpr std::optional<VllmBackendChoice> vllm_attention_backend(
    const Model& m, const GpuSpec& g, KvDtype kv, std::uint32_t dcp, std::uint32_t block_size,
    std::uint32_t tp = 1, EngineVersion release = vllm_newest_release) noexcept {
    const ComputeCapability& c = g.capability;
    if (!c.stated())
        return vllm_attention_backend(m, gpu_family(g), kv, dcp, block_size, tp, release);
    if (c.isa == ComputeCapability::Isa::gfx) {
        if (c != gfx(9, 0x4, 0x2)) return std::nullopt;
        return detail::vllm_backend_on(m, true, false, false, false, kv, dcp, block_size, tp,
                                       release);
    }
    return detail::vllm_backend_on(m, false, c.sm_family(10), c.sm_family(9), c.major >= 11, kv,
                                   dcp, block_size, tp, release);
}

/// Why vLLM has no attention backend for sparse MLA model `m` (DeepSeek-V3.2's indexed MLA or
/// DeepSeek-V4's compressed MLA) with cache `kv` on GPU `g` under line `release`, or nullopt when
/// it has one (or the GPU is not SM 12.x: the other architectures' rules are
/// vllm_attention_backend's). On SM 12.x (RTX PRO 6000) FlashMLA sparse and FLASHINFER_MLA_SPARSE
/// do not run (supports_compute_capability: major 9 or 10, and 10): main's
/// FLASHINFER_MLA_SPARSE_SM120 takes an fp8_ds_mla cache only; before main's line kvplan knows no
/// SM 12.x sparse MLA.
[[nodiscard]] constexpr std::optional<std::string_view> vllm_sparse_mla_refusal(
    const Model& m, const GpuSpec& g, KvDtype kv,
    EngineVersion release = vllm_newest_release) noexcept {
    const ComputeCapability& c = g.capability;
    if (!c.stated() || c.isa == ComputeCapability::Isa::gfx || c.major < 11) return std::nullopt;
    bool sparse = false, compressed = false;
    const LayerStack& L = m.layers();
    for (std::uint32_t k = 0; k < L.num_specs; ++k) {
        if (L.layers_with_spec(k) == 0 || L.specs[k].kind != CacheKind::mla_latent) continue;
        compressed = compressed || is_compressed_mla(L.specs[k]);
        sparse = sparse || L.specs[k].index_head_dim > 0;
    }
    if (!sparse && !compressed) return std::nullopt;
    if (release < vllm_sm120_sparse_mla_since)
        return "vLLM before main's line has no sparse MLA backend for compute capability 12.x "
               "(FlashMLA sparse and FlashInfer's sparse MLA run on SM 9.x and 10.x: "
               "vllm/v1/attention/backends/mla/flashmla_sparse.py, flashinfer_mla_sparse.py)";
    if (!compressed && kv != KvDtype::fp8_ds_mla)
        return "on compute capability 12.x vLLM's one sparse MLA backend, "
               "FLASHINFER_MLA_SPARSE_SM120, takes the packed fp8_ds_mla cache only "
               "(--kv-cache-dtype fp8_ds_mla; vllm/v1/attention/backends/mla/"
               "flashinfer_mla_sparse_sm120.py)";
    return std::nullopt;
}

/// Whether `m` has vLLM's sparse MLA: MLA layers that keep one latent per token and carry a
/// lightning indexer (DeepSeek-V3.2, GLM-5; vLLM's use_sparse, hf_config.index_topk). DeepSeek-V4's
/// compressed MLA has its own attention layer and is not this.
[[nodiscard]] constexpr bool has_sparse_mla(const Model& m) noexcept {
    const LayerStack& L = m.layers();
    for (std::uint32_t k = 0; k < L.num_specs; ++k)
        if (L.layers_with_spec(k) != 0 && L.specs[k].kind == CacheKind::mla_latent &&
            L.specs[k].index_head_dim > 0 && !is_compressed_mla(L.specs[k]))
            return true;
    return false;
}

/// Whether `m` has DeepSeek-V4's compressed MLA layers, whose caches vLLM keeps in fp8_ds_mla
/// whatever cache dtype is asked (the layer's model_version "deepseek_v4":
/// vllm/model_executor/layers/deepseek_v4_attention.py; engine/vllm_deepseek_v4.hpp).
[[nodiscard]] constexpr bool has_compressed_mla(const Model& m) noexcept {
    const LayerStack& L = m.layers();
    for (std::uint32_t k = 0; k < L.num_specs; ++k)
        if (L.layers_with_spec(k) != 0 && is_compressed_mla(L.specs[k])) return true;
    return false;
}

/// The format vLLM stores a KV cache asked as `asked` in for model `m` on `backend` (nullopt: a
/// GPU whose backend kvplan does not know, taken as CUDA's FLASHMLA_SPARSE for a sparse MLA
/// model). FLASHMLA_SPARSE keeps a sparse MLA model's 8-bit float cache (fp8, fp8_e4m3, fp8_e5m2,
/// fp8_per_token_head) in DeepSeek's fp8_ds_mla layout, 656 B a latent for V3.2 against 576 in
/// plain fp8: vLLM v0.11's DeepseekV32ForCausalLM.verify_and_update_config
/// (vllm/model_executor/models/config.py, with DeepSeek-V3.2's support, September 2025) turned
/// every cache_dtype starting with "fp8" into fp8_ds_mla; main does it in MLAAttention.__init__
/// (vllm/model_executor/layers/attention/mla_attention.py) for a quantized cache on the
/// FLASHMLA_SPARSE backend, whose supported_kv_cache_dtypes lists "fp8" as the alias of
/// fp8_ds_mla (vllm/v1/attention/backends/mla/flashmla_sparse.py). Other backends, ROCm's
/// sparse MLA among them, keep the dtype asked. DeepSeek-V4's compressed MLA is fp8_ds_mla
/// whatever is asked (has_compressed_mla). Every other format is stored as asked.
///   Blackwell from v0.18 runs a quantized sparse MLA cache on FLASHINFER_MLA_SPARSE
///   (vllm_attention_backend, after vllm/platforms/cuda.py's _get_backend_priorities, vLLM issue
///   #35807 and PR #37252), whose get_kv_cache_shape is (num_blocks, block_size, 576) in the
///   cache dtype: plain fp8, 576 B a latent (vllm/v1/attention/backends/mla/
///   flashinfer_mla_sparse.py; MLAAttention.__init__ logs "Using standard fp8 KV cache format"
///   there), so a B200 holds DeepSeek-V3.2 in 43,188 B a token where an H100 holds 48,068.
///   Not modelled: the v0.11.0 tag alone, whose "auto" was fp8_ds_mla for V3.2 too (PR #25988,
///   undone by PR #27121 before v0.11.1): release lines are not told apart by patch.
[[nodiscard]] constexpr KvFormat vllm_stored_kv(
    const Model& m, KvFormat asked, std::optional<VllmAttentionBackend> backend) noexcept {
    if (has_compressed_mla(m)) return KvDtype::fp8_ds_mla;
    const bool fp8 = asked.dtype == KvDtype::fp8_e4m3 || asked.dtype == KvDtype::fp8_e5m2 ||
                     asked.dtype == KvDtype::fp8_per_token_head;
    if (!fp8 || !has_sparse_mla(m)) return asked;
    if (backend && *backend != VllmAttentionBackend::flashmla_sparse) return asked;
    return KvDtype::fp8_ds_mla;
}

/// vllm_stored_kv on GPU `g`, with the backend vllm_attention_backend picks there. An AMD GPU
/// whose gfx target kvplan's backend rules were not read for (the MI355X's gfx950) still runs
/// sparse MLA on ROCM_AITER_MLA_SPARSE: vllm/platforms/rocm.py's _get_backend_priorities lists it
/// alone for use_sparse, on every gfx target, and FLASHMLA_SPARSE is a CUDA backend. That backend
/// stores the cache as asked: get_kv_cache_shape (num_blocks, block_size, head_size 576) in the
/// cache dtype, and MLAAttention.__init__ turns a cache into fp8_ds_mla on FLASHMLA_SPARSE only
/// (vllm/v1/attention/backends/mla/rocm_aiter_mla_sparse.py).
[[nodiscard]] constexpr KvFormat vllm_stored_kv(
    const Model& m, KvFormat asked, const GpuSpec& g, std::uint32_t dcp, std::uint32_t tp = 1,
    EngineVersion release = vllm_newest_release) noexcept {
    const auto choice =
        vllm_attention_backend(m, g, asked.dtype, dcp, default_block_size, tp, release);
    if (choice) return vllm_stored_kv(m, asked, choice->backend);
    const bool rocm = g.capability.isa == ComputeCapability::Isa::gfx || is_rocm(g.arch);
    if (rocm && has_sparse_mla(m))
        return vllm_stored_kv(m, asked, VllmAttentionBackend::rocm_aiter_mla_sparse);
    return vllm_stored_kv(m, asked, std::optional<VllmAttentionBackend>{});
}

}  // namespace kvplan

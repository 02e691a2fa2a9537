#pragma once

// An estimate of serving latency beside the roofline bound, never in its place. The bound says no
// step is faster than its bytes at peak bandwidth or its FLOPs at peak throughput; what users
// measure is slower, by the fraction of peak a real kernel reaches and by fixed costs the bound
// leaves out. The estimate models a steady-state step of continuous batching as each engine's
// scheduler builds it (r.parallel.rules names the engine):
//
//   step(d decodes at context c, p prefill tokens)
//       = max(bytes / (bandwidth x f_bw),
//             dense GEMM FLOPs / (peak x f_compute) + routed experts' FLOPs / (peak x f_experts)
//             + attention FLOPs / (bf16 peak x f_attention))   (fp8 peak: vLLM's FA3 over an
//                                                              fp8 KV cache on Hopper)
//         + layers x t_layer                                   (launches and small kernels;
//                                  x uncompiled_layer_scale on SGLang and TensorRT-LLM)
//         + recurrent mixers x t_eager_mixer        (vLLM, a step with prefill: run eagerly
//                                                    between its piecewise CUDA graphs)
//         + 2 x layers x (t_all_reduce + message / link x 2 (tp - 1) / tp)   (tp > 1)
//         + MoE layers x (dispatch + combine at link peak)   (experts spread, attention dp)
//         + the routed rows' activation and sum kernels apart from the grouped GEMMs, at
//           bandwidth x f_bw (tokens x top-k rows of 2 (3 I + H) bytes a MoE layer; none where
//           the kernel fuses them: gpt-oss's MXFP4 experts under vLLM and SGLang on sm90/sm100)
//   bytes = weights (once, however many tokens) + KV of the d running sequences + KV written
//   FLOPs = 2 x matmul parameters x (d + p), the LM head's only at one position a request of the
//           step (unsampled_head_flops) + attention of the decodes + causal attention of p,
//           the routed experts' GEMMs at whole tiles of rows per touched expert (16 rows in a
//           step of at most E tokens, expert_tile_rows past it; vLLM 0.12's DeepGEMM on Hopper
//           128 at any step, 0.11's in steps of 128 tokens or more; each expert's rows spread
//           around tokens x top-k / E as uniform routing spreads them)
//
// Serving at concurrency C (a closed loop: a new request as soon as one finishes), prompt I,
// output O: B = min(C, what the engine's own KV pool holds, its sequence cap) sequences are
// admitted; the rest wait. A request spends k = ceil(I / chunk) steps prefilling and O - 1
// decoding, so a step holds on average d = B (O - 1) / (k + O - 1) decodes and p = d I / (O - 1)
// prompt tokens.
// - vLLM (vllm/v1/core/sched/scheduler.py) and TensorRT-LLM (in-flight batching) put both in one
//   step within the token budget, decodes first. Prompts come in chunks, so the mean step mixes
//   steps of floor(p / chunk) and ceil(p / chunk) chunks. When d + p would pass the budget, every
//   step is full (d = budget (O - 1) / (I + O - 1)) and the rate is the budget's: the prompts
//   wait their turn, and that wait is part of TTFT.
// - SGLang (python/sglang/srt/managers/scheduler.py) runs a waiting prompt as a prefill pass of
//   its own before the next decode step: ITL = decode step + the passes per decode step x a pass.
//
//   ITL = TPOT = the mean forward between two of a request's tokens
//   TTFT       = the engine's fixed cost per request (vLLM: HTTP, tokenizer, detokenizer, one
//                  constant; SGLang and TensorRT-LLM, which prefill without CUDA graphs: the
//                  host time of the prompt's eager forward, per projection of the model)
//                + the forward in flight when it arrives (E[t^2] / 2 E[t]: long forwards are more
//                  often hit; none when it is alone), and with SGLang's and TensorRT-LLM's
//                  overlap schedulers the next one, already scheduled (E[t])
//                + its chunks, and the wait for the budget when prefill binds
//                + the wait for prompts ahead of it: each holds the prefill for S (SGLang: its
//                  pass; vLLM, TensorRT-LLM: its share of the budget beside the decodes, at a
//                  full step's time), rho S / (2 (1 - rho)) at rho = (B - 1) S / request
//                + the wait for a slot, C / rate - its own time (Little's law, closed loop)
//                + a run of N requests started at once (Load::requests): the first C are a
//                  burst's wave, so C / N of the burst's extra wait
//   tokens/s   = O x B / (a request's time once admitted)
//   A run of N requests from C clients (Load::requests) is floor(N / C) rounds of C and the
//   N mod C left alone at the end: its throughput is N x O over the rounds' time and its TPOT the
//   mean over the N (what vllm bench serve and sglang.bench_serving report). With lengths drawn
//   (Load::length_spread) the slots drift apart: when the last request is sent the B running are
//   at random points of their lives, and the run lasts until the longest of them ends, the last
//   steps decoding fewer and fewer (detail::drawn_lengths_drain). A run of no more requests than
//   clients (N <= C) sends them all at once and none follows: N clients' burst, its TPOT and
//   throughput the burst's waves (LoadKind::burst), its TTFT as above.
//
// A static batch (vllm bench latency, a TensorRT-LLM batch) prefills B prompts in passes of the
// token budget, then decodes O - 1 steps at the mean context. With pipeline parallelism a token
// passes every stage in turn: times are summed over stages, as the bound's TPOT is.
//
// Under attention data parallelism a step's time is its busiest dp rank's: ceil(B / dp) of the
// decodes and the prefill chunk, with the experts seeing every rank's tokens.
//
// A burst (every request sent at once) moves in waves of B, the last of the N - (waves - 1) B the
// others leave: SGLang prefills a wave and then decodes it; vLLM and TensorRT-LLM fill every step
// to the token budget while prompts wait, so a request decodes in full steps until the wave's last
// prompt is in. Past the first wave a freed slot admits the next prompt at once: B requests stay
// admitted at the waves' rate, and a later request's TPOT is its time admitted (Little's law) less
// its prompt's steps, at most a full step. A closed loop of fixed-length clients
// (Load::fixed_lengths) on SGLang is such a wave every cycle: a wave's prompts all prefill before
// it decodes, so it finishes together and its clients send again together. On vLLM and TensorRT-LLM
// such clients stay bunched when a cycle's prompts pass the token budget: they queue for it, come
// back in the groups they were prefilled in, and each prompt's chunks ride in full steps.
//
// What it leaves out: prefix caching, speculative decoding, preemption, how far vLLM's and
// TensorRT-LLM's fixed-length clients spread when a cycle's prompts fit one step (their mixed
// steps let the first prompts decode ahead of the rest, by how much their schedulers do not say),
// experts' imbalance beyond uniform routing's, and the latency (not the bytes) of the MoE
// all-to-all. The fractions and fixed costs are per GPU family and the request overhead per
// engine (and, for the eager engines, per projection of the model), fitted on published
// measurements by bench/fit_latency.cpp (default_params names them).

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <string_view>

#include "../budget.hpp"
#include "../detail/enum_table.hpp"
#include "../engine/parallel.hpp"
#include "../engine/report.hpp"
#include "../gpu_family.hpp"
#include "../roofline.hpp"

namespace kvplan {

/// What the estimate adds to the bound: achieved fractions of peak and fixed costs per step.
struct EstimateParams {
    double bandwidth = 1.0;  ///< achieved fraction of peak memory bandwidth, in (0, 1]
    double compute = 1.0;    ///< achieved fraction of peak dense FLOP/s in the GEMMs, (0, 1]
    /// Achieved fraction of the GPU's bf16 peak in attention, in (0, 1]; 0: the GEMMs' fraction of
    /// their own peak. Attention kernels (FlashAttention, FlashInfer) run at another fraction than
    /// the GEMMs: softmax and masking between two matmuls, and causal tiles half full.
    double attention = 0.0;
    /// Achieved fraction of the GEMMs' peak in the routed experts' grouped GEMMs, in (0, 1]; 0: the
    /// GEMMs' fraction. A grouped GEMM runs each expert on its share of the tokens (tokens x top-k
    /// / experts rows, unevenly: some experts get more), with block-scale dequantization in fp8
    /// checkpoints (vLLM's fused_moe Triton kernel, SGLang's), far from a dense GEMM's fraction.
    double experts = 0.0;
    Seconds layer_overhead{};      ///< per layer per step: kernel launches and small kernels
    Seconds all_reduce_latency{};  ///< per tensor-parallel all-reduce (its bytes move at link peak)
    /// The per-layer time of an engine that does not compile its forward (SGLang, TensorRT-LLM's
    /// PyTorch backend: eager_prefill), as a multiple of layer_overhead, which is vLLM's. vLLM
    /// compiles the decoder layer with torch.compile by default (vllm/config/compilation.py; its
    /// passes fuse RMSNorm with the quantization of its output and SiLU-and-mul with the next
    /// one's, vllm/compilation/fusion.py and activation_quant_fusion.py) and replays that in its
    /// CUDA graphs; SGLang (server_args.py enable_torch_compile, False) and TensorRT-LLM
    /// (llm_args.py torch_compile_config, None) capture their module-by-module kernels as they
    /// are, so a layer launches more, smaller kernels.
    double uncompiled_layer_scale = 1.0;
    /// The per-layer time of TensorRT-LLM's PyTorch backend as a multiple of layer_overhead; 0:
    /// uncompiled_layer_scale, as SGLang's. It captures its decode steps in CUDA graphs
    /// uncompiled (tensorrt_llm/_torch/pyexecutor/model_engine.py), but a layer of its modeling
    /// files launches fewer kernels than SGLang's or vLLM's: the attention op applies RoPE and
    /// writes the KV cache inside its own kernels (tensorrt_llm/_torch/attention_backend/trtllm.py,
    /// Qwen3's q/k norms with them in one fused kernel, modules/qk_norm_attention.py), and its
    /// all-reduce adds the residual and applies the next RMSNorm (and the next GEMM's fp8 or
    /// NVFP4 quantization) in the same kernel (_torch/distributed/ops.py AllReduce with
    /// AllReduceFusionOp.RESIDUAL_RMS_NORM*, the PRE_MLP_FUSION and POST_MLP_FUSION of
    /// models/modeling_llama.py).
    double trtllm_layer_scale = 0.0;
    /// The per-layer time of a TensorRT engine run by TensorRT-LLM's C++ executor
    /// (RooflineOptions::trtllm_tensorrt_engine) as a multiple of layer_overhead: no CUDA graph,
    /// each kernel enqueued from the host; 0: uncompiled_layer_scale.
    double trtllm_engine_layer_scale = 0.0;
    /// Rows of the tile a grouped GEMM pads each expert's tokens to in a step of more tokens than
    /// experts (vLLM's fused_moe BLOCK_SIZE_M, 64 by default; 16 in a step of at most E tokens):
    /// an expert of x rows computes ceil(x / tile) tiles, so at a few tokens per expert it does a
    /// tile's work. Zero: the routed experts compute only their tokens.
    double expert_tile_rows = 0.0;
    /// Host time of one recurrent mixer (a Mamba or linear-attention layer) that vLLM runs
    /// outside its CUDA graphs, in each step that carries prefill tokens. vLLM captures a
    /// decode-only step as one full graph, and any other step piecewise, the graph split at each
    /// attention-like op, which runs eagerly (cudagraph_mode FULL_AND_PIECEWISE by default,
    /// CUDAGraphMode.mixed_mode PIECEWISE, vllm/config/compilation.py; its splitting ops
    /// _attention_ops name vllm::mamba_mixer2 and vllm::linear_attention beside attention). A
    /// Mamba-2 mixer's eager forward launches its prefill and decode kernels one by one from
    /// Python (vllm/model_executor/layers/mamba/mamba_mixer2.py: causal_conv1d_fn, the chunked
    /// scan's five Triton kernels of mamba_chunk_scan_combined_varlen, causal_conv1d_update,
    /// selective_state_update, the gated norm), far more than an attention layer's one or two.
    /// Zero: not charged (the defaults, see default_family_params).
    Seconds eager_mixer{};
    /// What a request costs outside the GPU's steps (HTTP, tokenizer, scheduler, detokenizer),
    /// added to its TTFT; unset: the engine's fitted default for the model
    /// (default_request_overhead).
    std::optional<Seconds> request_overhead{};
    friend constexpr bool operator==(const EstimateParams&, const EstimateParams&) = default;
};

/// A family's default parameters and the measurements they were fitted on.
struct FamilyParams {
    GpuFamily family = GpuFamily::hopper;
    EstimateParams params{};
    bool fitted = false;           ///< false: borrowed from another family, no measurement seen
    std::string_view fitted_on{};  ///< the rows of tests/data/latency_measurements.json
};

namespace detail {
// The engines' uncompiled_layer_scale, fitted on Hopper's rows and taken by every family.
inline constexpr double uncompiled_layer_scale_fit = 1.45;
// TensorRT-LLM's multiples of its PyTorch backend and of a TensorRT engine, fitted likewise.
inline constexpr double trtllm_layer_scale_fit = 0.85;
inline constexpr double trtllm_engine_layer_scale_fit = 1.65;
// Ampere's fit, which Ada borrows.
inline constexpr EstimateParams ampere_fit{
    .bandwidth = 0.65,
    .compute = 1.00,
    .attention = 0.23,
    .experts = 0.30,
    .layer_overhead = 36.0 * microseconds,
    .all_reduce_latency = 55.0 * microseconds,
    .uncompiled_layer_scale = uncompiled_layer_scale_fit,
    .trtllm_layer_scale = trtllm_layer_scale_fit,
    .trtllm_engine_layer_scale = trtllm_engine_layer_scale_fit,
    .expert_tile_rows = 64.0};
// Hopper's fit, whose compute fractions Blackwell takes.
inline constexpr EstimateParams hopper_fit{
    .bandwidth = 1.00,
    .compute = 0.47,
    .attention = 0.37,
    .experts = 0.21,
    .layer_overhead = 73.0 * microseconds,
    .all_reduce_latency = 6.0 * microseconds,
    .uncompiled_layer_scale = uncompiled_layer_scale_fit,
    .trtllm_layer_scale = trtllm_layer_scale_fit,
    .trtllm_engine_layer_scale = trtllm_engine_layer_scale_fit,
    .expert_tile_rows = 64.0};
}  // namespace detail

// Fitted by bench/fit_latency.cpp (fit_params from {1.0, 0.5, 120 us, 10 us}, attention and
// experts from 0.5, on the ITL/TPOT, e2e latency and throughput of each family's "fit" rows of
// tests/data/latency_measurements.json; a family with fewer than 5 such figures borrows, one with
// fewer than 10 keeps one fraction for attention, experts and GEMMs; the expert tile is held at
// fused_moe's default of 64 rows, not fitted; uncompiled_layer_scale fitted from 1.0 on Hopper's
// rows, Hopper first, and held there by the others). A test reruns the fit and checks these.
// eager_mixer is held at zero, not fitted: only Blackwell's fit rows have a recurrent model on
// vLLM (Nemotron-3-Nano, 2 x B200), and fitted beside them (550 us a mixer) it lifts Blackwell's
// bandwidth from 0.46 to 0.67, which Blackwell's other rows under load do not bear: its 0.46
// also stands in for what their steps cost beyond Hopper's fractions (docs/accuracy.md).
inline constexpr std::array default_family_params{
    FamilyParams{GpuFamily::ampere, detail::ampere_fit, true,
                 "the 18 A100 rows of the fit set (NeMo, GPUStack)"},
    FamilyParams{GpuFamily::ada, detail::ampere_fit, false,
                 "none: Ampere's values (no published Ada measurement in the table)"},
    FamilyParams{
        GpuFamily::hopper, detail::hopper_fit, true,
        "the 59 H100 and H200 rows of the fit set (vLLM, SGLang, TensorRT-LLM, NIM, NeMo)"},
    FamilyParams{GpuFamily::blackwell,
                 {.bandwidth = 0.48,
                  .compute = detail::hopper_fit.compute,
                  .attention = detail::hopper_fit.attention,
                  .experts = detail::hopper_fit.experts,
                  .layer_overhead = 34.0 * microseconds,
                  .all_reduce_latency = detail::hopper_fit.all_reduce_latency,
                  .uncompiled_layer_scale = detail::uncompiled_layer_scale_fit,
                  .trtllm_layer_scale = detail::trtllm_layer_scale_fit,
                  .trtllm_engine_layer_scale = detail::trtllm_engine_layer_scale_fit,
                  .expert_tile_rows = 64.0},
                 true,
                 "the 10 B200 and GB200 rows of the fit set (vLLM, SGLang, TensorRT-LLM); "
                 "Hopper's compute fractions and all-reduce latency"},
    FamilyParams{GpuFamily::cdna3,
                 {.bandwidth = 1.00,
                  .compute = 0.18,
                  .layer_overhead = 113.0 * microseconds,
                  .all_reduce_latency = 19.0 * microseconds,
                  .uncompiled_layer_scale = detail::uncompiled_layer_scale_fit,
                  .trtllm_layer_scale = detail::trtllm_layer_scale_fit,
                  .trtllm_engine_layer_scale = detail::trtllm_engine_layer_scale_fit,
                  .expert_tile_rows = 64.0},
                 true,
                 "vLLM Llama-3.1-405B FP8 on 8 x MI300X, batch 1, 4, 16, 64, 256"},
};

/// The default parameters of a family.
[[nodiscard]] constexpr const FamilyParams& default_params(GpuFamily f) noexcept {
    return default_family_params[static_cast<std::size_t>(f)];
}

/// The default parameters for a GPU, or nullopt when its family is not known.
[[nodiscard]] constexpr std::optional<FamilyParams> default_params(const GpuSpec& g) noexcept {
    const std::optional<GpuFamily> f = gpu_family(g);
    if (!f) return std::nullopt;
    return default_params(*f);
}

/// An engine's fixed cost per request and the measurements it was fitted on.
struct EngineParams {
    ParallelRules engine = ParallelRules::vllm;
    /// Outside the GPU's steps: the HTTP server, the tokenizer, the scheduler's first pass and the
    /// detokenizer, what one request alone measures above its prefill.
    Seconds request_overhead{};
    /// Host time per projection of an eager prefill forward (eager_prefill_projections), where the
    /// engine runs its prefill without CUDA graphs or compilation (eager_prefill): the Python of
    /// each projection's module call and its kernels' launches, which a prompt alone waits for.
    Seconds eager_launch{};
    bool fitted = false;
    std::string_view fitted_on{};
};

// Fitted by bench/fit_latency.cpp on the TTFT of the "fit" rows of at most 4 clients that wait for
// no slot (tests/support/latency_fit.hpp): vLLM's constant, the intercept of the measured TTFT
// against the GPUs' part of the estimate (least squares) where those parts span a factor of 3,
// else the least sum of |log error| on a grid of 0.5 ms up to 500 ms; SGLang's and TensorRT-LLM's
// time per projection, the slope of the measured TTFT on the rows' projections beside their GPU
// parts (least squares through the origin) where the rows span both, else the least sum of |log
// error| on a grid of 1 us.
inline constexpr std::array default_engine_params{
    EngineParams{ParallelRules::vllm, 50.0 * milliseconds, Seconds{}, true,
                 "the 3 TTFTs of vLLM rows of the fit set at 4 clients or fewer"},
    EngineParams{ParallelRules::sglang, Seconds{}, 182.0 * microseconds, true,
                 "the 3 TTFTs of SGLang rows of the fit set at 4 clients or fewer (Qwen3-235B on "
                 "H200, 1,000 to 4,000 prompt tokens: 470 projections)"},
    EngineParams{ParallelRules::trtllm, Seconds{}, 223.0 * microseconds, true,
                 "the slope of the 4 TTFTs of TensorRT-LLM rows of the fit set at 4 clients or "
                 "fewer (Llama-3.3-70B, Qwen3-32B, Qwen3-235B: 256 to 470 projections)"},
};

/// The default parameters of an engine.
[[nodiscard]] constexpr const EngineParams& default_params(ParallelRules e) noexcept {
    return default_engine_params[static_cast<std::size_t>(e)];
}

/// Whether the engine runs a prefill forward eagerly, launching each kernel from Python:
/// - SGLang replays CUDA graphs only for decode, target-verify and idle batches
///   (python/sglang/srt/model_executor/model_runner.py, _forward_raw: forward_mode.is_cuda_graph(),
///   ForwardMode in forward_batch_info.py); an extend batch runs forward_extend eagerly, and
///   torch.compile is off unless --enable-torch-compile;
/// - TensorRT-LLM's PyTorch backend takes a CUDA graph only for a generation-only batch
///   (tensorrt_llm/_torch/pyexecutor/model_engine.py, _maybe_get_cuda_graph: "not
///   batch.is_generation_only" returns None), with torch_compile_config unset by default;
/// - vLLM compiles the model's forward (vllm/compilation, torch.compile on by default in V1) and
///   launches a step past its CUDA graphs' sizes as one compiled graph, not module by module: its
///   fixed cost is a constant.
[[nodiscard]] constexpr bool eager_prefill(ParallelRules e) noexcept {
    return e == ParallelRules::sglang || e == ParallelRules::trtllm;
}

/// The projections (linear modules) one forward of `m` calls, layer by layer: each a GEMM with its
/// own launches (and, quantized, its activation's quantization) from the model's Python.
/// - attention: q, k and v in one (qkv_proj) and o_proj, 2; multi-head latent attention
///   q_a_proj, q_b_proj (or q_proj without q_lora_rank), kv_a_proj_with_mqa, kv_b_proj and
///   o_proj, 5 (4); a Mamba or linear-attention mixer in_proj and out_proj, 2;
/// - MLP: dense gate_up_proj and down_proj, 2; MoE the router's gate, the experts' two grouped
///   GEMMs, and the shared experts' gate_up and down where the model has them, 3 or 5.
[[nodiscard]] constexpr std::uint64_t eager_prefill_projections(const Model& m) {
    const ModelConfig& c = m.config();
    std::uint64_t n = 0;
    for (std::uint32_t i = 0; i < m.num_layers(); ++i) {
        const CacheKind k = m.layer(i).kind;
        if (k == CacheKind::mla_latent)
            n += c.mla.q_lora_rank > 0 ? 5 : 4;
        else if (k != CacheKind::mlp_only)
            n += 2;
        if (m.has_mlp(i)) n += m.is_moe_layer(i) ? (c.moe.shared_experts > 0 ? 5 : 3) : 2;
    }
    return n;
}

/// The engine's default fixed cost per request for model `m`: its constant, and where it prefills
/// eagerly (eager_prefill) the host time of the prompt's forward, eager_launch per projection.
/// A prompt alone waits for it: the GPU runs each kernel as soon as it is launched.
[[nodiscard]] constexpr Seconds default_request_overhead(ParallelRules e, const Model& m) {
    const EngineParams& d = default_params(e);
    if (!eager_prefill(e)) return d.request_overhead;
    return d.request_overhead + d.eager_launch * static_cast<double>(eager_prefill_projections(m));
}

/// The request overhead `p` gives, else the engine's default for model `m`.
[[nodiscard]] constexpr Seconds request_overhead(const EstimateParams& p, ParallelRules e,
                                                 const Model& m) {
    return p.request_overhead.value_or(default_request_overhead(e, m));
}

/// Tokens one forward carries at most, by each engine's default:
/// - vLLM: max_num_batched_tokens (vllm_batch_defaults);
/// - SGLang: chunked_prefill_size, by the GPU's memory as SGLang reads it (sglang_mem_fraction:
///   python/sglang/srt/server_args.py, 2,048 below 35 GiB, 4,096 below 60 GiB, 8,192 below
///   160 GiB, else 16,384); it bounds a prefill pass, decodes run apart;
/// - TensorRT-LLM: max_num_tokens, 8,192 (tensorrt_llm/llmapi/llm_args.py, the trtllm-serve
///   default).
[[nodiscard]] constexpr std::uint64_t default_token_budget(const GpuSpec& g,
                                                           ParallelRules e) noexcept {
    switch (e) {
        case ParallelRules::vllm:
            return vllm_batch_defaults(g).max_num_batched_tokens;
        case ParallelRules::sglang:
            return sglang_mem_fraction(g, 1, 1).chunked_prefill_size;
        case ParallelRules::trtllm:
            return 8192;
    }
    return 8192;
}

/// How requests reach the replica.
enum class LoadKind : std::uint8_t {
    serving,       ///< a closed loop of `concurrency` clients, each sending again when served
    static_batch,  ///< one batch of `concurrency` prompts, prefilled then decoded together
    /// `concurrency` requests sent at once and each served once (vllm bench serve
    /// --request-rate inf with --num-prompts equal to --max-concurrency): waves of the running
    /// cap, each prefilled then decoded together.
    burst,
};

/// What a replica serves: every request has the same prompt and output length.
struct Load {
    LoadKind kind = LoadKind::serving;
    std::uint64_t concurrency = 1;    ///< requests in flight (vllm bench serve --max-concurrency)
    std::uint64_t prompt_tokens = 1;  ///< I
    std::uint64_t output_tokens = 1;  ///< O, the first token included
    /// Tokens of one step; nullopt: the engine's default for the GPU (default_token_budget).
    std::optional<std::uint64_t> max_num_batched_tokens{};
    /// Sequences that may run at once; nullopt: what the engine's own KV pool holds at I + O
    /// tokens each, within its sequence cap (running_cap).
    std::optional<std::uint64_t> max_running{};
    /// Every request exactly I + O tokens (a benchmark's fixed lengths: a random range ratio of
    /// 1, ignore_eos), not lengths drawn around them: a closed loop of such clients on SGLang
    /// stays in step, one wave a cycle, and on vLLM and TensorRT-LLM in groups of full steps when
    /// its prompts pass the token budget; drawn lengths spread the arrivals.
    bool fixed_lengths = false;
    /// Lengths drawn per request, uniformly within +-spread of `prompt_tokens` and
    /// `output_tokens` (their means): each on [m (1 - spread), m (1 + spread)], spread in [0, 1].
    /// vllm bench serve's random dataset at --random-range-ratio r draws [n (1 - r), n (1 + r)]
    /// around the nominal n (vllm/benchmarks/datasets.py, RandomDataset): spread r;
    /// sglang.bench_serving's draws [r n, n] (python/sglang/bench_serving.py,
    /// sample_random_requests; r is 0 unless given): mean n (1 + r) / 2, spread (1 - r) / (1 + r),
    /// 1 at its default. 0: not stated, or fixed (fixed_lengths). With Load::requests it sets how
    /// the run ends (detail::drawn_lengths_drain).
    double length_spread = 0.0;
    /// The run's requests when it starts all `concurrency` at once (vllm bench serve and
    /// sglang.bench_serving with --num-prompts N --max-concurrency C at --request-rate inf):
    /// the first C are a burst, queueing together for prefill, and the rest the closed loop's
    /// steady state, the last N mod C alone (the run's throughput and TPOT count them). N <= C:
    /// N clients' burst, all sent at once and none after (its TPOT and throughput a burst's).
    /// nullopt: the steady state alone.
    std::optional<std::uint64_t> requests{};
};

/// One step's cost, every term; times summed over pipeline stages, bytes and FLOPs on a GPU of
/// the first stage.
struct StepTerms {
    std::uint64_t decodes = 0;  ///< sequences decoding one token each
    std::uint64_t prefill_tokens = 0;
    Bytes bytes{};  ///< weights read + KV read + KV written
    Flops flops{};
    Seconds memory{};      ///< bytes at bandwidth x fraction
    Seconds compute{};     ///< FLOPs at peak x fraction
    Seconds layers{};      ///< layers x layer_overhead, and vLLM's eager mixers
    Seconds all_reduce{};  ///< latency and bytes of every all-reduce
    Seconds all_to_all{};  ///< expert parallelism's dispatch and combine at link peak
    /// The routed experts' rows through HBM between and after their grouped GEMMs, at bandwidth
    /// x fraction (detail::expert_round_trip)
    Seconds experts_io{};
    Seconds time{};  ///< max(memory, compute) + layers + all_reduce + all_to_all + experts_io
    Bound bound = Bound::memory;  ///< the larger of memory and compute (first stage)
};

/// The estimate, its terms, and the bound beside it.
struct LatencyEstimate {
    LoadKind kind = LoadKind::serving;
    std::uint64_t concurrency = 0;
    std::uint64_t running = 0;       ///< B: sequences decoding at once
    std::uint64_t waiting = 0;       ///< C - B: requests in the queue
    std::uint64_t running_cap = 0;   ///< what caps B (KV cache, max_num_seqs, or given)
    bool kv_holds_one = true;        ///< false: the KV budget holds no sequence of I + O
    std::uint64_t token_budget = 0;  ///< max_num_batched_tokens
    std::uint64_t chunk = 0;         ///< prefill tokens per chunk (per pass for a batch)
    std::uint64_t chunks = 0;        ///< chunks per prompt (passes for a batch)
    std::uint64_t mean_context = 0;  ///< I + O/2: the context of a running sequence
    /// Serving: prefill chunks a step carries on average (above 1: several in one step; SGLang:
    /// prefill passes per decode step).
    double mixed_share = 0.0;
    ParallelRules engine = ParallelRules::vllm;  ///< whose scheduler the steps follow
    bool separate_prefill = false;  ///< SGLang: prefill passes apart from the decode steps
    bool prefill_limited = false;   ///< the token budget, not the running batch, sets the rate
    double decodes_per_step = 0.0;  ///< mean decodes in a step (running less those prefilling)
    double prefill_per_step = 0.0;  ///< mean prefill tokens per decode step
    StepTerms decode_step{};        ///< the mean decodes, no prefill
    StepTerms mixed_step{};         ///< the decodes and the mean prefill (SGLang: a prefill pass)
    StepTerms prefill_step{};       ///< the step of the request's own chunk (a batch: all prefill)
    Seconds itl{};                  ///< mean inter-token latency
    Seconds tpot{};                 ///< time per output token after the first (= itl here)
    Seconds ttft{};                 ///< overhead + queue + step in flight + prefill + first wave
    /// Its own chunks, the wait for the budget when it binds, and for the prompts ahead of it.
    Seconds ttft_prefill{};
    Seconds ttft_prefill_wait{};  ///< of ttft_prefill: the wait for the prompts ahead of it
    Seconds prefill_service{};    ///< S: how long one prompt holds the prefill (serving)
    /// The rest of the forward running when it arrives (SGLang, TensorRT-LLM: and the next one,
    /// scheduled while it ran).
    Seconds ttft_in_flight{};
    Seconds ttft_queue{};  ///< waiting for a running slot (C > B)
    /// Of a run of Load::requests N started at once: C / N of what the first C requests, a
    /// burst, wait beyond the steady state's TTFT.
    Seconds ttft_first_wave{};
    Seconds ttft_overhead{};    ///< the engine's fixed cost per request
    Seconds request{};          ///< a request's whole time once admitted (a batch: e2e)
    double tokens_per_s = 0.0;  ///< output tokens per second of the replica
    double tokens_per_s_per_gpu = 0.0;
    // The roofline bound at the same load (peak figures, no fixed costs).
    Seconds itl_bound{};      ///< decode bound TPOT at B sequences of I tokens
    Seconds ttft_bound{};     ///< prefill bound of one prompt (a batch: all of them)
    Seconds request_bound{};  ///< a batch: prefill bound + (O - 1) x decode bound
    /// The most output tokens per second the replica can give at the load: the decode bound's
    /// rate at C sequences, and the compute of prefilling each request's prompt at peak.
    double tokens_per_s_bound = 0.0;
};

namespace detail {

constexpr void check_estimate(const Replica& r, const Load& l, const EstimateParams& p) {
    const auto where = [&] { return model_where(r.model.config()); };
    const auto fraction = [](double f) { return f > 0.0 && f <= 1.0; };
    if (!fraction(p.bandwidth))
        throw_field_error<InvalidInput>(where(), "estimate.bandwidth", "a fraction in (0, 1]",
                                        std::to_string(p.bandwidth));
    if (!fraction(p.compute))
        throw_field_error<InvalidInput>(where(), "estimate.compute", "a fraction in (0, 1]",
                                        std::to_string(p.compute));
    if (!(p.attention == 0.0 || fraction(p.attention)))
        throw_field_error<InvalidInput>(where(), "estimate.attention", "0 or a fraction in (0, 1]",
                                        std::to_string(p.attention));
    if (!(p.experts == 0.0 || fraction(p.experts)))
        throw_field_error<InvalidInput>(where(), "estimate.experts", "0 or a fraction in (0, 1]",
                                        std::to_string(p.experts));
    if (p.layer_overhead < Seconds{} || p.all_reduce_latency < Seconds{} ||
        p.eager_mixer < Seconds{} || (p.request_overhead && *p.request_overhead < Seconds{}))
        throw_field_error<InvalidInput>(where(), "estimate.overheads", ">= 0 s", "a negative time");
    if (!(p.uncompiled_layer_scale > 0.0 && p.uncompiled_layer_scale <= 100.0))
        throw_field_error<InvalidInput>(where(), "estimate.uncompiled_layer_scale",
                                        "a multiple in (0, 100]",
                                        std::to_string(p.uncompiled_layer_scale));
    const auto zero_or_multiple = [](double s) { return s == 0.0 || (s > 0.0 && s <= 100.0); };
    if (!zero_or_multiple(p.trtllm_layer_scale))
        throw_field_error<InvalidInput>(where(), "estimate.trtllm_layer_scale",
                                        "0 or a multiple in (0, 100]",
                                        std::to_string(p.trtllm_layer_scale));
    if (!zero_or_multiple(p.trtllm_engine_layer_scale))
        throw_field_error<InvalidInput>(where(), "estimate.trtllm_engine_layer_scale",
                                        "0 or a multiple in (0, 100]",
                                        std::to_string(p.trtllm_engine_layer_scale));
    if (!(p.expert_tile_rows >= 0.0))
        throw_field_error<InvalidInput>(where(), "estimate.expert_tile_rows", ">= 0 rows",
                                        std::to_string(p.expert_tile_rows));
    if (l.concurrency == 0)
        throw_field_error<InvalidInput>(where(), "load.concurrency", ">= 1 request", "0");
    if (l.prompt_tokens == 0)
        throw_field_error<InvalidInput>(where(), "load.prompt_tokens", ">= 1 token", "0");
    if (l.output_tokens == 0)
        throw_field_error<InvalidInput>(where(), "load.output_tokens", ">= 1 token", "0");
    if (l.max_num_batched_tokens && *l.max_num_batched_tokens == 0)
        throw_field_error<InvalidInput>(where(), "load.max_num_batched_tokens", ">= 1 token", "0");
    if (l.max_running && *l.max_running == 0)
        throw_field_error<InvalidInput>(where(), "load.max_running", ">= 1 sequence", "0");
    if (l.requests && *l.requests == 0)
        throw_field_error<InvalidInput>(where(), "load.requests", ">= 1 request", "0");
    if (!(l.length_spread >= 0.0 && l.length_spread <= 1.0))
        throw_field_error<InvalidInput>(where(), "load.length_spread", "a fraction in [0, 1]",
                                        std::to_string(l.length_spread));
    if (l.fixed_lengths && l.length_spread > 0.0)
        throw_field_error<InvalidInput>(where(), "load.length_spread",
                                        "0 with fixed_lengths (every request exactly I + O)",
                                        std::to_string(l.length_spread));
}

/// What one step carries on top of its decodes: `prompts` prompts of `prompt_tokens`, of which
/// a share `share` is done in this step, over `passes` forwards (a batch's prefill may take
/// several; weights and fixed costs are paid once per pass).
struct PrefillPart {
    std::uint64_t prompts = 0;
    std::uint64_t prompt_tokens = 0;
    double share = 1.0;
    std::uint64_t passes = 1;
    /// The prompts spread over the attention data-parallel ranks (ceil(prompts / dp) on the
    /// busiest); otherwise all of them run on one rank.
    bool spread = false;
};

/// The tiles of `tile` rows a touched expert's grouped GEMM runs on average when an expert's
/// rows are Poisson with mean `load` (tokens x top-k / experts, routed uniformly and
/// independently): E[ceil(X / tile) | X >= 1]. Summed over the pmf, scaled so that no term
/// underflows or overflows (the ratio of two sums needs no e^-load).
[[nodiscard]] constexpr double expert_tiles_per_touched(double load, double tile) {
    if (!(load > 0.0) || !(tile > 0.0)) return 1.0;
    // Past the mean by 12 standard deviations and two tiles the tail is below 1e-30.
    const double last = load + 12.0 * std::sqrt(load) + 2.0 * tile + 16.0;
    double w = 1.0, tiles = 0.0, mass = 0.0;  // w: load^x / x!, rescaled with the sums
    for (double x = 1.0; x <= last; x += 1.0) {
        w *= load / x;
        tiles += w * std::ceil(x / tile);
        mass += w;
        if (w > 1e200) {
            w *= 1e-200;
            tiles *= 1e-200;
            mass *= 1e-200;
        }
    }
    return mass > 0.0 ? tiles / mass : 1.0;
}

/// Rows of the tile a grouped GEMM pads each expert's rows to in a step of `tokens` tokens over
/// `experts` experts: vLLM's fused_moe takes BLOCK_SIZE_M 16 for a step of at most E tokens and
/// 64 past it (get_default_config in vllm/model_executor/layers/fused_moe/fused_moe.py; its tuned
/// configs/E=...,N=...json likewise grow the tile with the batch), so the small tile is 16 (or
/// the given tile if smaller) and the large one `p.expert_tile_rows`. Zero: no tiles.
[[nodiscard]] constexpr double expert_tile(const EstimateParams& p, std::uint64_t tokens,
                                           std::uint32_t experts) noexcept {
    if (!(p.expert_tile_rows > 0.0)) return 0.0;
    return tokens <= experts ? std::min(16.0, p.expert_tile_rows) : p.expert_tile_rows;
}

/// Whether `r` is vLLM running a MoE model's experts in fp8 of 128 x 128 blocks on Hopper, the
/// experts DeepGEMM may take (fixed_expert_block, large_step_expert_block say when it does).
[[nodiscard]] constexpr bool vllm_hopper_block_fp8_experts(const Replica& r) {
    const WeightFormat f = r.weights.expert_format.value_or(r.weights.format);
    return r.parallel.rules == ParallelRules::vllm && gpu_family(r.gpu) == GpuFamily::hopper &&
           f == WeightFormat::fp8 && r.weights.layout.fp8_block == 128 &&
           r.model.config().moe.experts != 0;
}

/// The vLLM release line whose fp8 experts in 128 x 128 blocks run DeepGEMM on Hopper whatever
/// the step's size, with each expert's rows padded to a block of 128.
inline constexpr EngineVersion vllm_deep_gemm_experts_release{0, 12};

/// Rows of the block every touched expert is padded to whatever the step's size, where the
/// engine's grouped GEMM has a fixed one; 0: the tile grows with the batch (expert_tile). vLLM
/// 0.12 picks DeepGEMM for fp8 experts in 128 x 128 blocks on Hopper (get_fp8_moe_backend in
/// vllm/model_executor/layers/quantization/fp8.py: VLLM_USE_DEEP_GEMM and VLLM_MOE_USE_DEEP_GEMM
/// default to 1, the experts' tp below 8 since PR #29346), and since PR #26197 uses E8M0 scales
/// there by default (is_deep_gemm_e8m0_used in vllm/utils/deep_gemm.py), which sends every step
/// to DeepGEMM, small ones too (fused_experts, TritonOrDeepGemmExperts: "is_deep_gemm_e8m0_used()
/// or _valid_deep_gemm(...)"). Its contiguous layout pads each expert's rows to
/// get_mk_alignment_for_contiguous_layout(), 128, and on Hopper its block M is that alignment
/// (DeepGEMM's csrc/jit_kernels/heuristics), so an expert of 1 to 128 rows runs one 128-row
/// block. vLLM's main puts Triton first for these experts under tensor parallelism
/// (vllm/model_executor/layers/fused_moe/oracle/fp8.py, _get_priority_backends), whose tuned
/// tile grows with the batch.
[[nodiscard]] constexpr double fixed_expert_block(const Replica& r, const RooflineOptions& o) {
    if (o.vllm_release != vllm_deep_gemm_experts_release || !vllm_hopper_block_fp8_experts(r) ||
        r.layout().placement().expert_tp >= 8)
        return 0.0;
    return 128.0;
}

/// The vLLM release line whose fp8 experts in 128 x 128 blocks run DeepGEMM on Hopper in a step
/// of at least 128 tokens, at any expert tp.
inline constexpr EngineVersion vllm_deep_gemm_large_steps_release{0, 11};

/// Rows of the block every touched expert is padded to in a step of `tokens` tokens under vLLM
/// 0.11; 0: Triton's tile (expert_tile). PR #24462 turned VLLM_USE_DEEP_GEMM on by default
/// (in 0.11.0), so Fp8MoEMethod allows DeepGEMM for fp8 experts in 128 x 128 blocks on Hopper
/// whatever the experts' tp (PR #29346 keeps Triton at tp 8 only from 0.12); E8M0 scales were
/// not yet the default on Hopper (PR #26197 came after 0.11.0), so fused_experts sends a step to
/// DeepGEMM only where _valid_deep_gemm holds (vllm/model_executor/layers/fused_moe/
/// deep_gemm_moe.py, _valid_deep_gemm_shape: at least 128 tokens, and each expert's slice width
/// and the hidden size multiples of 128), and smaller steps to Triton. Each touched expert is
/// padded to DeepGEMM's 128-row block, as fixed_expert_block says for 0.12. The line is taken at
/// its first release: 0.11.1 took PR #26197.
[[nodiscard]] constexpr double large_step_expert_block(const Replica& r, const RooflineOptions& o,
                                                       std::uint64_t tokens) {
    if (o.vllm_release != vllm_deep_gemm_large_steps_release || tokens < 128 ||
        !vllm_hopper_block_fp8_experts(r))
        return 0.0;
    const MoeShape& moe = r.model.config().moe;
    const std::uint64_t width = moe.expert_intermediate_size / r.layout().placement().expert_tp;
    if (width % 128 != 0 || r.model.config().hidden_size % 128 != 0) return 0.0;
    return 128.0;
}

/// The recurrent state a decode step writes back per sequence on a rank of stage `s`: every
/// constant-state layer's whole state, which the bound counts once, as read. A Mamba layer's
/// decode updates its SSM state in place (vLLM's selective_state_update,
/// vllm/model_executor/layers/mamba/ops/mamba_ssm.py, loads the state, updates it and stores it
/// back; causal_conv1d_update likewise its convolution window), and a gated delta-net layer
/// stores its new recurrent state (fused_recurrent_gated_delta_rule,
/// vllm/model_executor/layers/fla/ops/fused_recurrent.py): each token moves the state twice.
[[nodiscard]] constexpr Bytes recurrent_state_written(const DecodeCosts& c, std::uint32_t s) {
    const DecodeCosts::Stage& cs = c.stages[s];
    const LayerStack& L = c.replica.model.layers();
    Bytes state{};
    for (std::uint32_t k = 0; k < L.num_specs; ++k)
        if (L.specs[k].kind == CacheKind::constant_state) state += cs.state[k] * cs.layers[k];
    return state;
}

/// The host time of one eager forward of stage `s` where SGLang runs a decode step without its
/// CUDA graphs, else zero. SGLang captures decode graphs for batches of up to cuda_graph_max_bs
/// sequences (python/sglang/srt/model_executor/cuda_graph_runner.py, can_run: a batch larger than
/// the largest captured one is not replayed), by the GPU's memory and tp
/// (python/sglang/srt/server_args.py, _handle_gpu_memory_settings; sglang_mem_fraction); a larger
/// batch runs forward_decode eagerly, every kernel launched from Python, and the step lasts at
/// least as long as its launches: the host time of the eager prefill forward (the engine's fitted
/// request overhead, default_request_overhead, which is that time alone), per stage by its share
/// of the layers. Under attention data parallelism the graph's batch is a rank's.
[[nodiscard]] constexpr Seconds sglang_eager_decode(const DecodeCosts& c, std::uint32_t s,
                                                    std::uint64_t decodes,
                                                    const EstimateParams& p) {
    const Replica& r = c.replica;
    if (r.parallel.rules != ParallelRules::sglang || decodes == 0) return Seconds{};
    const std::uint32_t graph_bs =
        sglang_mem_fraction(r.gpu, r.parallel.tp, r.parallel.pp, {}, c.layout.dp())
            .cuda_graph_max_bs;
    if (own_sequences(c.layout, decodes) <= graph_bs) return Seconds{};
    const Model& m = r.model;
    const DecodeCosts::Stage& cs = c.stages[s];
    const double share = static_cast<double>(shard_end(m, cs.shard) - cs.shard.first_layer) /
                         static_cast<double>(std::max<std::uint32_t>(m.num_layers(), 1));
    return request_overhead(p, r.parallel.rules, m) * share;
}

/// The recurrent mixers (constant-state layers: Mamba, linear attention) of stage `s` that vLLM
/// runs eagerly in a step that carries prefill (EstimateParams::eager_mixer); none under the
/// other engines, whose steps with prefill run eagerly whole (eager_prefill, charged by
/// uncompiled_layer_scale), or when the step carries none.
[[nodiscard]] constexpr std::uint32_t eager_mixers(const DecodeCosts& c, std::uint32_t s,
                                                   std::uint64_t prefill_tokens) {
    if (c.replica.parallel.rules != ParallelRules::vllm || prefill_tokens == 0) return 0;
    const Model& m = c.replica.model;
    const Shard& sh = c.stages[s].shard;
    std::uint32_t n = 0;
    for (std::uint32_t i = sh.first_layer; i < shard_end(m, sh); ++i)
        n += m.layer(i).kind == CacheKind::constant_state ? 1U : 0U;
    return n;
}

/// Whether the engine of `r` runs its routed experts' activation and top-k sum inside the grouped
/// GEMMs rather than as kernels of their own. vLLM's MXFP4 experts on Hopper run OpenAI's Triton
/// matmul_ogs (Mxfp4Backend.TRITON, get_mxfp4_backend in
/// vllm/model_executor/layers/quantization/mxfp4.py), which fuses SwiGLU into the first GEMM
/// (FusedActivation) and scatters and sums the rows in the second (OAITritonExperts, its
/// finalize a TopKWeightAndReduceNoOP, vllm/model_executor/layers/fused_moe/
/// gpt_oss_triton_kernels_moe.py); on Blackwell FlashInfer's MXFP4 MoE does the same in one
/// call; SGLang picks the same kernels for MXFP4 experts on both. Everything else runs them apart:
/// vLLM's and SGLang's Triton fused_moe and Marlin MoE, and TensorRT-LLM's CUTLASS MoE (its
/// default backend: permute, grouped GEMMs, activation, finalize).
[[nodiscard]] constexpr bool experts_fuse_activation(const Replica& r) noexcept {
    const WeightFormat f = r.weights.expert_format.value_or(r.weights.format);
    if (f != WeightFormat::mxfp4 || r.parallel.rules == ParallelRules::trtllm) return false;
    const std::optional<GpuFamily> fam = gpu_family(r.gpu);
    return fam == GpuFamily::hopper || fam == GpuFamily::blackwell;
}

/// The bytes a step's routed experts move through HBM on a rank of stage `s` outside their
/// grouped GEMMs, whose own reads and writes overlap their math: `tokens` tokens route to k
/// experts each, the rank computing the rows of the experts it holds (the share
/// experts_per_gpu / physical_experts of them), each expert split expert_tp ways to a width I.
/// vLLM's fused_experts (TritonExperts.apply, vllm/model_executor/layers/fused_moe/fused_moe.py)
/// writes the first GEMM's output, (tokens, k, 2 I); the activation reads it and writes
/// (tokens x k, I), which the second GEMM reads; the second GEMM writes (tokens, k, H) and the
/// top-k sum reads it back: the kernels apart from the GEMMs read 2 I + H and write I values a
/// row, 3 I + H activation elements (the sum's (tokens, H) output, 1/k of that, is left out).
/// H is the experts' input width (the latent size under LatentMoE). Zero where the kernel fuses
/// them (experts_fuse_activation).
[[nodiscard]] constexpr Bytes expert_round_trip(const DecodeCosts& c, std::uint32_t s,
                                                std::uint64_t tokens) {
    const Model& m = c.replica.model;
    const MoeShape& moe = m.config().moe;
    const Placement& pl = c.layout.placement();
    if (moe.experts == 0 || pl.physical_experts == 0 || tokens == 0 ||
        experts_fuse_activation(c.replica))
        return Bytes{};
    const std::uint32_t moe_layers = moe_layers_in(m, c.stages[s].shard);
    const double width = static_cast<double>(moe.expert_intermediate_size) / pl.expert_tp;
    const double h =
        static_cast<double>(moe.latent_size != 0 ? moe.latent_size : m.config().hidden_size);
    const double share =
        static_cast<double>(pl.experts_per_gpu) / static_cast<double>(pl.physical_experts);
    const double rows = static_cast<double>(tokens) * moe.experts_per_token * share;
    const double elements = rows * (3.0 * width + h) * static_cast<double>(moe_layers);
    return scale_up(c.options.activation_element, elements);
}

}  // namespace detail

/// The per-layer time of engine `e` as a multiple of `p.layer_overhead` (vLLM's compiled layer):
/// SGLang's uncompiled layer at uncompiled_layer_scale; TensorRT-LLM's PyTorch backend at
/// trtllm_layer_scale (its fused kernels), a TensorRT engine (`tensorrt_engine`) at
/// trtllm_engine_layer_scale (no CUDA graph); either at uncompiled_layer_scale where it is 0.
[[nodiscard]] constexpr double engine_layer_scale(const EstimateParams& p, ParallelRules e,
                                                  bool tensorrt_engine = false) noexcept {
    const auto or_uncompiled = [&](double s) { return s > 0.0 ? s : p.uncompiled_layer_scale; };
    switch (e) {
        case ParallelRules::vllm:
            return 1.0;
        case ParallelRules::sglang:
            return p.uncompiled_layer_scale;
        case ParallelRules::trtllm:
            return or_uncompiled(tensorrt_engine ? p.trtllm_engine_layer_scale
                                                 : p.trtllm_layer_scale);
    }
    return 1.0;
}

namespace detail {

/// The fixed time of one tensor-parallel all-reduce beside its bytes: `p.all_reduce_latency`
/// (vLLM's custom all-reduce and SGLang's, whose one-shot kernel meets its peers at a barrier
/// before and after it reads their buffers: csrc/custom_all_reduce.cuh), none under TensorRT-LLM's
/// PyTorch backend, whose all-reduce is one of the layer's kernels in its per-layer time: its
/// one-shot kernel polls its peers' data in place (a lamport buffer cleared to -0.0, no barrier:
/// get_or_scale_allreduce_mnnvl_workspace and the AUTO strategy of
/// tensorrt_llm/_torch/distributed/ops.py), adding the residual and applying the next RMSNorm
/// where the model fuses them (EstimateParams::trtllm_layer_scale).
[[nodiscard]] constexpr Seconds all_reduce_latency(const EstimateParams& p, const Replica& r,
                                                   const RooflineOptions& o) noexcept {
    if (r.parallel.rules == ParallelRules::trtllm && !o.trtllm_tensorrt_engine) return Seconds{};
    return p.all_reduce_latency;
}

/// The layers of `shard`, each at its multiple of `p.layer_overhead` under the engine of `c`
/// (engine_layer_scale). TensorRT-LLM's PyTorch backend fuses the dense layer's kernels
/// (EstimateParams::trtllm_layer_scale); an MoE layer's routing, token permutation, grouped GEMMs
/// and finalize are kernels of their own (tensorrt_llm/_torch/modules/fused_moe/), launched as
/// SGLang launches its own, so an MoE layer takes uncompiled_layer_scale.
[[nodiscard]] constexpr double layer_multiples(const EstimateParams& p, const DecodeCosts& c,
                                               const Shard& shard) {
    const Model& m = c.replica.model;
    const ParallelRules e = c.replica.parallel.rules;
    const std::uint32_t layers = shard_end(m, shard) - shard.first_layer;
    const double scale = engine_layer_scale(p, e, c.options.trtllm_tensorrt_engine);
    if (e != ParallelRules::trtllm || c.options.trtllm_tensorrt_engine)
        return scale * static_cast<double>(layers);
    const std::uint32_t moe = moe_layers_in(m, shard);
    return scale * static_cast<double>(layers - moe) +
           p.uncompiled_layer_scale * static_cast<double>(moe);
}

/// One step on stage `s`: `decodes` sequences at `context` tokens plus `pre`.
[[nodiscard]] constexpr StepTerms stage_step(const DecodeCosts& c, std::uint32_t s,
                                             std::uint64_t decodes, std::uint64_t context,
                                             const PrefillPart& pre, const EstimateParams& p) {
    const DecodeCosts::Stage& cs = c.stages[s];
    const Model& m = c.replica.model;
    const LayerStack& L = m.layers();
    const double prefill_tokens =
        static_cast<double>(pre.prompts) * static_cast<double>(pre.prompt_tokens) * pre.share;
    const auto tokens = decodes + static_cast<std::uint64_t>(prefill_tokens + 0.5);
    StepTerms t;
    t.decodes = decodes;
    t.prefill_tokens = tokens - decodes;
    // Under attention data parallelism the busiest dp rank runs its own decodes and the chunk;
    // the experts see every rank's tokens.
    const std::uint64_t own_prompts =
        pre.spread ? own_sequences(c.layout, pre.prompts) : pre.prompts;
    const std::uint64_t own_prefill =
        pre.spread && pre.prompts > 0
            ? static_cast<std::uint64_t>(static_cast<double>(own_prompts) *
                                             static_cast<double>(pre.prompt_tokens) * pre.share +
                                         0.5)
            : t.prefill_tokens;
    const std::uint64_t own = own_sequences(c.layout, decodes) + own_prefill;
    // Weights: read once per pass; MoE experts by the tokens of a pass.
    const std::uint64_t per_pass = (tokens + pre.passes - 1) / pre.passes;
    const std::uint64_t own_per_pass = (own + pre.passes - 1) / pre.passes;
    const Bytes weights = weight_read_at(cs.weights, m.config(), per_pass).read * pre.passes;
    Bytes kv{};
    double attention = 0.0;
    if (decodes > 0) {
        const DecodeLoad d = decode_load(c, s, decodes, context);
        kv += d.kv_read;
        attention += d.attention.in(FLOP);
        kv += recurrent_state_written(c, s) * own_sequences(c.layout, decodes);
    }
    if (pre.prompts > 0 && pre.share > 0.0) {
        // The KV the prompts write, and their causal attention, in the share this step does.
        Bytes prompt_kv{};
        for (std::uint32_t k = 0; k < L.num_specs; ++k)
            prompt_kv += (cs.kv_per_token[k] *
                              tokens_on_rank(L.specs[k].kind,
                                             tokens_kept(L.specs[k], pre.prompt_tokens), cs.shard) +
                          cs.state[k]) *
                         cs.layers[k];
        kv += scale_up(prompt_kv * own_prompts, pre.share);
        attention += prefill_attention_flops(m, cs.shard, pre.prompt_tokens) *
                     static_cast<double>(own_prompts) * pre.share;
    }
    t.bytes = weights + kv;
    Flops gemm = matmul_flops(cs.matmul, own, tokens);
    // The LM head runs at one position a prompt of the step, not at each of its tokens.
    if (own_prefill > 0)
        gemm = gemm -
               unsampled_head_flops(cs.matmul, static_cast<double>(own_prefill),
                                    static_cast<double>(own_prompts) * std::max(pre.share, 1.0) +
                                        (pre.passes - 1.0));
    // The routed experts' part of it: every token of the step routes to the rank's experts.
    double routed = 2.0 * cs.matmul.routed * static_cast<double>(tokens);
    if (p.expert_tile_rows > 0.0 && cs.matmul.routed > 0.0 && per_pass > 0) {
        // A grouped GEMM pads each expert's rows to whole tiles (vLLM's moe_align_block_size
        // before fused_moe; SGLang's Triton MoE runner likewise): each touched expert runs
        // ceil(rows / tile) tiles, its rows spread around tokens x top-k / experts by the routing.
        // The weights read are the same.
        const std::uint32_t k = m.config().moe.experts_per_token;
        const std::uint32_t experts = cs.weights.physical_experts;
        const double touched = expected_experts_touched(experts, k, per_pass);
        const double rows = static_cast<double>(per_pass) * k;
        const double load = rows / std::max<double>(experts, 1.0);
        const double fixed = fixed_expert_block(c.replica, c.options);
        const double block =
            fixed > 0.0 ? fixed : large_step_expert_block(c.replica, c.options, per_pass);
        const double tile = block > 0.0 ? block : expert_tile(p, per_pass, experts);
        const double padded = touched * expert_tiles_per_touched(load, tile) * tile;
        if (padded > rows) {
            const double extra = routed * (padded / rows - 1.0);
            gemm += Flops::in_base(extra);
            routed += extra;
        }
    }
    t.flops = gemm + Flops::in_base(attention);
    const GpuSpec& g = c.replica.gpu;
    t.memory = t.bytes / (g.memory_bandwidth * p.bandwidth);
    const FlopsPerSecond gemm_peak = peak_flops(g, detail::compute_of(c.options));
    if (p.attention > 0.0 || p.experts > 0.0) {
        // Attention in bf16 whatever the GEMMs' type (the query and softmax stay in 16 bits),
        // or in fp8 where the engine's kernel runs it so (attention_compute).
        const FlopsPerSecond kernel_peak =
            peak_flops(g, attention_compute(c.replica, detail::compute_of(c.options)));
        const FlopsPerSecond attention_peak =
            p.attention > 0.0 && kernel_peak > FlopsPerSecond{} ? kernel_peak : gemm_peak;
        const double expert_fraction = p.experts > 0.0 ? p.experts : p.compute;
        t.compute = (gemm - Flops::in_base(routed)) / (gemm_peak * p.compute) +
                    Flops::in_base(routed) / (gemm_peak * expert_fraction) +
                    Flops::in_base(attention) /
                        (attention_peak * (p.attention > 0.0 ? p.attention : p.compute));
    } else {
        t.compute = t.flops / (gemm_peak * p.compute);
    }
    t.bound = t.compute > t.memory ? Bound::compute : Bound::memory;
    const double passes = static_cast<double>(pre.passes);
    t.layers = p.layer_overhead * (layer_multiples(p, c, cs.shard) * passes);
    // vLLM's recurrent mixers run eagerly in a step with prefill (EstimateParams::eager_mixer).
    t.layers +=
        p.eager_mixer * (static_cast<double>(eager_mixers(c, s, t.prefill_tokens)) * passes);
    if (c.layout.attention_tp() > 1) {
        // An all-reduce after each mixer and each MLP (their row-parallel output projections),
        // each of a pass's tokens: two a layer of attention and MLP, one a block of Nemotron-H's
        // (vllm/model_executor/models/nemotron_h.py: a Mamba, attention, MLP or MoE mixer a
        // layer, one RowParallelLinear at its end).
        const AllReduce ar = all_reduce(c.replica, c.layout, own_per_pass, c.options);
        std::uint32_t reduces = 0;
        for (std::uint32_t i = cs.shard.first_layer; i < shard_end(m, cs.shard); ++i)
            reduces +=
                (m.layer(i).kind != CacheKind::mlp_only ? 1U : 0U) + (m.has_mlp(i) ? 1U : 0U);
        t.all_reduce = (ar.per_layer * 0.5 + all_reduce_latency(p, c.replica, c.options)) *
                       (static_cast<double>(reduces) * passes);
    }
    // Expert parallelism: each MoE layer of the stage dispatches and combines a pass's tokens.
    const AllToAll a2a = all_to_all(c.replica, c.layout, own_per_pass);
    if (a2a.applies)
        t.all_to_all = a2a.per_layer * (static_cast<double>(moe_layers_in(m, cs.shard)) * passes);
    t.experts_io = expert_round_trip(c, s, tokens) / (g.memory_bandwidth * p.bandwidth);
    t.time = std::max(t.memory, t.compute) + t.layers + t.all_reduce + t.all_to_all + t.experts_io;
    // A decode step past SGLang's CUDA-graph batch waits for its eager launches.
    if (pre.prompts == 0) t.time = std::max(t.time, sglang_eager_decode(c, s, decodes, p));
    return t;
}

/// The step over every stage: times summed (a token passes each), bytes and FLOPs of stage 0.
[[nodiscard]] constexpr StepTerms step(const DecodeCosts& c, std::uint64_t decodes,
                                       std::uint64_t context, const PrefillPart& pre,
                                       const EstimateParams& p) {
    StepTerms sum = stage_step(c, 0, decodes, context, pre, p);
    for (std::uint32_t s = 1; s < c.layout.pp(); ++s) {
        const StepTerms t = stage_step(c, s, decodes, context, pre, p);
        sum.memory += t.memory;
        sum.compute += t.compute;
        sum.layers += t.layers;
        sum.all_reduce += t.all_reduce;
        sum.all_to_all += t.all_to_all;
        sum.experts_io += t.experts_io;
        sum.time += t.time;
    }
    return sum;
}

/// The mean full steps a request of a wave of `n` decodes in, its L decode steps beside the P full
/// steps of the wave's prompts: the k-th prompt (k = 1..n, arrival order) has its first token at
/// k P / n, leaving P (n - k) / n full steps, so the mean of min(L, P j / n) over j = 0..n-1. The
/// j with P j / n <= L, 0..m, sum to P m (m + 1) / (2 n); the others give L each.
[[nodiscard]] constexpr double wave_overlap(double n, double P, double L) noexcept {
    if (!(n >= 1.0) || !(P > 0.0) || !(L > 0.0)) return 0.0;
    const double m = std::min(n - 1.0, std::floor(L * n / P));
    return (P * m * (m + 1.0) / (2.0 * n) + (n - 1.0 - m) * L) / n;
}

[[nodiscard]] constexpr std::uint64_t ceil_div_u(std::uint64_t a, std::uint64_t b) noexcept {
    return a / b + (a % b != 0 ? 1 : 0);
}

}  // namespace detail

namespace detail {

/// Output tokens per second no serving of `l` on `r` exceeds: decode steps of C sequences at the
/// bound's step time, and every request's prompt prefilled at peak FLOP/s (the dp ranks each
/// prefilling their own; pipeline stages at once, so the slowest stage's compute).
[[nodiscard]] constexpr double throughput_bound(const Replica& r, const Load& l,
                                                const RooflineOptions& o) {
    const double decode = decode_bound(r, l.concurrency, l.prompt_tokens, o).tokens_per_s;
    const std::uint64_t dp = r.layout().dp();
    const PrefillBound pb = prefill_bound(r, l.prompt_tokens, dp, o);
    Seconds slowest{};
    for (const StageStep& st : pb.stage_steps()) slowest = std::max(slowest, st.compute_time);
    if (!(slowest > Seconds{})) return decode;
    const double prefill = static_cast<double>(dp * l.output_tokens) / slowest.in(seconds);
    return std::min(decode, prefill);
}

/// SGLang's prefill passes per decode step when its running requests bring `pre` prompt tokens a
/// decode step, at random times: the scheduler checks its queue after every forward and runs one
/// pass of every prompt waiting (python/sglang/srt/managers/scheduler.py get_new_batch_prefill;
/// schedule_policy.py PrefillAdder takes waiting requests FCFS while chunked_prefill_size lasts),
/// so a pass carries what arrived during the forward before it, and a long pass gathers more.
/// With arrivals at rate r (chunks of `chunk` tokens per second), a decode step of `decode` is
/// followed by a pass with probability a = 1 - e^(-r decode), and each pass by another with
/// b = 1 - e^(-r pass): q = a / (1 - b) passes per decode step, r = (pre / chunk) /
/// (decode + q pass), a pass of pre / q tokens (between a chunk and `most`) lasting at least the
/// eager forward's host time `host`, its GPU time between `at_chunk` and `at_most` (linear in
/// tokens: whole prompts). The fixed point, by bisection on q within [pre / most, pre / chunk];
/// at the upper end every chunk has a pass of its own.
[[nodiscard]] constexpr double sglang_passes_per_step(double pre, double chunk, double most,
                                                      Seconds decode, Seconds host,
                                                      Seconds at_chunk, Seconds at_most) {
    if (!(pre > 0.0) || !(chunk > 0.0)) return 0.0;
    const double lo = pre / most, hi = pre / chunk;
    const double td = decode.in(seconds), t1 = at_chunk.in(seconds), t2 = at_most.in(seconds);
    const double per_token = most > chunk ? (t2 - t1) / (most - chunk) : 0.0;
    const auto excess = [&](double q) {
        const double tokens = std::clamp(pre / q, chunk, most);
        const double tp = std::max(t1 + per_token * (tokens - chunk), host.in(seconds));
        const double rate = hi / (td + q * tp);
        const double a = 1.0 - std::exp(-rate * td);
        const double stay = std::exp(-rate * tp);  // 1 - b
        if (!(stay > 1e-12)) return 1.0;
        return a / stay - q;
    };
    if (!(hi > lo)) return hi;
    if (excess(hi) >= 0.0) return hi;
    if (excess(lo) <= 0.0) return lo;
    double a = lo, b = hi;
    for (int i = 0; i < 40; ++i) {
        const double mid = 0.5 * (a + b);
        (excess(mid) > 0.0 ? a : b) = mid;
    }
    return 0.5 * (a + b);
}

/// The wait of a prompt for the prompts ahead of it in a closed loop of `running` requests, each
/// holding the prefill for `service` and spending `request` once admitted apart from this wait:
/// the Pollaczek-Khinchine wait of constant service, rho S / (2 (1 - rho)), with arrivals from
/// the other running - 1 requests at rho = (running - 1) S / (request + wait), solved for the
/// wait (the fixed point is one: the wait falls as rho falls). When the prefill alone saturates
/// (rho would pass 1) the wait grows until it does not: every prompt waits for the others'.
[[nodiscard]] constexpr Seconds prefill_queue_wait(Seconds service, Seconds request,
                                                   std::uint64_t running) {
    const double S = service.in(seconds), R = request.in(seconds);
    const double others = static_cast<double>(running) - 1.0;
    if (!(S > 0.0) || !(others > 0.0)) return Seconds{};
    const auto excess = [&](double w) {
        const double rho = others * S / (R + w);
        if (rho >= 1.0) return -1.0;  // the queue would grow without end: wait longer
        return w - rho * S / (2.0 * (1.0 - rho));
    };
    double lo = std::max(0.0, others * S - R), hi = lo + 2.0 * others * S + S;
    for (int i = 0; i < 100; ++i) {
        const double mid = 0.5 * (lo + hi);
        (excess(mid) < 0.0 ? lo : hi) = mid;
    }
    return Seconds::in_base(hi);
}

}  // namespace detail

/// The sequences a replica runs at once for `l`: l.max_running if given, else what the engine's own
/// KV pool holds at I + O tokens each, within its sequence cap (engine_report: vLLM's blocks and
/// max_num_seqs, SGLang's token pool and max_running_requests, TensorRT-LLM's blocks and
/// max_batch_size), under the engine's options `eo` (a run's mem_fraction_static,
/// free_gpu_memory_fraction, caps) and, under vLLM, release line `vllm_release` (unset: the
/// newest); never below 1 (`holds_one` says whether the pool holds one at all).
struct RunningCap {
    std::uint64_t sequences = 1;
    bool holds_one = true;
};

[[nodiscard]] constexpr RunningCap running_cap(
    const Replica& r, const Load& l, const EngineOptions& eo = {},
    const std::optional<EngineVersion>& vllm_release = std::nullopt) {
    if (l.max_running) return {*l.max_running, true};
    // A request beyond what the engine's pool holds waits in its queue: vLLM allocates a waiting
    // prompt's blocks only while free ones last (vllm/v1/core/sched/scheduler.py, schedule);
    // SGLang's PrefillAdder admits one only while the pool's remaining tokens cover its prompt and
    // its max_new_tokens (python/sglang/srt/managers/schedule_policy.py, add_one_req);
    // TensorRT-LLM's capacity scheduler (GUARANTEED_NO_EVICT) only while its blocks for the whole
    // sequence are free. Each pool is the engine's own start-up answer. The sampler's buffers are
    // left out, as when the estimate's defaults were fitted (docs/accuracy.md): the fit's
    // measurements do not say which release's sampler ran.
    BudgetOptions o{.reserve = {.max_num_batched_tokens = l.max_num_batched_tokens,
                                .sampler = VllmSampler::plain}};
    EngineOptions opts = eo;
    const Engine engine = engine_of(r.parallel.rules);
    const EngineVersion release = vllm_release_or_newest(vllm_release);
    // The release's pool under vLLM: its gpu_memory_utilization (vllm/config/cache.py), its
    // profile accounting (vllm_release_options), its batch defaults for the GPU
    // (vllm/engine/arg_utils.py, get_batch_defaults) and the weights as it loads them
    // (loaded_stage_weights: gpt-oss's MXFP4 values padded to 64 from v0.14).
    if (const auto d = vllm_release_defaults(release);
        d && vllm_release && engine == Engine::vllm) {
        o.utilization = d->gpu_memory_utilization;
        opts.vllm = vllm_release_options(opts.vllm, release);
        const VllmBatchDefaults then = vllm_batch_defaults(r.gpu, *d);
        if (!o.reserve.max_num_batched_tokens)
            o.reserve.max_num_batched_tokens = then.max_num_batched_tokens;
        if (!opts.vllm.max_num_seqs) opts.vllm.max_num_seqs = then.max_num_seqs;
    }
    const EngineReport rep = engine_report(
        engine, r, detail::add(l.prompt_tokens, l.output_tokens, "tokens"), o, opts, release);
    // The figures are one attention data-parallel rank's: each rank has its own pool and cap.
    const std::uint64_t seqs =
        detail::mul(rep.summary.max_sequences(), r.layout().dp(), "a sequence count");
    return {std::max<std::uint64_t>(seqs, 1), rep.summary.admitted >= 1};
}

[[nodiscard]] constexpr LatencyEstimate estimate_latency(const DecodeCosts& c, const Load& l,
                                                         const EstimateParams& p, RunningCap cap);

namespace detail {

/// What is left of the `in_flight` requests when a run's last request is sent, their output
/// lengths drawn uniformly on [m (1 - spread), m (1 + spread)] (Load::length_spread): the tokens
/// they still produce (`sum`) and the steps until the last of them ends (`longest`).
struct RunDrain {
    double sum = 0.0;
    double longest = 0.0;
};

/// A client that keeps `in_flight` requests going, each slot sending its next request as the
/// last ends, is a renewal process per slot: at a random moment a slot's request has a residual
/// of density (1 - F(r)) / m (F the lengths' distribution, m their mean), mean E[L^2] / (2 m) =
/// m (1 + spread^2 / 3) / 2 for the uniform. The request just sent has its whole length. So
/// sum = (in_flight - 1) m (1 + spread^2 / 3) / 2 + m, and the last ends after
/// longest = the integral over r of 1 - G(r)^(in_flight - 1) F(r), G the residual's
/// distribution (midpoint rule, 4,096 points). At spread 0 longest is m: the slots have drifted
/// apart, so the others end within one length of the last one sent.
[[nodiscard]] constexpr RunDrain drawn_lengths_drain(double mean, double spread,
                                                     std::uint64_t in_flight) {
    RunDrain d;
    if (!(mean > 0.0) || in_flight == 0) return d;
    const double s = std::clamp(spread, 0.0, 1.0);
    const double others = static_cast<double>(in_flight - 1);
    d.sum = others * mean * (1.0 + s * s / 3.0) / 2.0 + mean;
    const double a = mean * (1.0 - s), b = mean * (1.0 + s);
    // F and G of the uniform on [a, b] (a point mass at the mean when the spread is 0).
    const auto F = [&](double r) {
        if (r < a) return 0.0;
        if (r >= b) return 1.0;
        return (r - a) / (b - a);
    };
    const auto G = [&](double r) {
        if (r >= b) return 1.0;
        if (r <= a) return r / mean;
        return (r - (r - a) * (r - a) / (2.0 * (b - a))) / mean;
    };
    const auto power = [](double x, std::uint64_t k) {
        double y = 1.0;
        for (; k > 0; k >>= 1, x *= x)
            if (k & 1) y *= x;
        return y;
    };
    constexpr int points = 4096;
    const double h = b / points;
    for (int i = 0; i < points; ++i) {
        const double r = (i + 0.5) * h;
        d.longest += (1.0 - power(G(r), in_flight - 1) * F(r)) * h;
    }
    return d;
}

/// The end of a run of N requests (Load::requests, N > C) whose lengths are drawn
/// (Load::length_spread), for the steady state `e` of B = e.running requests running. The client
/// sends a freed slot the next request at once (vllm/benchmarks/serve.py: a semaphore of
/// --max-concurrency over the --num-prompts tasks, in order; python/sglang/bench_serving.py
/// likewise), so the slots drift apart and each request ends at its own time: when the last is
/// sent, the B running have drawn_lengths_drain's `sum` tokens left and the run lasts `longest`
/// more steps, each a decode step of those still running (their mean count sum / longest; no
/// prompt is left to send). The steady state would have given those tokens in sum / B decode
/// steps of B: the run takes N x O / tokens/s less those steps, plus the drain's. Every prompt's
/// prefill stays in the steady state's time. TPOT is the token-weighted mean of the steady
/// state's and the drain's steps.
constexpr void drawn_lengths_end_of_run(LatencyEstimate& e, const DecodeCosts& c, const Load& l,
                                        const EstimateParams& p) {
    const double O = static_cast<double>(l.output_tokens);
    const double total = static_cast<double>(*l.requests) * O;
    const std::uint64_t running = std::max<std::uint64_t>(e.running, 1);
    const RunDrain d = drawn_lengths_drain(O, l.length_spread, running);
    if (!(d.longest > 0.0)) return;
    const double left = std::min(d.sum, total);
    const auto draining = static_cast<std::uint64_t>(std::max(1.0, left / d.longest) + 0.5);
    const Seconds full = step(c, running, e.mean_context, {}, p).time;
    const Seconds drain = step(c, draining, e.mean_context, {}, p).time;
    const Seconds time = Seconds::in_base(total / e.tokens_per_s) -
                         full * (left / static_cast<double>(running)) + drain * d.longest;
    if (!(time > Seconds{})) return;
    e.tokens_per_s = total / time.in(seconds);
    e.itl = e.tpot = (e.tpot * (total - left) + drain * left) * (1.0 / total);
}

/// Whether a closed loop's prompts prefill on every attention data-parallel rank at once rather
/// than on one rank at a time. Under attention data parallelism each rank schedules its own
/// requests within its own token budget, and the ranks step together (every MoE layer gathers
/// every rank's tokens; an idle rank runs a dummy batch), so a step lasts as long as its busiest
/// rank. TensorRT-LLM hands new requests to the ranks with the fewest active tokens and requests
/// (tensorrt_llm/_torch/pyexecutor/executor_request_queue.py, _balance_requests_across_ranks),
/// and vLLM's data-parallel front end to the least loaded engine (vllm/v1/engine/core_client.py,
/// DPLBAsyncMPClient): fixed-length clients (Load::fixed_lengths) finish and come back in
/// groups, which those balancers deal out a prompt a rank, so every rank prefills in the same
/// step and a step of prompts comes dp times less often than with one rank taking them all.
/// Drawn lengths arrive one by one, each on one rank, and the step waits for it. SGLang runs its
/// prefill passes apart (its steps already cost a prompt's pass, not a rank's share).
[[nodiscard]] constexpr bool spread_prefill(const Replica& r, const Load& l) noexcept {
    return r.parallel.rules != ParallelRules::sglang && r.layout().dp() > 1 &&
           l.kind == LoadKind::serving && l.fixed_lengths && l.concurrency >= r.layout().dp();
}

/// The end of a run of N requests from C clients (Load::requests, N > C), for the steady state
/// `e` at C. The client keeps C requests in flight until the last is sent, then drains
/// (vllm/benchmarks/serve.py: a semaphore of --max-concurrency over --num-prompts tasks, the
/// duration ends with the last response and output throughput is the output tokens over it;
/// python/sglang/bench_serving.py likewise): floor(N / C) rounds of C, then the N mod C left
/// run alone, at their own rate. The run's throughput is N x O over the rounds' time, and its
/// TPOT the mean over its N requests. With N a multiple of C the steady state is the run's.
constexpr void end_of_run(LatencyEstimate& e, const DecodeCosts& c, const Load& l,
                          const EstimateParams& p, RunningCap cap) {
    if (!l.requests || *l.requests <= l.concurrency || !(e.tokens_per_s > 0.0)) return;
    if (l.length_spread > 0.0) {
        drawn_lengths_end_of_run(e, c, l, p);
        return;
    }
    const std::uint64_t N = *l.requests, left = N % l.concurrency;
    if (left == 0) return;
    Load rest = l;
    rest.concurrency = left;
    rest.requests.reset();
    const LatencyEstimate last = estimate_latency(c, rest, p, cap);
    if (!(last.tokens_per_s > 0.0)) return;
    const double O = static_cast<double>(l.output_tokens);
    const double rounds = static_cast<double>(N - left), alone = static_cast<double>(left);
    const double time = rounds * O / e.tokens_per_s + alone * O / last.tokens_per_s;
    e.tokens_per_s = static_cast<double>(N) * O / time;
    e.itl = e.tpot = (e.itl * rounds + last.itl * alone) * (1.0 / static_cast<double>(N));
}

}  // namespace detail

/// The estimate for `l` on the replica of prepared costs `c`, with the running cap `cap`
/// (running_cap). Throws InvalidInput for parameters or a load out of range.
[[nodiscard]] constexpr LatencyEstimate estimate_latency(const DecodeCosts& c, const Load& l,
                                                         const EstimateParams& p, RunningCap cap) {
    const Replica& r = c.replica;
    detail::check_estimate(r, l, p);
    LatencyEstimate e;
    e.kind = l.kind;
    e.concurrency = l.concurrency;
    e.engine = r.parallel.rules;
    e.token_budget =
        l.max_num_batched_tokens.value_or(default_token_budget(r.gpu, r.parallel.rules));
    const std::uint64_t I = l.prompt_tokens, O = l.output_tokens;
    e.mean_context = I + O / 2;
    RooflineOptions bound_options = c.options;
    bound_options.efficiency.reset();

    if (l.kind == LoadKind::static_batch) {
        // Every prompt is admitted: a static batch holds its own KV.
        const std::uint64_t batch = l.concurrency;
        e.running = e.running_cap = batch;
        e.chunks = detail::ceil_div_u(detail::mul(batch, I, "a token count"), e.token_budget);
        e.chunk = detail::ceil_div_u(batch * I, e.chunks);
        e.prefill_step = detail::step(c, 0, 0, {batch, I, 1.0, e.chunks}, p);
        e.decode_step = detail::step(c, batch, e.mean_context, {}, p);
        e.itl = e.tpot = e.decode_step.time;
        e.ttft = e.ttft_prefill = e.prefill_step.time;
        e.request = e.ttft + e.itl * static_cast<double>(O - 1);
        e.tokens_per_s = static_cast<double>(batch * O) / e.request.in(seconds);
        e.tokens_per_s_per_gpu = e.tokens_per_s / r.gpus();
        e.ttft_bound = prefill_bound(r, I, batch, bound_options).ttft;
        e.itl_bound = decode_bound(r, batch, I, bound_options).tpot;
        e.request_bound = e.ttft_bound + e.itl_bound * static_cast<double>(O - 1);
        e.tokens_per_s_bound = static_cast<double>(batch * O) / e.request_bound.in(seconds);
        return e;
    }

    if (l.kind == LoadKind::serving && l.requests && *l.requests < l.concurrency) {
        // A run of fewer requests than clients: the client's semaphore of C never holds one back
        // (vllm/benchmarks/serve.py, --max-concurrency C above --num-prompts N; sglang's
        // bench_serving likewise), so only N are ever in flight: the run of N clients.
        Load run = l;
        run.concurrency = *l.requests;
        return estimate_latency(c, run, p, cap);
    }
    e.running_cap = cap.sequences;
    e.kv_holds_one = cap.holds_one;
    e.engine = r.parallel.rules;
    e.separate_prefill = e.engine == ParallelRules::sglang;
    e.ttft_overhead = request_overhead(p, e.engine, r.model);
    const std::uint64_t batch = std::min(l.concurrency, cap.sequences);
    e.running = batch;
    e.waiting = l.concurrency - batch;
    // Fixed-length clients of a closed loop on SGLang stay in step: a wave's prompts all prefill
    // before any of them decodes (scheduler.py get_next_batch_to_run runs a prefill batch
    // whenever prompts wait), so the wave decodes in the same steps and finishes in the same step,
    // and its clients send again together, however their requests trickle in: the first ones'
    // pass runs alone, the rest follow before the next decode. Each cycle is a burst's wave.
    const bool in_step =
        e.separate_prefill && l.kind == LoadKind::serving && l.fixed_lengths && l.concurrency > 1;
    if (l.kind == LoadKind::burst || in_step) {
        // N identical requests sent at once move in waves: the engine admits B of them
        // (vllm/v1/core/sched/scheduler.py takes waiting requests while KV blocks last; SGLang's
        // PrefillAdder and TensorRT-LLM's capacity scheduler likewise) and the next wave's start
        // as the first ends. ceil(N / B) waves; the mean wave starts (waves - 1) / 2 waves in.
        const std::uint64_t waves = detail::ceil_div_u(l.concurrency, batch);
        const double n = static_cast<double>(batch), L = static_cast<double>(O - 1);
        const double budget = static_cast<double>(e.token_budget);
        e.chunks = detail::ceil_div_u(detail::mul(batch, I, "a token count"), e.token_budget);
        e.chunk = detail::ceil_div_u(batch * I, e.chunks);
        e.decode_step = detail::step(c, batch, e.mean_context, {}, p);
        e.decodes_per_step = n;
        Seconds wave{};
        double d_burst = 0.0;  // decodes beside the prompts in a full step (vLLM, TensorRT-LLM)
        if (e.separate_prefill) {
            // SGLang runs a prefill batch whenever prompts wait (scheduler.py
            // get_next_batch_to_run): the wave's prompts go first, in passes of the chunk
            // budget, then its B sequences decode together and finish together.
            e.prefill_step = detail::step(c, 0, 0, {batch, I, 1.0, e.chunks}, p);
            e.itl = e.tpot = e.decode_step.time;
            wave = e.prefill_step.time + e.itl * L;
            // A prompt's first token ends its pass: (passes + 1) / (2 passes) of the prefill.
            const double passes = static_cast<double>(e.chunks);
            e.ttft_prefill = e.prefill_step.time * ((passes + 1.0) / (2.0 * passes));
            if (in_step) {
                // A closed loop of B in step: the rest of the wave's passes after its own, on
                // average (passes - 1) / (2 passes) of the prefill, come between its first token
                // and its second (TPOT spreads them over its O - 1), and C - B clients wait
                // their turn (Little's law, as below).
                if (L > 0.0)
                    e.itl = e.tpot = e.decode_step.time + e.prefill_step.time *
                                                              ((passes - 1.0) / (2.0 * passes)) *
                                                              (1.0 / L);
                e.request = wave;
                const double rate = n / wave.in(seconds);
                if (e.waiting > 0)
                    e.ttft_queue = std::max(
                        Seconds{}, Seconds::in_base(static_cast<double>(l.concurrency) / rate) -
                                       wave - e.ttft_overhead);
                e.ttft = e.ttft_overhead + e.ttft_queue + e.ttft_prefill;
                e.tokens_per_s = rate * static_cast<double>(O);
                detail::end_of_run(e, c, l, p, cap);
                e.tokens_per_s_per_gpu = e.tokens_per_s / r.gpus();
                e.itl_bound = decode_bound(r, batch, I, bound_options).tpot;
                e.ttft_bound = prefill_bound(r, I, 1, bound_options).ttft;
                e.tokens_per_s_bound = detail::throughput_bound(r, l, bound_options);
                return e;
            }
        } else {
            // vLLM (scheduler.py schedule: running requests first, then waiting prompts in what is
            // left of max_num_batched_tokens) and TensorRT-LLM's in-flight batching fill every
            // step to the budget while prompts wait: the wave's n I prompt tokens take P full
            // steps, and a request decodes in those full steps from its first token on. The
            // prompts go in arrival order (the waiting queue is FCFS), so the k-th of the wave's
            // n has its first token once k / n of the prompt tokens are in, at u = k P / n, and
            // decodes over [u, u + L]: min(L, P - u) of its L steps are full (detail::wave_overlap;
            // L - L^2 / (2P) or P / 2 as n grows; none for a wave of one, whose prompt is its
            // last).
            double P = n * static_cast<double>(I) / budget, ov = 0.0, d = 0.0;
            for (int i = 0; i < 3; ++i) {
                ov = detail::wave_overlap(n, P, L);
                d = std::min(n * ov / std::max(P, 1.0), budget / 2.0);
                P = std::max(1.0, n * static_cast<double>(I) / (budget - d));
            }
            d_burst = d;
            const double prefill_tokens = std::min(budget - d, n * static_cast<double>(I));
            const auto dd = static_cast<std::uint64_t>(d + 0.5);
            e.mixed_step = detail::step(c, dd, e.mean_context,
                                        {1, I, prefill_tokens / static_cast<double>(I), 1}, p);
            e.prefill_step = e.mixed_step;
            e.mixed_share = P;
            e.prefill_per_step = prefill_tokens;
            // After the last prompt, the last requests' L decode steps; on average those still
            // decoding are the share of decode steps left after the full ones.
            const double tail_decodes = L > 0.0 ? std::max(1.0, n * (L - ov) / L) : 1.0;
            const StepTerms tail = detail::step(c, static_cast<std::uint64_t>(tail_decodes + 0.5),
                                                e.mean_context, {}, p);
            e.decode_step = tail;
            const Seconds full = e.mixed_step.time;
            e.itl = e.tpot = L > 0.0 ? (full * ov + tail.time * (L - ov)) * (1.0 / L) : tail.time;
            wave = full * P + tail.time * L;
            // Its first token ends the full step that finishes its prompt: (P + 1) / 2 of them.
            e.ttft_prefill = full * ((P + 1.0) / 2.0);
            e.prefill_limited = true;
        }
        e.request = wave;
        // The last wave holds what the others leave, N - (waves - 1) B requests: its prompts take
        // that many prefill steps and its decodes run at that batch, so the run is waves - 1 full
        // waves and that one (a burst of its own, as the engine sees it once the rest are done).
        // Each request's TTFT waits for the waves before its own; TTFT and TPOT are the means
        // over the N requests.
        const std::uint64_t last_n = l.concurrency - (waves - 1) * batch;
        Seconds last_wave = wave, last_prefill = e.ttft_prefill, last_tpot = e.tpot;
        if (last_n < batch) {
            Load rest = l;
            rest.kind = LoadKind::burst;
            rest.concurrency = last_n;
            rest.requests.reset();
            const LatencyEstimate last = estimate_latency(c, rest, p, cap);
            last_wave = last.request;
            last_prefill = last.ttft_prefill;
            last_tpot = last.tpot;
        }
        const double N = static_cast<double>(l.concurrency), earlier = n * (waves - 1);
        const double tail_share = static_cast<double>(last_n) / N;
        const double full_waves = static_cast<double>(waves - 1);
        e.ttft_queue = wave * ((n * full_waves * (full_waves - 1.0) / 2.0 +
                                static_cast<double>(last_n) * full_waves) /
                               N);
        const Seconds wave_tpot = e.tpot;
        e.ttft_prefill = e.ttft_prefill * (earlier / N) + last_prefill * tail_share;
        e.itl = e.tpot = e.tpot * (earlier / N) + last_tpot * tail_share;
        e.ttft = e.ttft_overhead + e.ttft_queue + e.ttft_prefill;
        e.tokens_per_s =
            static_cast<double>(l.concurrency * O) / (wave * full_waves + last_wave).in(seconds);
        if (!e.separate_prefill && waves > 1 && L > 0.0) {
            // Past the first wave the waves blur: vLLM's schedule admits a waiting prompt as soon
            // as a finished request frees its KV blocks (scheduler.py: the waiting queue is
            // drained every step while blocks last; TensorRT-LLM's capacity scheduler likewise),
            // so B requests stay admitted and nearly all of them decode, each beside the
            // prompts of those that follow it. By Little's law a request then stays B / rate
            // admitted (rate = tokens/s / O, what the replica serves), of which its own prompt
            // takes the full steps of its chunks and the rest is its O - 1 tokens. The mean over
            // requests: the first wave's as above, the other waves' at that steady state.
            const double own = std::ceil(static_cast<double>(I) / std::max(budget - d_burst, 1.0));
            const Seconds life = Seconds::in_base(n * static_cast<double>(O) / e.tokens_per_s);
            const Seconds steady =
                std::max(wave_tpot,
                         std::min(e.mixed_step.time, (life - e.mixed_step.time * own) * (1.0 / L)));
            const double first = n / N;
            e.itl = e.tpot = wave_tpot * first + steady * (1.0 - first);
        }
        e.tokens_per_s_per_gpu = e.tokens_per_s / r.gpus();
        e.itl_bound = decode_bound(r, batch, I, bound_options).tpot;
        e.ttft_bound = prefill_bound(r, I, 1, bound_options).ttft;
        e.tokens_per_s_bound = detail::throughput_bound(r, l, bound_options);
        return e;
    }
    const double Bd = static_cast<double>(batch), Id = static_cast<double>(I);
    const double decode_steps = static_cast<double>(O - 1);  // the first token ends the prefill
    const double budget = static_cast<double>(e.token_budget);
    // A chunk: what the budget leaves beside the decodes (vLLM, TensorRT-LLM), a whole pass
    // (SGLang).
    // Fixed-length clients under attention data parallelism prefill on every rank at once
    // (detail::spread_prefill): each rank has its own budget beside its own decodes, and a step's
    // prompts are one rank's share of the whole.
    const std::uint64_t dp = c.layout.dp();
    const bool spread = detail::spread_prefill(r, l);
    const double ranks = spread ? static_cast<double>(dp) : 1.0;
    const std::uint64_t own_batch = spread ? detail::ceil_div_u(batch, dp) : batch;
    const std::uint64_t left = e.separate_prefill           ? e.token_budget
                               : e.token_budget > own_batch ? e.token_budget - own_batch
                                                            : 1;
    e.chunk = std::min(I, left);
    e.chunks = detail::ceil_div_u(I, e.chunk);
    const double chunk = static_cast<double>(e.chunk), chunks = static_cast<double>(e.chunks);
    // A step of `d` decodes and `tokens` prefill tokens (of prompts of I tokens) on a rank: when
    // spread, every rank's prompts carry as many, and the experts see them all.
    const auto at = [&](double d, double tokens) {
        const auto dd = static_cast<std::uint64_t>(std::max(0.0, d) + 0.5);
        if (!(tokens > 0.0)) return detail::step(c, dd, e.mean_context, {}, p);
        if (spread) return detail::step(c, dd, e.mean_context, {dp, I, tokens / Id, 1, true}, p);
        return detail::step(c, dd, e.mean_context, {1, I, tokens / Id, 1}, p);
    };
    // A request spends `chunks` steps prefilling and O - 1 decoding. While it decodes, each of
    // the other B - 1 decodes in that share of the steps and brings its prompt once a lifetime.
    const double life = chunks + decode_steps;
    double d = 1.0 + (Bd - 1.0) * decode_steps / life;
    double pre = (Bd - 1.0) * Id / life;
    Seconds mean_sq{};  // E[t^2] over forwards, for the residual of the one in flight
    Seconds forward{};  // E[t] over forwards
    Seconds prefill_wait{};
    if (!e.separate_prefill) {
        // vllm/v1/core/sched/scheduler.py (schedule): running requests first, one token each, then
        // waiting prompts FCFS in what is left of max_num_batched_tokens; TensorRT-LLM's
        // MicroBatchScheduler packs context and generation requests the same way within
        // max_num_tokens (docs: torch/scheduler.md). When decodes and prompts want more than the
        // budget, every step is full and prompts wait their turn: the rate is the budget's.
        // Spread over the dp ranks, each rank's budget takes its share of the decodes and prompts.
        if (Bd * (Id + decode_steps) / life > budget * ranks) {
            e.prefill_limited = true;
            d = budget * ranks * decode_steps / (Id + decode_steps);
            pre = budget * ranks - d;
        }
        // Prompts arrive in chunks: a step carries n of them on average (a rank's), so it is the
        // mix of steps with floor(n) and ceil(n) chunks (at most the budget beside the decodes).
        // The budget caps the fuller step below ceil(n) chunks, so the mix that carries `pre`
        // tokens a step on average is weighted by tokens, not by chunks.
        const double pre_rank = pre / ranks;
        const double n = pre_rank / chunk;
        const double lo = std::floor(n);
        const double room = std::max(budget - d / ranks, chunk);
        const double lo_tokens = std::min(lo * chunk, room);
        const double hi_tokens = std::min((lo + 1.0) * chunk, room);
        const double frac =
            hi_tokens > lo_tokens
                ? std::clamp((pre_rank - lo_tokens) / (hi_tokens - lo_tokens), 0.0, 1.0)
                : 0.0;
        const StepTerms a = at(d, lo_tokens);
        const StepTerms b = at(d, hi_tokens);
        e.mixed_share = n;
        e.decode_step = at(d, 0.0);
        e.mixed_step = b;
        e.itl = a.time * (1.0 - frac) + b.time * frac;
        forward = e.itl;
        mean_sq = Seconds::in_base(a.time.in(seconds)*a.time.in(seconds) * (1.0 - frac) +
                                   b.time.in(seconds)*b.time.in(seconds)*frac);
        // Its own chunk rides with the others' decodes and whatever other prefill the step holds.
        e.prefill_step = at(d - 1.0, std::min(std::max(chunk, pre_rank), room));
        // Its last chunk is what the full ones leave, I - (k - 1) x chunk tokens: the step that
        // takes it holds that beside the same decodes and other prefill (scheduler.py schedule
        // gives a request what is left of its prompt, no more), so a prompt a few tokens past
        // the chunk pays for a second step only what that step carries.
        const double last = Id - (chunks - 1.0) * chunk;
        const Seconds last_step = chunks > 1.0
                                      ? at(d - 1.0, std::min(std::max(last, pre_rank), room)).time
                                      : e.prefill_step.time;
        e.ttft_prefill = e.prefill_step.time * (chunks - 1.0) + last_step;
        if (e.prefill_limited) {
            // B requests share the budget: each spends B (I + O - 1) / budget steps admitted, of
            // which O - 1 decode; the rest it waits for, or spends in, prefill.
            const double steps = Bd * (Id + decode_steps) / (budget * ranks) - decode_steps;
            prefill_wait = std::max(Seconds{}, e.itl * steps - e.ttft_prefill);
        }
    } else {
        // python/sglang/srt/managers/scheduler.py (get_next_batch_to_run): a waiting prompt is
        // run as a prefill batch of its own (schedule_policy.py PrefillAdder, up to
        // chunked_prefill_size tokens a chunk) before the next decode step; decodes wait for it.
        // Per decode step the running requests need d I / (O - 1) prompt tokens, run in passes
        // of at least one chunk and at most the budget.
        const double most = std::max(chunk, budget);
        e.decode_step = at(d, 0.0);
        const Seconds host = request_overhead(p, e.engine, r.model);
        const double passes = detail::sglang_passes_per_step(
            pre, chunk, most, e.decode_step.time, host, at(0.0, chunk).time, at(0.0, most).time);
        const double pass = passes > 0.0 ? std::clamp(pre / passes, chunk, most) : chunk;
        e.mixed_step = at(0.0, pass);
        e.prefill_step = e.mixed_step;
        // An extend batch runs eagerly (eager_prefill): the pass holds the GPU at least as long
        // as its launches, the host time of an eager forward, whatever its tokens. A request's
        // own pass is its GPU time beside that host time, which its TTFT counts as overhead.
        e.mixed_step.time = std::max(e.mixed_step.time, host);
        e.mixed_share = passes;
        e.itl = e.decode_step.time + e.mixed_step.time * passes;
        const double td = e.decode_step.time.in(seconds), tp = e.mixed_step.time.in(seconds);
        forward = Seconds::in_base((td + passes * tp) / (1.0 + passes));
        mean_sq = Seconds::in_base((td * td + passes * tp * tp) / (1.0 + passes));
        e.ttft_prefill = e.prefill_step.time * chunks;
        if (passes > 1.0) e.prefill_limited = true;
    }
    e.decodes_per_step = d;
    e.prefill_per_step = pre;
    e.tpot = e.itl;
    // Arriving while others run, it waits out the forward in flight: E[t^2] / (2 E[t]), the
    // residual of forwards of unequal length. Alone, the engine is idle.
    if (l.concurrency > 1 && forward > Seconds{}) {
        e.ttft_in_flight = Seconds::in_base(mean_sq.in(seconds) / (2.0 * forward.in(seconds)));
        // SGLang and TensorRT-LLM schedule the next batch while the GPU runs the current one
        // (python/sglang/srt/managers/scheduler.py event_loop_overlap, on unless
        // --disable-overlap-schedule; tensorrt_llm/_torch/pyexecutor/py_executor.py
        // _executor_loop_overlap, on unless disable_overlap_scheduler): a request that arrives
        // mid-forward misses the batch already scheduled and waits for it too.
        if (e.engine != ParallelRules::vllm) e.ttft_in_flight += forward;
    }
    const Seconds own_prefill = e.ttft_prefill;  // its own chunks' steps, no wait
    e.ttft_prefill += prefill_wait;
    e.request = e.ttft_in_flight + e.ttft_prefill + e.itl * decode_steps;
    if (!e.prefill_limited && batch > 1) {
        // Prompts queue for prefill, taken in arrival order (vllm/v1/core/sched/scheduler.py
        // pops its waiting queue FCFS; SGLang's schedule_policy defaults to "fcfs",
        // python/sglang/srt/server_args.py; TensorRT-LLM's capacity scheduler takes requests in
        // order): one that arrives while others prefill waits for them. The prefill holds for S per
        // prompt: SGLang's passes run alone, so S is the prompt's tokens at a pass's time per
        // token; vLLM and TensorRT-LLM fill what the budget leaves beside the decodes, so S is the
        // prompt's share of that room times a full step (it runs with the decodes whatever the
        // prompts).
        const double room = std::max(budget - d / ranks, chunk);
        const StepTerms full = e.separate_prefill ? e.mixed_step : at(d, room);
        const double per_step =
            e.separate_prefill ? static_cast<double>(e.mixed_step.prefill_tokens) : room;
        e.prefill_service = per_step > 0.0 ? full.time * (Id / per_step) : Seconds{};
        e.ttft_prefill_wait =
            detail::prefill_queue_wait(e.prefill_service, e.request, spread ? own_batch : batch);
        e.ttft_prefill += e.ttft_prefill_wait;
        e.request = e.ttft_in_flight + e.ttft_prefill + e.itl * decode_steps;
        // Fixed-length clients that the budget cannot take in one step stay bunched: a cycle's
        // prompts wait FCFS for the budget (vllm/v1/core/sched/scheduler.py schedule fills what
        // the running decodes leave of max_num_batched_tokens; TensorRT-LLM's
        // MicroBatchScheduler within max_num_tokens), so they get their first tokens in the same
        // few steps, decode the same O - 1 steps and come back in the same groups. Each of its
        // chunks then rides in a full step, not beside one prompt arriving at random. A cycle
        // whose B prompts fit the whole budget is one group, prefilling while none of its
        // requests decode: it takes one step, nothing queues to hold it together, and the
        // clients' own spread leaves the prompts arriving as at random.
        if (!e.separate_prefill && l.fixed_lengths && Bd * Id > budget * ranks) {
            const StepTerms full_step = at(d - 1.0, room);
            e.ttft_prefill_wait = full_step.time * chunks - own_prefill;
            e.ttft_prefill = full_step.time * chunks;
            e.request = e.ttft_in_flight + e.ttft_prefill + e.itl * decode_steps;
        }
    }
    // A closed loop of C clients on B slots: B requests per request time; the rest wait
    // (Little's law), the fixed overhead overlapping other requests' steps.
    const double rate = Bd / e.request.in(seconds);
    if (e.waiting > 0) {
        const Seconds cycle = Seconds::in_base(static_cast<double>(l.concurrency) / rate);
        e.ttft_queue = std::max(Seconds{}, cycle - e.request - e.ttft_overhead);
    }
    e.ttft = e.ttft_overhead + e.ttft_queue + e.ttft_in_flight + e.ttft_prefill;
    e.tokens_per_s = rate * static_cast<double>(O);
    if (l.requests && l.concurrency > 1) {
        // The client starts C requests at once (vllm/benchmarks/serve.py: at --request-rate inf
        // every request is sent without delay and a semaphore of --max-concurrency admits the
        // first C; python/sglang/bench_serving.py likewise), so they queue for prefill together
        // as a burst's wave does; a freed client sends its next at once, so the rest run at the
        // steady state. TTFT is the mean over the run's N requests.
        Load first = l;
        first.kind = LoadKind::burst;
        first.requests.reset();
        const LatencyEstimate burst = estimate_latency(c, first, p, cap);
        const double share = static_cast<double>(std::min(l.concurrency, *l.requests)) /
                             static_cast<double>(*l.requests);
        e.ttft_first_wave = std::max(Seconds{}, burst.ttft - e.ttft) * share;
        e.ttft += e.ttft_first_wave;
        if (*l.requests == l.concurrency) {
            // As many requests as clients: all are sent at once and none follows, so no client
            // ever sends a second and the closed loop's steady state never forms. The run is the
            // burst (its waves when the pool holds fewer than N), its TPOT and throughput the
            // burst's, as the table's runs at --request-rate inf without a lower
            // --max-concurrency are (LoadKind::burst); no request is left to end the run alone
            // (end_of_run).
            e.itl = e.tpot = burst.tpot;
            e.tokens_per_s = burst.tokens_per_s;
        }
    }
    detail::end_of_run(e, c, l, p, cap);
    e.tokens_per_s_per_gpu = e.tokens_per_s / r.gpus();
    e.itl_bound = decode_bound(r, batch, I, bound_options).tpot;
    e.ttft_bound = prefill_bound(r, I, 1, bound_options).ttft;
    e.tokens_per_s_bound = detail::throughput_bound(r, l, bound_options);
    return e;
}

/// The estimate for `l` on `r` with parameters `p` (default_params(r.gpu) gives the fitted
/// ones); `o.compute` is the type the matmuls run in (unset: matmul_compute), `o.vllm_release`
/// the vLLM release whose pool caps the running requests (running_cap). Throws InvalidInput
/// as decode_bound does, or for parameters or a load out of range.
[[nodiscard]] constexpr LatencyEstimate estimate_latency(const Replica& r, const Load& l,
                                                         const EstimateParams& p,
                                                         const RooflineOptions& o = {}) {
    detail::check_estimate(r, l, p);
    RooflineOptions bound_options = o;
    bound_options.efficiency.reset();
    const DecodeCosts c = decode_costs(r, bound_options);
    const RunningCap cap =
        l.kind != LoadKind::static_batch ? running_cap(r, l, {}, o.vllm_release) : RunningCap{};
    return estimate_latency(c, l, p, cap);
}

}  // namespace kvplan

#pragma once

// The flags subcommands share, added per subcommand by group. A flag becomes its value as CLI11
// parses it (a token count, a size, an engine...), through the converters of parse.hpp, which fail
// with one line naming the flag: the options hold typed values, not text parsed later.

#include <cstdint>
#include <kvplan/dtype.hpp>
#include <kvplan/engine/kind.hpp>
#include <kvplan/engine/release.hpp>
#include <kvplan/fleet.hpp>
#include <kvplan/plan/speculation.hpp>
#include <kvplan/units.hpp>
#include <kvplan/weight_format.hpp>
#include <optional>
#include <string>
#include <vector>

#include "parse.hpp"
#include "report.hpp"

namespace CLI {
class App;
}

namespace kvplan::cli {

/// A model given by its sizes on the command line, as web KV calculators take them (no file).
struct InlineModel {
    std::optional<std::uint32_t> layers, heads, kv_heads, head_dim, experts, experts_per_token;
    std::optional<std::uint64_t> hidden_size, vocab, intermediate_size, expert_intermediate_size,
        window, max_position_embeddings;

    /// Whether any of the flags was given.
    [[nodiscard]] bool given() const {
        return layers || heads || kv_heads || head_dim || experts || experts_per_token ||
               hidden_size || vocab || intermediate_size || expert_intermediate_size || window ||
               max_position_embeddings;
    }
};

/// --prompt-tokens or --output-tokens as a length distribution (fleet), with its text for the
/// report.
struct LengthQuantiles {
    std::vector<QuantilePoint> points;
    std::string text;
};

struct CommonOptions {
    std::string model;         ///< a bundled id, or a path to a config.json or a folder holding one
    std::string model_type;    ///< import the config as this transformers model_type
    InlineModel inline_model;  ///< --layers, --hidden-size ...: a model with no file
    std::string gpu;           ///< a bundled id or alias, or a path to a spec JSON
    std::optional<std::uint32_t> gpus;  ///< GPUs in the replica; default tp x pp
    std::optional<std::uint32_t> tp;    ///< default 1
    std::optional<std::uint32_t> pp;    ///< default 1
    std::optional<std::uint32_t> dp;    ///< attention data-parallel ranks; default 1
    std::optional<std::uint32_t> ep;    ///< GPUs the routed experts spread over; default 1
    std::optional<std::uint32_t> dcp;   ///< decode context parallelism (vLLM); default 1
    std::optional<std::uint32_t> redundant_experts;  ///< physical experts beyond the routed ones
    bool enable_expert_parallel = false;             ///< vLLM's switch: ep = dp x tp
    /// --kv-dtype: one format, or a list to search (opt_dtype_lists).
    std::vector<KvDtype> kv_dtype{KvDtype::bf16};
    /// --kv-dtype was given; else each engine's default for the checkpoint applies
    /// (engine_default_kv_dtype).
    bool kv_dtype_given = false;
    /// --weight-dtype: one format, or a list to search (opt_dtype_lists); nullopt ("checkpoint")
    /// is the model's own; empty (not given): the model's own.
    std::vector<std::optional<WeightFormat>> weight_dtype;
    std::optional<WeightFormat> expert_dtype;  ///< routed experts' format, if not --weight-dtype's
    /// Bytes of a Mamba / linear-attention conv state value; 0: auto (the importer's default).
    std::uint32_t mamba_cache_bytes = 0;
    std::uint32_t mamba_ssm_cache_bytes = 0;   ///< their recurrent (SSM) state values; 0: auto
    std::optional<std::uint64_t> context;      ///< tokens per sequence
    std::optional<std::uint64_t> concurrency;  ///< sequences at once
    std::optional<std::uint32_t> block_size;
    std::optional<double> gpu_memory_utilization;  ///< a fraction in (0, 1]
    std::optional<EngineVersion> engine_version;   ///< vLLM's release line whose defaults apply
    std::optional<Bytes> kv_memory;                ///< replaces the computed KV budget per GPU
    std::optional<Engine> engine;
    std::optional<std::uint64_t> max_num_seqs;            ///< the engine's cap on sequences
    std::optional<std::uint64_t> max_num_batched_tokens;  ///< tokens of one step
    std::optional<std::uint64_t> num_gpu_blocks_override;
    std::optional<std::uint32_t> max_loras;      ///< LoRA adapter slots on each GPU
    std::optional<std::uint32_t> max_lora_rank;  ///< their rank
    bool fully_sharded_loras = false;
    std::optional<std::uint32_t> max_cpu_loras;       ///< adapters cached in host memory
    std::optional<std::uint8_t> lora_target_modules;  ///< SGLang's, as LoraTarget bits
    std::optional<MmLimit> limit_mm_per_prompt;       ///< images per prompt (0: text only)
    bool skip_mm_profiling = false;                   ///< vLLM's --skip-mm-profiling
    bool allow_long_context = false;                  ///< contexts past the model's limit
    bool enforce_eager = false;                       ///< vLLM's --enforce-eager
    std::optional<bool> chunked_local_hybrid;  ///< vLLM's hybrid manager for chunked attention
    std::optional<bool> without_flashinfer;    ///< vLLM's profile sampler without FlashInfer
    std::optional<DraftMethod> speculative_method;
    std::optional<std::uint32_t> num_speculative_tokens;
    std::string draft_model;
    std::optional<std::uint64_t> prompt_tokens;  ///< of a request (the latency estimate's load)
    std::optional<std::uint64_t> output_tokens;  ///< of a request
    /// --prompt-tokens and --output-tokens as distributions (opt_length_dists: fleet).
    std::optional<LengthQuantiles> prompt_dist, output_dist;
    std::optional<double> length_spread;       ///< lengths drawn within +-spread of the split
    std::optional<std::uint64_t> num_prompts;  ///< the run's requests, all clients at once
    bool fixed_lengths = false;                ///< every request exactly the split
    std::string profile;  ///< a calibration profile (kvplan calibrate --write-profile)
    std::optional<std::uint64_t> shared_prefix;  ///< prompt prefix tokens every request shares
    std::optional<double> prefix_hit_rate;       ///< share of each prompt found in the cache
    Format format = Format::text;
    bool explain = false;
};

/// Which groups of flags a subcommand takes.
enum OptionGroup : unsigned {
    opt_model = 1U << 0,   ///< --model
    opt_gpu = 1U << 1,     ///< --gpu
    opt_layout = 1U << 2,  ///< --gpus --tp --pp
    opt_dtypes =
        1U << 3,  ///< --kv-dtype --weight-dtype --mamba-cache-dtype --mamba-ssm-cache-dtype
    opt_workload = 1U << 4,   ///< --context --concurrency
    opt_budget = 1U << 5,     ///< --engine and its knobs: --block-size --gpu-memory-utilization
                              ///< --kv-memory --max-num-seqs --max-num-batched-tokens
                              ///< --num-gpu-blocks-override --allow-long-context
                              ///< --max-loras --max-lora-rank --fully-sharded-loras
                              ///< --max-cpu-loras --lora-target-modules
                              ///< --limit-mm-per-prompt --skip-mm-profiling
                              ///< --chunked-local-hybrid --without-flashinfer
                              ///< --enforce-eager
    opt_output = 1U << 6,     ///< --format --explain
    opt_lengths = 1U << 8,    ///< --prompt-tokens --output-tokens
    opt_profile = 1U << 9,    ///< --profile
    opt_parallel = 1U << 10,  ///< --dp --ep --dcp --redundant-experts --enable-expert-parallel
    opt_prefix = 1U << 11,    ///< --shared-prefix
    /// --prompt-tokens --output-tokens as length distributions (50:1k,95:4k), kept as written
    opt_length_dists = 1U << 12,
    opt_hit_rate = 1U << 13,  ///< --prefix-hit-rate (with a single --prompt-tokens)
    /// --kv-dtype and --weight-dtype as comma lists to search (checkpoint: the model's own)
    opt_dtype_lists = 1U << 14,
    opt_kv_dtype_list = 1U << 15,  ///< --kv-dtype alone as a comma list (disagg)
    /// --length-spread --num-prompts --fixed-lengths: the benchmark run a closed loop's estimate
    /// times
    opt_run = 1U << 16,
};

void add_options(CLI::App& sub, CommonOptions& o, unsigned groups);

}  // namespace kvplan::cli

#pragma once

// The flags subcommands share, added per subcommand by group, and read as strings so that every
// value goes through parse.hpp and fails with one line naming the flag.

#include <string>

namespace CLI {
class App;
}

namespace kvplan::cli {

/// A model given by its sizes on the command line, as web KV calculators take them (no file).
struct InlineModel {
    std::string layers, hidden_size, heads, kv_heads, head_dim, vocab, intermediate_size, experts,
        experts_per_token, expert_intermediate_size, window, max_position_embeddings;

    /// Whether any of the flags was given.
    [[nodiscard]] bool given() const {
        for (const std::string* s : {&layers, &hidden_size, &heads, &kv_heads, &head_dim, &vocab,
                                     &intermediate_size, &experts, &experts_per_token,
                                     &expert_intermediate_size, &window, &max_position_embeddings})
            if (!s->empty()) return true;
        return false;
    }
};

struct CommonOptions {
    std::string model;         ///< a bundled id, or a path to a config.json or a folder holding one
    std::string model_type;    ///< import the config as this transformers model_type
    InlineModel inline_model;  ///< --layers, --hidden-size ...: a model with no file
    std::string gpu;           ///< a bundled id or alias, or a path to a spec JSON
    std::string gpus;          ///< GPUs in the replica; default tp x pp
    std::string tp;            ///< empty: 1
    std::string pp;            ///< empty: 1
    std::string dp;            ///< attention data-parallel ranks; empty: 1
    std::string ep;            ///< GPUs the routed experts spread over; empty: 1
    std::string dcp;           ///< decode context parallelism (vLLM); empty: 1
    std::string redundant_experts;        ///< physical experts beyond the routed ones
    bool enable_expert_parallel = false;  ///< vLLM's switch: ep = dp x tp
    std::string kv_dtype = "bf16";
    std::string weight_dtype;                ///< default: the checkpoint's own format, else bf16
    std::string expert_dtype;                ///< routed experts' format, if not --weight-dtype's
    std::string mamba_cache_dtype = "auto";  ///< Mamba / linear-attention conv state values
    std::string mamba_ssm_cache_dtype = "auto";  ///< their recurrent (SSM) state values
    std::string context;                         ///< tokens per sequence
    std::string concurrency;                     ///< sequences at once
    std::string batch;                           ///< decode batch
    std::string block_size;
    std::string gpu_memory_utilization;
    std::string engine_version;  ///< vLLM's release line whose defaults apply (X.Y)
    std::string kv_memory;       ///< replaces the computed KV budget per GPU
    std::string engine;
    std::string max_num_seqs;            ///< the engine's cap on sequences at once
    std::string max_num_batched_tokens;  ///< tokens of one step
    std::string num_gpu_blocks_override;
    bool allow_long_context = false;  ///< contexts past the model's limit
    std::string speculative_method;
    std::string num_speculative_tokens;
    std::string draft_model;
    std::string prompt_tokens;  ///< prompt tokens of a request (the latency estimate's load)
    std::string output_tokens;  ///< output tokens of a request
    std::string profile;        ///< a calibration profile (kvplan calibrate --write-profile)
    std::string shared_prefix;  ///< prompt prefix tokens every request shares (a system prompt)
    std::string format = "text";
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
    opt_output = 1U << 6,     ///< --format --explain
    opt_batch = 1U << 7,      ///< --batch
    opt_lengths = 1U << 8,    ///< --prompt-tokens --output-tokens
    opt_profile = 1U << 9,    ///< --profile
    opt_parallel = 1U << 10,  ///< --dp --ep --dcp --redundant-experts --enable-expert-parallel
    opt_prefix = 1U << 11,    ///< --shared-prefix
};

void add_options(CLI::App& sub, CommonOptions& o, unsigned groups);

}  // namespace kvplan::cli

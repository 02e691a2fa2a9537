#include "options.hpp"

#include <CLI/CLI.hpp>
#include <kvplan/budget/lora.hpp>
#include <kvplan/error.hpp>
#include <kvplan/plan/commands.hpp>

#include "context.hpp"
#include "parse.hpp"
#include "typed_option.hpp"

namespace kvplan::cli {

namespace {

/// kvplan's flag `own` and, as aliases, the engines' own spellings of the same field.
std::string parallel_names(ParallelField f, const char* own) {
    std::string names = own;
    for (const ParallelFlag& p : engine_parallel_flags)
        if (p.field == f && !p.enables) names += std::string(",") + p.flag;
    return names;
}

/// The option group of `sub` headed `heading`, made on first use. A family of flags in a group
/// of its own is what keeps registering a command cheap: CLI11 checks each new option's names
/// against every option before it in the same group, allocating as it goes, which over a
/// command's 60 flags in one list was half the time of a whole `kvplan fit` call.
CLI::App& in_group(CLI::App& sub, const std::string& heading) {
    const auto named = [&heading](const CLI::App* g) {
        return g->get_name().empty() && g->get_group() == heading;
    };
    for (CLI::App* g : sub.get_subcommands(named)) return *g;
    CLI::App* g = sub.add_option_group(heading);
    g->set_help_flag();  // the command's own --help serves; a group's copy would be one more flag
    g->option_defaults()->group(heading);  // help lists the group's flags under its heading
    return *g;
}

}  // namespace

void add_options(CLI::App& cmd, CommonOptions& o, unsigned groups) {
    if (groups & opt_model) {
        CLI::App& group = in_group(cmd, "Model");
        group.add_option(
            "-m,--model", o.model,
            "A bundled model id (kvplan list models), or a path to a config.json or to "
            "a folder holding one; or give the model's sizes with --layers ...");
        group.add_option(
            "--model-type", o.model_type,
            "Import the config.json as this transformers model_type (for one whose own "
            "kvplan does not know)");
        InlineModel& m = o.inline_model;
        CLI::App& sizes = in_group(cmd, "Model by its sizes (instead of --model)");
        typed(sizes, "--layers", m.layers, parse_count32, "num_hidden_layers");
        typed(sizes, "--hidden-size", m.hidden_size, parse_whole, "hidden_size");
        typed(sizes, "--heads", m.heads, parse_count32, "num_attention_heads");
        typed(sizes, "--kv-heads", m.kv_heads, parse_count32,
              "num_key_value_heads (default: --heads)");
        typed(sizes, "--head-dim", m.head_dim, parse_count32,
              "head_dim (default: hidden size / heads)");
        typed(sizes, "--vocab", m.vocab, parse_whole, "vocab_size");
        typed(sizes, "--intermediate-size", m.intermediate_size, parse_whole,
              "the dense MLP's width");
        typed(sizes, "--experts", m.experts, parse_count32,
              "routed experts per MoE layer (default: dense)");
        typed(sizes, "--experts-per-token", m.experts_per_token, parse_count32,
              "routed experts per token");
        typed(sizes, "--expert-intermediate-size", m.expert_intermediate_size, parse_whole,
              "one expert's MLP width (default: --intermediate-size)");
        typed(sizes, "--window", m.window, parse_whole,
              "a sliding window every layer keeps, in tokens");
        typed(sizes, "--max-position-embeddings", m.max_position_embeddings, parse_tokens,
              "the model's context limit (default: vLLM's 2,048)");
    }
    if (groups & opt_gpu) {
        CLI::App& group = in_group(cmd, "Replica");
        group.add_option(
            "-g,--gpu", o.gpu,
            "A bundled GPU id or alias (kvplan list gpus), or a path to a GPU spec JSON");
    }
    if (groups & opt_layout) {
        CLI::App& group = in_group(cmd, "Replica");
        typed(group, "--gpus", o.gpus, parse_degree, "GPUs in the replica (default: tp x pp)");
        typed(group, parallel_names(ParallelField::tp, "--tp"), o.tp, parse_degree,
              "Tensor-parallel degree (default 1)");
        typed(group, parallel_names(ParallelField::pp, "--pp"), o.pp, parse_degree,
              "Pipeline-parallel stages (default 1)");
    }
    if (groups & opt_parallel) {
        CLI::App& group = in_group(cmd, "Replica");
        typed(group, parallel_names(ParallelField::dp, "--dp"), o.dp, parse_degree,
              "Attention data-parallel ranks, each with its own sequences and cache "
              "(vLLM: dp engines of tp x pp GPUs; SGLang: dp attention groups within tp)");
        typed(group, parallel_names(ParallelField::ep, "--ep"), o.ep, parse_degree,
              "GPUs the routed experts spread over (vLLM: 1 or dp x tp; SGLang: dividing "
              "tp)");
        group.add_flag("--enable-expert-parallel", o.enable_expert_parallel,
                       "vLLM's switch: the routed experts over every dp x tp GPU (--ep dp x tp)");
        typed(group, parallel_names(ParallelField::dcp, "--dcp"), o.dcp, parse_degree,
              "vLLM's decode context parallelism: each sequence's tokens split over dcp "
              "of the tp ranks (dividing tp)");
        typed(group, parallel_names(ParallelField::redundant_experts, "--redundant-experts"),
              o.redundant_experts, parse_redundant_experts,
              "Physical experts beyond the routed ones, spread with them (EPLB)");
    }
    if (groups & opt_dtypes) {
        CLI::App& group = in_group(cmd, "Formats");
        // A list where the subcommand searches or compares formats, else one format.
        const bool kv_list = (groups & (opt_dtype_lists | opt_kv_dtype_list)) != 0;
        typed(
            group, "--kv-dtype", o.kv_dtype,
            [kv_list, &o](std::string_view text, std::string_view flag) {
                o.kv_dtype_given = true;
                return kv_list ? parse_list(text, flag, parse_kv_dtype_flag)
                               : std::vector<KvDtype>{parse_kv_dtype_flag(text, flag)};
            },
            "KV-cache element type: fp32 fp16 bf16 fp8 (= fp8_e4m3) fp8_e5m2 fp8_per_token_head "
            "int8 (= int8_per_token_head) int4 (= int4_per_token_head) nvfp4 (= SGLang's "
            "fp4_e2m1) nvfp4_4over6 mxfp4 (default: the engine's auto, bf16 unless it follows the "
            "KV cache the checkpoint's quantization names)")
            ->default_str("auto");
        const bool weight_list = (groups & opt_dtype_lists) != 0;
        typed(
            group, "--weight-dtype", o.weight_dtype,
            [weight_list](std::string_view text, std::string_view flag) {
                return weight_list ? parse_list(text, flag, parse_weight_dtype_flag)
                                   : std::vector{parse_weight_dtype_flag(text, flag)};
            },
            "Weight format: fp32 bf16 fp16 fp8 int8 int4 mxfp8 mxfp4 nvfp4 (default: the "
            "checkpoint's own, from its quantization_config or torch_dtype)");
        typed(
            group, "--expert-dtype", o.expert_dtype,
            [](std::string_view text, std::string_view flag) {
                const std::optional<WeightFormat> f = parse_weight_dtype_flag(text, flag);
                if (!f) usage_error(flag, "a weight format (the routed experts')", text);
                return *f;
            },
            "The routed experts' format, if not --weight-dtype's (gpt-oss: mxfp4)");
        typed(group, "--mamba-cache-dtype", o.mamba_cache_bytes, parse_mamba_dtype_flag,
              "State of Mamba and linear-attention layers, as vLLM's flag: auto (2 B, a bf16 "
              "model's), bfloat16, float16 or float32")
            ->default_str("auto");
        typed(group, "--mamba-ssm-cache-dtype", o.mamba_ssm_cache_bytes, parse_mamba_dtype_flag,
              "Their recurrent (SSM) state only, as vLLM's flag: auto (as --mamba-cache-dtype), "
              "bfloat16, float16 or float32")
            ->default_str("auto");
    }
    if (groups & opt_workload) {
        CLI::App& group = in_group(cmd, "Load");
        typed(group, "-c,--context", o.context, parse_tokens,
              "Tokens per sequence, as vLLM's --max-model-len reads them: 8192, 8k (8,000), "
              "25.6k, 8K (8,192); default: the model's limit");
        typed(group, "-n,--concurrency", o.concurrency, parse_whole,
              "Sequences held at once, over every replica of --gpus");
    }
    if (groups & opt_budget) {
        CLI::App& group = in_group(cmd, "Engine");
        typed(group, "-e,--engine", o.engine, parse_engine_name,
              "Engine profile: vllm (default), sglang, trtllm, or ideal (every byte but "
              "the weights, exact bytes: an upper bound no engine reaches)");
        typed(group, "--block-size", o.block_size, parse_block_size,
              "Tokens per KV block: vLLM's --block-size, SGLang's --page-size; default: "
              "the engine's");
        typed(group, "--gpu-memory-utilization", o.gpu_memory_utilization, parse_fraction,
              "Fraction of GPU memory the engine may use: vLLM's flag, SGLang's "
              "--mem-fraction-static, TensorRT-LLM's free_gpu_memory_fraction; default: "
              "the engine's");
        typed(group, "--engine-version", o.engine_version, parse_engine_version_flag,
              "The engine's release whose defaults apply: vLLM's (X.Y: its "
              "gpu_memory_utilization, CUDA graph accounting, hybrid KV-cache manager, sampler "
              "and batch defaults per GPU) or SGLang's (X.Y.Z: its default "
              "mem_fraction_static, aiter's all-reduce on ROCm); default: the newest kvplan "
              "knows");
        typed(group, "--kv-memory", o.kv_memory, parse_size,
              "KV memory per GPU, replacing the computed one (an engine's logged "
              "\"Available KV cache memory\"); names its unit (5.38GiB)");
        typed(group, "--max-num-seqs", o.max_num_seqs, parse_whole,
              "Sequences the engine runs at once: vLLM's --max-num-seqs, SGLang's "
              "--max-running-requests; default: the engine's");
        typed(group, "--max-num-batched-tokens", o.max_num_batched_tokens, parse_whole,
              "Tokens of one step (vLLM's flag; its profiled forward); default: vLLM's "
              "for the GPU");
        typed(
            group, "--num-gpu-blocks-override", o.num_gpu_blocks_override,
            [](std::string_view text, std::string_view flag) { return parse_count(text, flag, 2); },
            "vLLM's flag: the block count, whatever the memory");
        const auto lora_count = [](std::string_view text, std::string_view flag) {
            return static_cast<std::uint32_t>(parse_degree(text, flag));
        };
        typed(group, "--max-loras", o.max_loras, lora_count,
              "LoRA adapter slots on each GPU (vLLM's --max-loras, SGLang's "
              "--max-loras-per-batch): their weights are charged beside the model's");
        typed(group, "--max-lora-rank", o.max_lora_rank, lora_count,
              "The adapters' largest rank (default: vLLM's 16); with --max-loras");
        group.add_flag("--fully-sharded-loras", o.fully_sharded_loras,
                       "vLLM's flag: LoRA A of column layers and B of row layers split over "
                       "tp too; with --max-loras");
        typed(group, "--max-cpu-loras", o.max_cpu_loras, lora_count,
              "Adapters cached in host memory (vLLM's --max-cpu-loras, SGLang's "
              "--max-loaded-loras), at least --max-loras: no GPU memory, checked and printed "
              "in the command; with --max-loras");
        typed(
            group, "--lora-target-modules", o.lora_target_modules,
            [](std::string_view text, std::string_view flag) {
                try {
                    return lora_targets(flag, text);  // the library's reading, SGLang's
                } catch (const InvalidInput& e) {
                    throw UsageError(e.what());  // a flag's text: a usage error, exit 2
                }
            },
            "SGLang's flag: the modules adapters target (q_proj,v_proj,... or all); only their "
            "stacks are charged. vLLM wraps every layer; with --max-loras");
        typed(group, "--limit-mm-per-prompt", o.limit_mm_per_prompt, parse_mm_limit,
              "vLLM's flag: images per prompt, N or {\"image\": N} (image=N: v0.8 and v0.9 "
              "only); 0 serves text only. A "
              "model with a vision tower is charged the encoder outputs vLLM's profile run "
              "keeps; default: 999");
        group.add_flag("--skip-mm-profiling", o.skip_mm_profiling,
                       "vLLM's flag: no dummy encoder run, so no encoder outputs are charged");
        group.add_flag("--allow-long-context", o.allow_long_context,
                       "Serve contexts past the model's limit, as VLLM_ALLOW_LONG_MAX_MODEL_LEN=1 "
                       "lets vLLM");
        group.add_flag("--enforce-eager", o.enforce_eager,
                       "vLLM's flag: no torch.compile and no CUDA graphs, so neither their "
                       "memory nor the all-reduce fusion workspace is charged");
        typed(group, "--chunked-local-hybrid", o.chunked_local_hybrid, parse_switch,
              "vLLM's hybrid KV-cache manager for chunked local attention (Llama-4), as "
              "VLLM_ALLOW_CHUNKED_LOCAL_ATTN_WITH_HYBRID_KV_CACHE: 1 keeps only each chunk, 0 "
              "sizes every chunked layer as full attention; default: the release's");
        typed(group, "--without-flashinfer", o.without_flashinfer, parse_switch,
              "vLLM's profile run samples without FlashInfer (1: PyTorch's sort, Triton's "
              "top-k/top-p from v0.17) or with it (0); default: the release's");
        typed(group, "--speculative-method", o.speculative_method, parse_draft_method_flag,
              "Speculative decoding as vLLM's --speculative-config method: ngram, eagle, "
              "eagle3, mtp (the checkpoint's multi-token-prediction layers) or "
              "draft_model; its drafter's layers share the KV cache");
        typed(group, "--num-speculative-tokens", o.num_speculative_tokens, parse_speculative_tokens,
              "Tokens drafted per step (vLLM's num_speculative_tokens)");
        group.add_option("--draft-model", o.draft_model,
                         "The draft model of --speculative-method draft_model: a bundled id or a "
                         "config.json");
    }
    if (groups & (opt_lengths | opt_length_dists)) {
        CLI::App& group = in_group(cmd, "Load");
        const char* prompt_help =
            "Prompt tokens of every request; with --output-tokens, the latency "
            "estimate at the load (ITL, TPOT, TTFT with its queue, tokens/s) is shown "
            "beside the bound, and --context defaults to their sum";
        const char* output_help =
            "Output tokens of every request, the first one included; with "
            "--prompt-tokens";
        if (groups & opt_length_dists) {
            const auto quantiles = [](std::string_view text, std::string_view flag) {
                try {
                    return LengthQuantiles{parse_quantile_points(text, flag), std::string(text)};
                } catch (const InvalidInput& e) {
                    throw UsageError(e.what());  // a flag's text: a usage error, exit 2
                }
            };
            typed(group, "--prompt-tokens", o.prompt_dist, quantiles, prompt_help);
            typed(group, "--output-tokens", o.output_dist, quantiles, output_help);
        } else {
            typed(group, "--prompt-tokens", o.prompt_tokens, parse_tokens, prompt_help);
            typed(group, "--output-tokens", o.output_tokens, parse_tokens, output_help);
        }
    }
    if (groups & opt_run) {
        CLI::App& group = in_group(cmd, "Load");
        typed(group, "--length-spread", o.length_spread, parse_share,
              "Each request's lengths drawn uniformly within +-spread of --prompt-tokens and "
              "--output-tokens, their means (0 to 1): vllm bench serve's --random-range-ratio r "
              "is r, sglang.bench_serving's default 1; with --num-prompts the run ends with its "
              "longest request");
        typed(group, "--num-prompts", o.num_prompts, parse_whole,
              "The run's requests, its --concurrency clients started at once (a benchmark's "
              "--num-prompts at --request-rate inf): the first wave's wait in TTFT, the last "
              "requests' drain in TPOT and tokens/s; default: the steady state");
        group.add_flag("--fixed-lengths", o.fixed_lengths,
                       "Every request exactly --prompt-tokens in and --output-tokens out "
                       "(sglang.bench_serving --random-range-ratio 1, vllm bench serve's default "
                       "range ratio 0, a fixed-length dataset; with --ignore-eos): the clients "
                       "stay in step; refused with a nonzero --length-spread");
    }
    if (groups & opt_prefix) {
        CLI::App& group = in_group(cmd, "Load");
        typed(group, "--shared-prefix,--shared-prefix-tokens", o.shared_prefix, parse_tokens,
              "Prompt tokens every request starts with (a system prompt), held once by "
              "the engine's prefix cache: 2048, 2k, 2K; its full blocks are shared, and "
              "the answer shows the blocks it saves and the sequences it adds");
    }
    if (groups & opt_hit_rate) {
        CLI::App& group = in_group(cmd, "Load");
        typed(group, "--prefix-hit-rate", o.prefix_hit_rate, parse_share,
              "Share of each prompt the prefix cache finds (0 to 1), held once as a shared "
              "prefix of that many of --prompt-tokens; instead of --shared-prefix");
    }
    if (groups & opt_profile) {
        CLI::App& group = in_group(cmd, "Engine");
        group.add_option("--profile", o.profile,
                         "A calibration profile (kvplan calibrate --write-profile): its measured "
                         "reserve replaces the modelled one, its estimate parameters (from a "
                         "benchmark) the GPU family's defaults");
    }
    if (groups & opt_output) {
        CLI::App& group = in_group(cmd, "Output");
        typed(
            group, "-f,--format", o.format,
            [](std::string_view text, std::string_view) { return parse_format(text); },
            "Output: text, md, json or csv")
            ->default_str("text");
        group.add_flag("--explain", o.explain,
                       "Show each figure's formula, its inputs and the source of each spec value");
    }
}

}  // namespace kvplan::cli

#pragma once

// The command line that starts an engine as kvplan sized it: `vllm serve ...`,
// `python -m sglang.launch_server ...` and `trtllm-serve ...` with the parallel layout, the memory
// fraction, the maximum length, the sequence cap, the KV dtype, the weights and the environment
// that evaluate() assumed, one per node when the replica spans nodes, so that what the engine then
// logs is what kvplan predicted. Flag spellings follow the engines' current main:
// vllm/engine/arg_utils.py (EngineArgs.add_cli_args), python/sglang/srt/server_args.py
// (ServerArgs.add_cli_args) and TensorRT-LLM's tensorrt_llm/commands/serve.py (the click options of
// `serve`); tests/data/engine_flags/ lists the engines' flags, and a test parses every command the
// CLI prints against them.
//
// The same GPUs are placed differently by each engine (layout.hpp), so a layout is first stated in
// the other engine's flags (translate_parallel) and evaluated under that engine: each command
// carries its own engine's figures.

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "../dtype.hpp"
#include "../engine/host_cache.hpp"
#include "../engine/kind.hpp"
#include "../engine/kv_dtype_names.hpp"
#include "../engine/load_dtype.hpp"
#include "../engine/release.hpp"
#include "../error.hpp"
#include "../layout.hpp"
#include "../model.hpp"
#include "../units.hpp"
#include "deployment.hpp"
#include "evaluate.hpp"
#include "refusal.hpp"
#include "search.hpp"

namespace kvplan {

/// A command line: environment assignments, the program and its arguments, one per element.
struct ServeCommand {
    Engine engine = Engine::vllm;
    /// A command the node runs first, its words, the line joining it to this one with `&&`:
    /// vLLM's `ray start --head` on the head node of a release that spans nodes through Ray
    /// (vllm_multinode_without_ray, engine/release.hpp); empty otherwise.
    std::vector<std::string> before{};
    std::vector<std::string> env{};   ///< NAME=value, set before the program
    std::vector<std::string> argv{};  ///< the program and its arguments
    /// TensorRT-LLM: the YAML that --extra_llm_api_options names (one flow mapping on a line), for
    /// what trtllm-serve has no flag for; empty when there is none.
    std::string extra_options{};
    /// TensorRT-LLM over several nodes: the one command that an MPI launcher starts on every rank
    /// (through trtllm-llmapi-launch), not one per node; 1 otherwise.
    std::uint32_t launcher_nodes = 1;
    /// The ranks the launcher starts it on: the replica's GPUs (with launcher_nodes > 1), else 0.
    std::uint32_t launcher_ranks = 0;

    /// The line to paste into a POSIX shell: words joined by spaces, a word the shell would split
    /// or expand single-quoted.
    [[nodiscard]] std::string line() const {
        const auto quoted = [](const std::string& w) {
            bool plain = !w.empty();
            for (char c : w)
                plain = plain && ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                                  (c >= '0' && c <= '9') || c == '-' || c == '_' || c == '.' ||
                                  c == '/' || c == ':' || c == '=' || c == ',' || c == '+');
            if (plain) return w;
            std::string q = "'";
            for (char c : w) {
                if (c == '\'')
                    q += "'\\''";  // close, an escaped quote, reopen
                else
                    q += c;
            }
            q += '\'';
            return q;
        };
        std::string out;
        for (const std::string& w : before) {
            out += quoted(w);
            out += ' ';
        }
        if (!before.empty()) out += "&& ";
        for (const std::string& e : env) {
            out += quoted(e);
            out += ' ';
        }
        for (std::size_t i = 0; i < argv.size(); ++i) {
            if (i != 0) out += ' ';
            out += quoted(argv[i]);
        }
        return out;
    }
};

/// Which ParallelConfig field an engine's parallelism flag sets.
enum class ParallelField : std::uint8_t { tp, pp, dp, ep, dcp, redundant_experts };

/// An engine's spelling of a parallelism flag, for a command line that takes the engines' own
/// names beside kvplan's. `enables` marks vLLM's --enable-expert-parallel, a switch: it sets ep to
/// dp x tp. Spellings of the engines' current main (vllm/engine/arg_utils.py; SGLang's
/// python/sglang/srt/arg_groups/fields/parallel.py and server-arguments table).
struct ParallelFlag {
    const char* flag;
    Engine engine;
    ParallelField field;
    bool enables = false;
};

inline constexpr ParallelFlag engine_parallel_flags[] = {
    {"--tensor-parallel-size", Engine::vllm, ParallelField::tp},
    {"--pipeline-parallel-size", Engine::vllm, ParallelField::pp},
    {"--data-parallel-size", Engine::vllm, ParallelField::dp},
    {"--enable-expert-parallel", Engine::vllm, ParallelField::ep, true},
    {"--decode-context-parallel-size", Engine::vllm, ParallelField::dcp},
    {"--tp-size", Engine::sglang, ParallelField::tp},
    {"--pp-size", Engine::sglang, ParallelField::pp},
    {"--dp-size", Engine::sglang, ParallelField::dp},
    {"--ep-size", Engine::sglang, ParallelField::ep},
    {"--expert-parallel-size", Engine::sglang, ParallelField::ep},
    {"--ep-num-redundant-experts", Engine::sglang, ParallelField::redundant_experts},
};

/// What the command line needs that a deployment does not say.
struct CommandOptions {
    /// The model to serve: a Hugging Face id or a local path (vllm serve MODEL, SGLang
    /// --model-path). Empty: the config's name.
    std::string model{};
    /// The first node's address in the commands of a replica that spans nodes (vLLM's
    /// --master-addr and --data-parallel-address, or the Ray head's of an older release; SGLang's
    /// --dist-init-addr): a word to replace before pasting.
    std::string head_address = "HEAD_NODE_IP";
    /// Host DRAM for KV per replica (kvplan fit --host-kv), each engine's host tier
    /// (engine/host_cache.hpp): vLLM's native CPU offloading, --kv-offloading-size in GiB over the
    /// tp x pp ranks of one engine (vllm/config/cache.py, CacheConfig.kv_offloading_size;
    /// VllmConfig._post_init_kv_transfer_config gives each rank its share), so each of dp engines
    /// takes the replica's size / dp; SGLang's hierarchical cache, --hicache-size in whole GB per
    /// rank; TensorRT-LLM's KvCacheConfig.host_cache_size, bytes per rank. nullopt: none.
    std::optional<Bytes> kv_offloading{};
};

namespace detail {

/// `v` in its shortest decimal form (15 significant digits, no trailing zeros): 0.92, 0.857; a
/// fraction printed so is the one kvplan computed with.
[[nodiscard]] inline std::string short_number(double v) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.15g", v);
    return buf;
}

/// vLLM's --kv-cache-dtype value for `d` under release line `v` (engine/kv_dtype_names.hpp).
[[nodiscard]] inline std::string vllm_kv_dtype(KvDtype d, EngineVersion v) {
    if (const auto n = vllm_kv_dtype_name(d, v)) return std::string(*n);
    if (const auto row = vllm_kv_dtype_row(d))
        throw_field_error<InvalidInput>("vllm serve", "--kv-cache-dtype",
                                        text("vLLM v", row->since.text(), " or later for ",
                                             row->name, " (vllm/config/cache.py, CacheDType)"),
                                        text(name(d), " under v", v.text()));
    throw_field_error<InvalidInput>(
        "vllm serve", "--kv-cache-dtype",
        "bf16, fp16, fp8_e4m3, fp8_e5m2, fp8_ds_mla, fp8_per_token_head, int8, int4, nvfp4 or "
        "nvfp4_4over6 (vllm/config/cache.py, CacheDType)",
        name(d));
}

/// SGLang's --kv-cache-dtype value for `d` (python/sglang/srt/server_args.py).
[[nodiscard]] inline std::string sglang_kv_dtype(KvDtype d) {
    if (const auto n = sglang_kv_dtype_name(d)) return std::string(*n);
    throw_field_error<InvalidInput>("python -m sglang.launch_server", "--kv-cache-dtype",
                                    "bf16, fp8_e4m3, fp8_e5m2 or nvfp4 (SGLang's fp4_e2m1)",
                                    name(d));
}

/// The quantization flag value that loads the weights `a` assumed from its checkpoint: empty when
/// the checkpoint is in that format already, "fp8" for FP8 weights over a 16- or 32-bit checkpoint
/// (vLLM and SGLang quantize them at load: --quantization fp8). Throws InvalidInput naming `where`
/// for a format neither engine makes at load (serve a checkpoint in it).
[[nodiscard]] inline std::string load_quantization(const ReplicaAnswer& a, const char* where) {
    if (a.weight_source != WeightSource::given) return {};
    const WeightOptions& w = a.replica.weights;
    // What the engine loads unasked: the checkpoint's formats, float32 in its 16-bit dtype.
    const WeightOptions c =
        engine_load_weights(a.replica.model, a.serving.engine, a.serving.engine_version);
    const auto experts = [](const WeightOptions& o) { return o.expert_format.value_or(o.format); };
    const auto attention = [](const WeightOptions& o) {
        return o.attention_format.value_or(o.format);
    };
    if (w.format == c.format && experts(w) == experts(c) && attention(w) == attention(c)) return {};
    const auto wide = [](WeightFormat f) {
        return f == WeightFormat::bf16 || f == WeightFormat::fp16 || f == WeightFormat::fp32;
    };
    if (w.format == WeightFormat::fp8 && experts(w) == WeightFormat::fp8 &&
        attention(w) == WeightFormat::fp8 && wide(c.format) && wide(experts(c)) &&
        wide(attention(c)))
        return "fp8";
    throw_field_error<InvalidInput>(
        where, "weights",
        "the checkpoint's own format, or fp8 over a 16-bit checkpoint (--quantization fp8 "
        "quantizes at load); serve a checkpoint in the format assumed",
        text(name(w.format), " weights over a ", name(c.format), " checkpoint"));
}

/// The port of the Ray head the commands of a vLLM release before multi-node multiprocessing
/// start (`ray start --head --port`): 6379, Ray's default GCS port and the one vLLM's
/// examples/online_serving/run_cluster.sh starts the head on.
inline constexpr const char* vllm_ray_head_port = "6379";

/// The file name the TensorRT-LLM command gives --extra_llm_api_options.
inline constexpr const char* trtllm_extra_options_file = "extra_llm_api_options.yaml";

/// TensorRT-LLM's KvCacheConfig.dtype for `d` (engine/kv_dtype_names.hpp), empty for "auto" (the
/// model's 16-bit dtype: the YAML leaves it out).
[[nodiscard]] inline std::string trtllm_kv_dtype(KvDtype d) {
    if (const auto n = trtllm_kv_dtype_name(d))
        return *n == "auto" ? std::string() : std::string(*n);
    throw_field_error<InvalidInput>("trtllm-serve", "kv_cache_config.dtype",
                                    "bf16, fp16 (auto), fp8_e4m3 (fp8) or nvfp4", name(d));
}

}  // namespace detail

/// The command lines that start the engine of `a` (vLLM, SGLang or TensorRT-LLM) as evaluate()
/// sized it, one per node of the replica (node 0, the head, first): its parallel layout, memory
/// fraction, maximum length (the demand's context), sequence cap and KV dtype; the weights it
/// assumed (the engine's --quantization fp8 when FP8 weights are assumed over a 16-bit
/// checkpoint); the block size when one was given or, under vLLM, when its attention backend
/// forces one (left out otherwise: the engine's default is the size evaluate() assumed); host
/// memory for KV (CommandOptions::kv_offloading: vLLM's --kv-offloading-size, SGLang's
/// --enable-hierarchical-cache and --hicache-size, TensorRT-LLM's host_cache_size); every knob the
/// deployment gave; and the environment the answer depends on. A replica that spans nodes gets one
/// command per node: vLLM's --nnodes, --node-rank and --master-addr (the node-1.. commands
/// --headless; before v0.12, a Ray cluster: `ray start --head` and `vllm serve ...
/// --distributed-executor-backend ray` on the head, `ray start --address=HEAD:6379 --block` on
/// the others, engine/release.hpp vllm_multinode_without_ray), or, for dp ranks that each fit a
/// node, its data-parallel flags
/// (--data-parallel-size-local, --data-parallel-start-rank, --data-parallel-address); SGLang's
/// --nnodes, --node-rank and --dist-init-addr. TensorRT-LLM's is `trtllm-serve` with the PyTorch
/// backend, what it has no flag for (the KV dtype, attention dp, the block size) in
/// ServeCommand::extra_options, and one command for all nodes that an MPI launcher starts
/// (ServeCommand::launcher_nodes). Throws InvalidInput for the ideal profile (no command line), for
/// a KV dtype the engine has no flag value for, for weights the engine does not make at load
/// (TensorRT-LLM quantizes none), for dp ranks that cross nodes under vLLM or span nodes under a
/// vLLM release before v0.9 (vllm_multinode_data_parallel), and for a host tier SGLang refuses (no
/// whole GB per rank, or a host pool no larger than the device pool).
[[nodiscard]] inline std::vector<ServeCommand> serve_node_commands(const ReplicaAnswer& a,
                                                                   const CommandOptions& o = {}) {
    const ResolvedServing& s = a.serving;
    const ParallelConfig& p = a.replica.parallel;
    const std::string model =
        o.model.empty() ? std::string(a.replica.model.name().c_str()) : o.model;
    const auto num = [](std::uint64_t v) { return std::to_string(v); };
    const std::uint32_t nodes = a.nodes > 0 ? a.nodes : 1;
    // TensorRT-LLM starts its ranks through MPI: one command, whatever the nodes.
    std::vector<ServeCommand> out(s.engine == Engine::trtllm ? 1 : nodes);
    for (std::uint32_t node = 0; node < out.size(); ++node) {
        ServeCommand& c = out[node];
        c.engine = s.engine;
        std::vector<std::string>& v = c.argv;
        const auto flag = [&](const char* f, const std::string& value) {
            v.emplace_back(f);
            v.push_back(value);
        };
        switch (s.engine) {
            case Engine::vllm: {
                const char* where = "vllm serve";
                // One engine over several nodes on a release before the multiprocessing executor
                // spanned them: a Ray cluster, the engine started on its head alone.
                const bool ray =
                    nodes > 1 && p.dp <= 1 && !vllm_multinode_without_ray(s.engine_version);
                if (ray && node > 0) {
                    // The worker joins the head's cluster and stays in the foreground, as a
                    // --headless vllm serve would (Ray's `ray start --address ... --block`).
                    v = {"ray", "start",
                         "--address=" + o.head_address + ":" + detail::vllm_ray_head_port,
                         "--block"};
                    break;
                }
                if (a.over_limit && a.long_context_allowed)
                    c.env.emplace_back("VLLM_ALLOW_LONG_MAX_MODEL_LEN=1");
                // The hybrid manager for chunked local attention is an environment switch
                // (vllm/envs.py): set, the answer holds whatever the release's default.
                if (s.options.vllm.hybrid_kv_cache_manager &&
                    a.replica.model.layers().layers_of_kind(CacheKind::chunked_local) > 0)
                    c.env.emplace_back("VLLM_ALLOW_CHUNKED_LOCAL_ATTN_WITH_HYBRID_KV_CACHE=1");
                v = {"vllm", "serve", model};
                flag("--tensor-parallel-size", num(p.tp));
                if (p.pp > 1) flag("--pipeline-parallel-size", num(p.pp));
                if (p.dp > 1) flag("--data-parallel-size", num(p.dp));
                if (nodes > 1) {
                    const std::uint64_t node_gpus = a.replica.gpu.gpus_per_node;
                    const std::uint64_t rank_gpus = std::uint64_t{p.tp} * p.pp;
                    if (p.dp > 1) {
                        // Data-parallel ranks placed whole on nodes (vllm/engine/arg_utils.py,
                        // the --data-parallel-* flags); the head serves the API.
                        if (rank_gpus > node_gpus || node_gpus % rank_gpus != 0)
                            detail::throw_field_error<InvalidInput>(
                                where, "parallel",
                                "dp ranks that each fit one node (tp x pp dividing the node's "
                                "GPUs)",
                                detail::text("tp x pp = ", rank_gpus, " on nodes of ", node_gpus,
                                             " GPUs"));
                        // --headless and the --data-parallel-* flags came in v0.9
                        // (vllm_multinode_data_parallel, engine/release.hpp).
                        if (!vllm_multinode_data_parallel(s.engine_version))
                            detail::throw_field_error<InvalidInput>(
                                where, "--headless",
                                "vLLM v0.9 or later for dp ranks over nodes (--headless and "
                                "--data-parallel-start-rank, vLLM PR #15977)",
                                detail::text("dp ", p.dp, " over ", nodes, " nodes under v",
                                             s.engine_version.text()));
                        const std::uint64_t local = node_gpus / rank_gpus;
                        flag("--data-parallel-size-local",
                             num(std::min<std::uint64_t>(local, p.dp - local * node)));
                        if (node > 0) flag("--data-parallel-start-rank", num(local * node));
                        flag("--data-parallel-address", o.head_address);
                    } else if (ray) {
                        // Ray's placement group spreads the tp x pp workers over the cluster's
                        // nodes (vllm/executor/ray_utils.py, initialize_ray_cluster); the backend
                        // named, as docs/serving/parallelism_scaling.md writes it.
                        c.before = {"ray", "start", "--head",
                                    std::string("--port=") + detail::vllm_ray_head_port};
                        flag("--distributed-executor-backend", "ray");
                    } else {
                        // One engine over several nodes (ParallelConfig nnodes, node_rank,
                        // master_addr).
                        flag("--nnodes", num(nodes));
                        flag("--node-rank", num(node));
                        flag("--master-addr", o.head_address);
                    }
                    if (node > 0 && !ray) v.emplace_back("--headless");
                }
                if (p.ep > 1) v.emplace_back("--enable-expert-parallel");
                if (p.redundant_experts > 0) {
                    // --num-redundant-experts is gone; EPLB takes it in its config.
                    v.emplace_back("--enable-eplb");
                    std::string eplb = "{\"num_redundant_experts\": ";
                    eplb += num(p.redundant_experts);
                    eplb += '}';
                    flag("--eplb-config", eplb);
                }
                if (p.dcp > 1) flag("--decode-context-parallel-size", num(p.dcp));
                if (const std::string q = detail::load_quantization(a, where); !q.empty())
                    flag("--quantization", q);
                flag("--gpu-memory-utilization", detail::short_number(s.budget.utilization));
                flag("--max-model-len", num(a.demand.context));
                flag("--max-num-seqs", num(a.dp_rank_sequence_cap));
                flag("--kv-cache-dtype",
                     detail::vllm_kv_dtype(a.replica.kv.dtype, s.engine_version));
                // The block size given, or the one the attention backend forces (FlashMLA's 64 on
                // Hopper): vLLM would force it too, but the command then states the pool it
                // predicts and starts the same under a release that forced another.
                if (s.block_size_given || (s.backend && s.backend->forced))
                    flag("--block-size", num(s.block_size));
                if (s.options.vllm.max_num_batched_tokens)
                    flag("--max-num-batched-tokens", num(*s.options.vllm.max_num_batched_tokens));
                // JSON from v0.9 (vllm/engine/arg_utils.py, PR #16789); v0.8 reads image=N.
                if (const auto n = s.budget.reserve.encoder_cache.items_per_prompt)
                    flag("--limit-mm-per-prompt", s.engine_version < EngineVersion{0, 9}
                                                      ? "image=" + num(*n)
                                                      : "{\"image\": " + num(*n) + "}");
                if (s.budget.reserve.encoder_cache.skip_profiling)
                    v.emplace_back("--skip-mm-profiling");
                if (s.enforce_eager) v.emplace_back("--enforce-eager");
                if (s.options.vllm.num_gpu_blocks_override)
                    flag("--num-gpu-blocks-override", num(*s.options.vllm.num_gpu_blocks_override));
                if (s.budget.kv_memory_per_gpu)
                    flag("--kv-cache-memory-bytes", num(s.budget.kv_memory_per_gpu->count()));
                if (o.kv_offloading) {
                    const std::uint64_t engines = p.dp > 1 ? p.dp : 1;
                    flag("--kv-offloading-size",
                         detail::short_number(o.kv_offloading->in(GiB) /
                                              static_cast<double>(engines)));
                    flag("--kv-offloading-backend", "native");
                }
                if (const LoraOptions& lo = s.budget.reserve.lora; lo.max_loras > 0) {
                    // vllm/engine/arg_utils.py, the LoRAConfig group.
                    v.emplace_back("--enable-lora");
                    flag("--max-loras", num(lo.max_loras));
                    flag("--max-lora-rank", num(lo.max_lora_rank));
                    if (lo.fully_sharded) v.emplace_back("--fully-sharded-loras");
                    if (lo.max_cpu_loras != 0) flag("--max-cpu-loras", num(lo.max_cpu_loras));
                }
                break;
            }
            case Engine::sglang: {
                const char* where = "python -m sglang.launch_server";
                if (a.over_limit && a.long_context_allowed)
                    c.env.emplace_back("SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN=1");
                v = {"python", "-m", "sglang.launch_server"};
                flag("--model-path", model);
                flag("--tp-size", num(p.tp));
                if (p.pp > 1) flag("--pp-size", num(p.pp));
                if (p.dp > 1) {
                    flag("--dp-size", num(p.dp));
                    v.emplace_back("--enable-dp-attention");
                }
                if (nodes > 1) {
                    // python/sglang/srt/server_args.py: nnodes, node_rank, dist_init_addr
                    // (host:port).
                    flag("--nnodes", num(nodes));
                    flag("--node-rank", num(node));
                    flag("--dist-init-addr", o.head_address + ":5000");
                }
                if (p.ep > 1) flag("--ep-size", num(p.ep));
                if (p.redundant_experts > 0)
                    flag("--ep-num-redundant-experts", num(p.redundant_experts));
                if (const std::string q = detail::load_quantization(a, where); !q.empty())
                    flag("--quantization", q);
                // The fraction SGLang's heuristic gives (or the one given), printed so that a
                // release with another heuristic starts the same pool.
                flag("--mem-fraction-static",
                     detail::short_number(a.report.memory[a.limiting_stage].fraction));
                flag("--context-length", num(a.demand.context));
                // Unset, SGLang derives its cap from the pool per dp rank, as kvplan does.
                if (s.options.sglang.max_running_requests)
                    flag("--max-running-requests", num(*s.options.sglang.max_running_requests));
                flag("--kv-cache-dtype", detail::sglang_kv_dtype(a.replica.kv.dtype));
                if (s.block_size_given) flag("--page-size", num(s.block_size));
                if (s.options.sglang.chunked_prefill_size)
                    flag("--chunked-prefill-size", num(*s.options.sglang.chunked_prefill_size));
                if (s.options.sglang.max_total_tokens)
                    flag("--max-total-tokens", num(*s.options.sglang.max_total_tokens));
                // The MoE runner the weights as loaded assumed (engine/sglang_weights.hpp).
                if (s.options.sglang.moe_runner_backend != SglangMoeRunnerBackend::automatic)
                    flag("--moe-runner-backend",
                         std::string(name(s.options.sglang.moe_runner_backend)));
                // The host tier: the hierarchical cache, whole GB per rank, a pool larger than
                // the device's (engine/host_cache.hpp); a size SGLang refuses gets no command.
                if (o.kv_offloading) {
                    const SglangKvPool& pool = a.report.sglang;
                    if (pool.swa_tokens != 0 || pool.mamba_state_ignored)
                        detail::throw_field_error<InvalidInput>(
                            where, "kv_offloading",
                            "a model of one token pool (the host pools of SGLang's sliding and "
                            "Mamba pools are not modelled)",
                            detail::short_number(o.kv_offloading->in(GiB)) + " GiB");
                    const SglangHostCache h =
                        sglang_host_cache(pool, p.tp * p.pp, *o.kv_offloading);
                    if (!h.starts())
                        detail::throw_field_error<InvalidInput>(
                            where, "kv_offloading",
                            detail::text(
                                "a host pool larger than the device pool's ", h.device_tokens,
                                " tokens per rank (python/sglang/srt/mem_cache/memory_pool_host.py "
                                "asserts it): --hicache-size ",
                                h.least_gb_per_rank, ", ", h.least_gb_per_rank * h.ranks,
                                " GB of host memory for the replica's ", h.ranks, " ranks"),
                            detail::text(detail::short_number(o.kv_offloading->in(GiB)),
                                         " GiB: --hicache-size ", h.gb_per_rank, " holds ",
                                         h.host_tokens, " tokens of ", h.cell.count(), " B"));
                    v.emplace_back("--enable-hierarchical-cache");
                    flag("--hicache-size", num(h.gb_per_rank));
                }
                if (const LoraOptions& lo = s.budget.reserve.lora; lo.max_loras > 0) {
                    // python/sglang/srt/server_args.py: LoRA slots per batch and their rank.
                    if (lo.fully_sharded)
                        detail::throw_field_error<InvalidInput>(where, "fully_sharded_loras",
                                                                "vLLM (SGLang has no such option)",
                                                                "sglang");
                    v.emplace_back("--enable-lora");
                    flag("--max-loras-per-batch", num(lo.max_loras));
                    flag("--max-lora-rank", num(lo.max_lora_rank));
                    if (lo.max_cpu_loras != 0) flag("--max-loaded-loras", num(lo.max_cpu_loras));
                    // nargs="*": each stack's name a word of its own after the flag.
                    if ((lo.targets & lora_all) != lora_all) {
                        v.emplace_back("--lora-target-modules");
                        for (std::uint8_t t : {lora_qkv, lora_o, lora_gate_up, lora_down})
                            if ((lo.targets & t) != 0) v.push_back(lora_target_names(t));
                    }
                }
                break;
            }
            case Engine::trtllm: {
                const char* where = "trtllm-serve";
                // tensorrt_llm/commands/serve.py: MODEL, then click options; the PyTorch backend
                // is the default and the one whose memory rules kvplan follows (engine/trtllm.hpp).
                v = {"trtllm-serve", model, "--backend", "pytorch"};
                flag("--tp_size", num(p.tp));
                if (p.pp > 1) flag("--pp_size", num(p.pp));
                if (p.ep > 1) flag("--ep_size", num(p.ep));
                // The PyTorch backend loads the checkpoint's own format (a ModelOpt checkpoint for
                // FP8 or FP4): no quantization at load.
                if (!detail::load_quantization(a, where).empty())
                    detail::throw_field_error<InvalidInput>(
                        where, "weights",
                        "the checkpoint's own format (TensorRT-LLM quantizes no weights at load: "
                        "serve a quantized checkpoint)",
                        "fp8 over a 16-bit checkpoint");
                flag("--kv_cache_free_gpu_memory_fraction",
                     detail::short_number(s.options.trtllm.free_gpu_memory_fraction));
                // The window every full-attention layer is sized for (engine/report.hpp sets
                // max_seq_len to the demand's context).
                flag("--max_seq_len", num(a.demand.context));
                // max_batch_size per rank: the cap given; unset, the default (2,048) that
                // evaluate() assumed.
                if (s.options.trtllm.max_batch_size != TrtllmOptions{}.max_batch_size)
                    flag("--max_batch_size", num(s.options.trtllm.max_batch_size));
                if (nodes > 1) {
                    c.launcher_nodes = nodes;
                    c.launcher_ranks = a.replica_gpus;
                }
                // What trtllm-serve has no flag for: TorchLlmArgs fields in a YAML flow mapping
                // (tensorrt_llm/llmapi/llm_args.py: enable_attention_dp, KvCacheConfig).
                std::string kv;
                if (const std::string d = detail::trtllm_kv_dtype(a.replica.kv.dtype); !d.empty())
                    kv += "dtype: " + d;
                if (s.block_size_given)
                    kv += (kv.empty() ? "" : ", ") + std::string("tokens_per_block: ") +
                          num(s.block_size);
                // The host tier, bytes per rank (engine/host_cache.hpp).
                if (o.kv_offloading)
                    kv += (kv.empty() ? "" : ", ") + std::string("host_cache_size: ") +
                          num(trtllm_host_cache_size(p.tp * p.pp, *o.kv_offloading).count());
                std::string yaml;
                if (p.dp > 1) yaml += "enable_attention_dp: true";
                if (!kv.empty())
                    yaml +=
                        (yaml.empty() ? "" : ", ") + std::string("kv_cache_config: {") + kv + "}";
                if (!yaml.empty()) {
                    c.extra_options = "{" + yaml + "}";
                    flag("--extra_llm_api_options", detail::trtllm_extra_options_file);
                }
                break;
            }
            case Engine::ideal:
                detail::throw_field_error<InvalidInput>(
                    "serve_command", "engine",
                    "vllm, sglang or trtllm (the engines with a command line here)",
                    name(s.engine));
        }
    }
    return out;
}

/// The command line of the first (head) node of serve_node_commands: the one command of a replica
/// on one node.
[[nodiscard]] inline ServeCommand serve_command(const ReplicaAnswer& a,
                                                const CommandOptions& o = {}) {
    return serve_node_commands(a, o).front();
}

/// Layout `p` (in the flags of its rules) stated in the flags of `to`: the same GPUs, the same
/// attention groups and the same expert spread; nullopt when `to` cannot state it (SGLang and
/// TensorRT-LLM have no decode context parallelism here; vLLM spreads experts over all dp x tp
/// ranks or none; TensorRT-LLM's attention data parallelism has no attention tensor parallelism).
/// The engines then place the rest their own way (layout.hpp).
[[nodiscard]] constexpr std::optional<ParallelConfig> translate_parallel(const ParallelConfig& p,
                                                                         ParallelRules to) {
    // The engine-neutral view: attention tp, attention dp, expert spread, pp.
    std::uint32_t attention_tp = p.tp, dp = p.dp, ep = p.ep;
    switch (p.rules) {
        case ParallelRules::vllm:
            break;
        case ParallelRules::sglang:
            if (p.dp == 0 || p.tp % p.dp != 0) return std::nullopt;
            attention_tp = p.tp / p.dp;
            break;
        case ParallelRules::trtllm:
            attention_tp = p.dp > 1 ? 1 : p.tp;
            break;
    }
    const std::uint32_t stage = attention_tp * dp;  // GPUs of a stage
    ParallelConfig q = p;
    q.rules = to;
    switch (to) {
        case ParallelRules::vllm:
            if (ep != 1 && ep != stage) return std::nullopt;
            q.tp = attention_tp;
            q.dp = dp;
            break;
        case ParallelRules::sglang:
            if (p.dcp > 1) return std::nullopt;
            q.tp = stage;
            q.dp = dp;
            break;
        case ParallelRules::trtllm:
            if (p.dcp > 1 || p.redundant_experts > 0) return std::nullopt;
            if (dp > 1 && attention_tp > 1) return std::nullopt;
            q.tp = stage;
            q.dp = dp;
            break;
    }
    q.ep = ep;
    return q;
}

namespace detail {

/// The engines whose commands serve_commands gives unless told: vLLM and SGLang, and TensorRT-LLM
/// after them when it is the engine of the deployment.
[[nodiscard]] inline std::span<const Engine> command_engines(Engine of) {
    static constexpr Engine all[] = {Engine::vllm, Engine::sglang, Engine::trtllm};
    return std::span<const Engine>(all, of == Engine::trtllm ? 3 : 2);
}

}  // namespace detail

/// One engine's command for a deployment: its own evaluation and its command line, or why there
/// is none.
struct EngineCommand {
    Engine engine = Engine::vllm;
    std::size_t candidate = 0;  ///< serve_commands over a plan: the rank of the fit it states
    std::optional<ParallelConfig> parallel{};  ///< the layout in this engine's flags
    std::optional<ReplicaAnswer> answer{};     ///< evaluate() under this engine
    std::optional<ServeCommand> command{};     ///< the head node's (the only one on one node)
    /// One command per node when the replica spans nodes (the head's first); empty on one node.
    std::vector<ServeCommand> node_commands{};
    std::string refused{};  ///< why there is no command (empty when there is one)
};

/// The command lines of `engines` for deployment `d` at `demand`: the layout stated in each
/// engine's flags (translate_parallel), evaluated under that engine (each engine's own memory and
/// cache), and its command line. The sequence cap given in `d.serving.max_sequences` is per dp
/// rank for vLLM (--max-num-seqs) and shared by the dp ranks for SGLang (--max-running-requests):
/// it is restated for the other engine. Unless `engines` names them: vLLM and SGLang, and
/// TensorRT-LLM when it is `d`'s engine. An engine that cannot state or start the layout says why.
[[nodiscard]] inline std::vector<EngineCommand> serve_commands(
    const Deployment& d, const Demand& demand, const CommandOptions& o = {},
    std::span<const Engine> engines = std::span<const Engine>()) {
    if (engines.empty()) engines = detail::command_engines(d.serving.engine);
    const ParallelConfig from = d.parallel_config();
    std::vector<EngineCommand> out;
    out.reserve(engines.size());  // each is built in place: an answer is kilobytes
    for (Engine e : engines) {
        EngineCommand& ec = out.emplace_back();
        ec.engine = e;
        ec.parallel = translate_parallel(from, parallel_rules(e));
        if (!ec.parallel) {
            ec.refused = std::string(name(e)) + " cannot state this layout in its flags";
            continue;
        }
        Deployment de = d;
        de.parallel = *ec.parallel;
        de.serving.engine = e;
        // A release is the engine's own (vLLM's or SGLang's table): another engine runs its
        // newest.
        if (e != d.serving.engine) de.serving.engine_version.reset();
        if (d.serving.max_sequences && d.serving.engine != e) {
            // vLLM's cap is per dp rank, SGLang's is shared by them.
            const std::uint64_t dp = from.dp > 0 ? from.dp : 1;
            if (d.serving.engine == Engine::vllm && e == Engine::sglang)
                de.serving.max_sequences = *d.serving.max_sequences * dp;
            else if (d.serving.engine == Engine::sglang && e == Engine::vllm)
                de.serving.max_sequences = (*d.serving.max_sequences + dp - 1) / dp;
        }
        try {
            ec.answer = evaluate(de, demand);
            if (ec.answer->starts()) {
                std::vector<ServeCommand> all = serve_node_commands(*ec.answer, o);
                ec.command = all.front();
                if (all.size() > 1) ec.node_commands = std::move(all);
            } else
                ec.refused = std::string(name(e)) +
                             " does not start this deployment: " + refusal_text(*ec.answer);
        } catch (const Error& err) {
            ec.refused = err.what();
        }
    }
    return out;
}

/// For each of `engines`, the command line of the best fit of `plan` (plan_replicas of `model` over
/// `space` under `serving` at `demand`) that the engine can state and start: the first fit for the
/// plan's own engine, and for another the first whose layout it can state in its flags and that it
/// starts holding the demand (decode context parallelism, for one, is vLLM's). EngineCommand::
/// candidate is that fit's rank; an engine with none says why.
[[nodiscard]] inline std::vector<EngineCommand> serve_commands(
    const PlanAnswer& plan, const Model& model, const SearchSpace& space, const Serving& serving,
    const Demand& demand, const CommandOptions& o = {},
    std::span<const Engine> engines = std::span<const Engine>()) {
    if (engines.empty()) engines = detail::command_engines(serving.engine);
    std::vector<EngineCommand> out;
    for (Engine e : engines) {
        EngineCommand best;
        best.engine = e;
        best.refused = plan.fits.empty() ? "no layout holds the demand"
                                         : std::string(name(e)) +
                                               " cannot state or start any of the layouts kept";
        for (std::size_t i = 0; i < plan.fits.size(); ++i) {
            const PlanCandidate& c = plan.fits[i];
            // The layout as searched: a drafter's layers on the last stage are added again.
            ParallelConfig searched = c.answer.replica.parallel;
            if (c.answer.drafter_layers != 0 && searched.pp > 1) searched.stage_layers = {};
            const Deployment d{.model = model,
                               .gpu = space.gpus[c.gpu],
                               .parallel = searched,
                               .weights = space.weights[c.weights],
                               .kv = space.kv_formats[c.kv],
                               .serving = serving};
            const Engine one[] = {e};
            std::vector<EngineCommand> ec = serve_commands(d, demand, o, one);
            if (ec.front().command && ec.front().answer->fits()) {
                best = std::move(ec.front());
                best.candidate = i;
                break;
            }
        }
        out.push_back(std::move(best));
    }
    return out;
}

}  // namespace kvplan

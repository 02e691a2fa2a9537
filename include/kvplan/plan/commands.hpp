#pragma once

// The command line that starts an engine as kvplan sized it: `vllm serve ...` and
// `python -m sglang.launch_server ...` with the parallel layout, the memory fraction, the maximum
// length, the sequence cap, the KV dtype and the block size that evaluate() assumed, so that what
// the engine then logs is what kvplan predicted. Flag spellings follow the engines' current main:
// vllm/engine/arg_utils.py (EngineArgs.add_cli_args) and python/sglang/srt/arg_groups/fields/
// (parallel.py and the server-arguments table of docs/advanced_features/server_arguments.md).
//
// The same GPUs are placed differently by each engine (layout.hpp), so a layout is first stated in
// the other engine's flags (translate_parallel) and evaluated under that engine: each command
// carries its own engine's figures.

#include <cstdint>
#include <cstdio>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "../dtype.hpp"
#include "../engine/kind.hpp"
#include "../error.hpp"
#include "../layout.hpp"
#include "../model.hpp"
#include "deployment.hpp"
#include "evaluate.hpp"
#include "search.hpp"

namespace kvplan {

/// A command line: environment assignments, the program and its arguments, one per element.
struct ServeCommand {
    Engine engine = Engine::vllm;
    std::vector<std::string> env{};   ///< NAME=value, set before the program
    std::vector<std::string> argv{};  ///< the program and its arguments

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
};

namespace detail {

/// `v` in its shortest decimal form (15 significant digits, no trailing zeros): 0.92, 0.857; a
/// fraction printed so is the one kvplan computed with.
[[nodiscard]] inline std::string short_number(double v) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.15g", v);
    return buf;
}

[[nodiscard]] inline std::string vllm_kv_dtype(KvDtype d) {
    // vllm/config/cache.py, CacheDType.
    switch (d) {
        case KvDtype::bf16:
            return "bfloat16";
        case KvDtype::fp8_e4m3:
            return "fp8_e4m3";
        case KvDtype::fp8_e5m2:
            return "fp8_e5m2";
        case KvDtype::fp8_ds_mla:
            return "fp8_ds_mla";
        case KvDtype::nvfp4:
            return "nvfp4";  // since April 2026, on Blackwell (kv_support.hpp)
        default:
            break;
    }
    throw_field_error<InvalidInput>("vllm serve", "--kv-cache-dtype",
                                    "bf16, fp8_e4m3, fp8_e5m2, fp8_ds_mla or nvfp4 "
                                    "(vllm/config/cache.py, CacheDType)",
                                    name(d));
}

[[nodiscard]] inline std::string sglang_kv_dtype(KvDtype d) {
    // --kv-cache-dtype {auto, fp8_e5m2, fp8_e4m3, bf16, fp4_e2m1}.
    switch (d) {
        case KvDtype::bf16:
            return "bf16";
        case KvDtype::fp8_e4m3:
            return "fp8_e4m3";
        case KvDtype::fp8_e5m2:
            return "fp8_e5m2";
        default:
            break;
    }
    throw_field_error<InvalidInput>("python -m sglang.launch_server", "--kv-cache-dtype",
                                    "bf16, fp8_e4m3 or fp8_e5m2", name(d));
}

}  // namespace detail

/// The command line that starts the engine of `a` (vLLM or SGLang) as evaluate() sized it: its
/// parallel layout, memory fraction, maximum length (the demand's context), sequence cap, KV dtype
/// and block size, and every knob the deployment gave. Throws InvalidInput for the ideal and
/// TensorRT-LLM profiles (no command line here) and for a KV dtype the engine has no flag value
/// for.
[[nodiscard]] inline ServeCommand serve_command(const ReplicaAnswer& a,
                                                const CommandOptions& o = {}) {
    const ResolvedServing& s = a.serving;
    const ParallelConfig& p = a.replica.parallel;
    const std::string model =
        o.model.empty() ? std::string(a.replica.model.name().c_str()) : o.model;
    const auto num = [](std::uint64_t v) { return std::to_string(v); };
    ServeCommand c;
    c.engine = s.engine;
    std::vector<std::string>& v = c.argv;
    const auto flag = [&](const char* f, const std::string& value) {
        v.emplace_back(f);
        v.push_back(value);
    };
    switch (s.engine) {
        case Engine::vllm: {
            if (a.over_limit && a.long_context_allowed)
                c.env.emplace_back("VLLM_ALLOW_LONG_MAX_MODEL_LEN=1");
            v = {"vllm", "serve", model};
            flag("--tensor-parallel-size", num(p.tp));
            if (p.pp > 1) flag("--pipeline-parallel-size", num(p.pp));
            if (p.dp > 1) flag("--data-parallel-size", num(p.dp));
            if (p.ep > 1) v.emplace_back("--enable-expert-parallel");
            if (p.redundant_experts > 0) {
                // --num-redundant-experts is gone; EPLB takes it in its config (arg_utils.py).
                v.emplace_back("--enable-eplb");
                std::string eplb = "{\"num_redundant_experts\": ";
                eplb += num(p.redundant_experts);
                eplb += '}';
                flag("--eplb-config", eplb);
            }
            if (p.dcp > 1) flag("--decode-context-parallel-size", num(p.dcp));
            flag("--gpu-memory-utilization", detail::short_number(s.budget.utilization));
            flag("--max-model-len", num(a.demand.context));
            flag("--max-num-seqs", num(a.dp_rank_sequence_cap));
            flag("--kv-cache-dtype", detail::vllm_kv_dtype(a.replica.kv.dtype));
            flag("--block-size", num(s.block_size));
            if (s.options.vllm.max_num_batched_tokens)
                flag("--max-num-batched-tokens", num(*s.options.vllm.max_num_batched_tokens));
            if (s.options.vllm.num_gpu_blocks_override)
                flag("--num-gpu-blocks-override", num(*s.options.vllm.num_gpu_blocks_override));
            if (s.budget.kv_memory_per_gpu)
                flag("--kv-cache-memory-bytes", num(s.budget.kv_memory_per_gpu->count()));
            break;
        }
        case Engine::sglang: {
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
            if (p.ep > 1) flag("--ep-size", num(p.ep));
            if (p.redundant_experts > 0)
                flag("--ep-num-redundant-experts", num(p.redundant_experts));
            // The fraction SGLang's heuristic gives (or the one given), printed so that a release
            // with another heuristic starts the same pool.
            flag("--mem-fraction-static",
                 detail::short_number(a.report.memory[a.limiting_stage].fraction));
            flag("--context-length", num(a.demand.context));
            // Unset, SGLang derives its cap from the pool per dp rank, as kvplan does.
            if (s.options.sglang.max_running_requests)
                flag("--max-running-requests", num(*s.options.sglang.max_running_requests));
            flag("--kv-cache-dtype", detail::sglang_kv_dtype(a.replica.kv.dtype));
            flag("--page-size", num(s.block_size));
            if (s.options.sglang.chunked_prefill_size)
                flag("--chunked-prefill-size", num(*s.options.sglang.chunked_prefill_size));
            if (s.options.sglang.max_total_tokens)
                flag("--max-total-tokens", num(*s.options.sglang.max_total_tokens));
            break;
        }
        case Engine::ideal:
        case Engine::trtllm:
            detail::throw_field_error<InvalidInput>(
                "serve_command", "engine", "vllm or sglang (the engines with a command line here)",
                name(s.engine));
    }
    return c;
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

/// One engine's command for a deployment: its own evaluation and its command line, or why there
/// is none.
struct EngineCommand {
    Engine engine = Engine::vllm;
    std::size_t candidate = 0;  ///< serve_commands over a plan: the rank of the fit it states
    std::optional<ParallelConfig> parallel{};  ///< the layout in this engine's flags
    std::optional<ReplicaAnswer> answer{};     ///< evaluate() under this engine
    std::optional<ServeCommand> command{};
    std::string refused{};  ///< why there is no command (empty when there is one)
};

/// The command lines of `engines` for deployment `d` at `demand`: the layout stated in each
/// engine's flags (translate_parallel), evaluated under that engine (each engine's own memory and
/// cache), and its command line. The sequence cap given in `d.serving.max_sequences` is per dp
/// rank for vLLM (--max-num-seqs) and shared by the dp ranks for SGLang (--max-running-requests):
/// it is restated for the other engine. An engine that cannot state or start the layout says why.
[[nodiscard]] inline std::vector<EngineCommand> serve_commands(
    const Deployment& d, const Demand& demand, const CommandOptions& o = {},
    std::span<const Engine> engines = std::span<const Engine>()) {
    static constexpr Engine both[] = {Engine::vllm, Engine::sglang};
    if (engines.empty()) engines = both;
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
            if (ec.answer->starts())
                ec.command = serve_command(*ec.answer, o);
            else
                ec.refused = std::string(name(e)) + " does not start this deployment";
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
    static constexpr Engine both[] = {Engine::vllm, Engine::sglang};
    if (engines.empty()) engines = both;
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

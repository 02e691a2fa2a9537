#include "answer.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <kvplan/format.hpp>
#include <kvplan/plan/commands.hpp>

#include "explain.hpp"

namespace kvplan::cli {

using detail::grouped_digits;

namespace {

std::string bytes(Bytes b) { return fmt::format("{}", b); }

}  // namespace

const char* refusal_key(Refusal r) noexcept { return name(r); }

std::string layout_text(const ParallelConfig& p) {
    std::string s = p.rules == ParallelRules::vllm && p.dp > 1 ? fmt::format("dp {} x ", p.dp) : "";
    s += fmt::format("tp {} x pp {}", p.tp, p.pp);
    if (p.rules != ParallelRules::vllm && p.dp > 1) s += fmt::format(", dp attention {}", p.dp);
    if (p.ep > 1) s += fmt::format(", ep {}", p.ep);
    if (p.dcp > 1) s += fmt::format(", dcp {}", p.dcp);
    if (p.redundant_experts > 0)
        s += fmt::format(", {} redundant expert{}", p.redundant_experts,
                         p.redundant_experts == 1 ? "" : "s");
    return s;
}

void append_command_notes(Report& rep, const std::vector<EngineCommand>& commands,
                          bool name_candidate) {
    for (const EngineCommand& c : commands) {
        if (!c.command)
            rep.notes.push_back(
                fmt::format("{}: no command line ({})", display_name(c.engine), c.refused));
        else if (!c.node_commands.empty())
            for (std::size_t n = 0; n < c.node_commands.size(); ++n)
                rep.notes.push_back(fmt::format(
                    "{} command line{} (node {} of {}{}): {}", display_name(c.engine),
                    name_candidate ? fmt::format(" (candidate {})", c.candidate + 1) : "", n,
                    c.node_commands.size(), n == 0 ? ", the head" : "", c.node_commands[n].line()));
        else {
            std::string label =
                name_candidate ? fmt::format("candidate {}", c.candidate + 1) : std::string();
            if (const std::uint32_t n = c.command->launcher_nodes; n > 1) {
                // TensorRT-LLM's ranks are MPI's (tensorrt_llm/llmapi/trtllm-llmapi-launch): one
                // command, started on every rank of every node.
                const std::uint32_t ranks = c.command->launcher_ranks;
                label += fmt::format(
                    "{}one for all {} nodes, started on each of its {} ranks by an MPI launcher, "
                    "as mpirun -n {} trtllm-llmapi-launch before it",
                    label.empty() ? "" : ", ", n, ranks, ranks);
            }
            rep.notes.push_back(fmt::format("{} command line{}: {}", display_name(c.engine),
                                            label.empty() ? "" : " (" + label + ")",
                                            c.command->line()));
            if (!c.command->extra_options.empty())
                rep.notes.push_back(fmt::format(
                    "{} {} (the file --extra_llm_api_options names): {}", display_name(c.engine),
                    detail::trtllm_extra_options_file, c.command->extra_options));
        }
    }
}

void append_serve_commands(Report& rep, const Deployment& d, const Demand& demand,
                           const std::string& model, std::optional<Bytes> host_kv) {
    append_command_notes(rep, serve_commands(d, demand, {.model = model, .kv_offloading = host_kv}),
                         false);
}

std::string replica_phrase(const ReplicaAnswer& a, const ResolvedGpu& g) {
    const std::string gpu_name = g.spec.name.empty() ? g.id : std::string(g.spec.name);
    const std::string layout = layout_text(a.replica.parallel);
    if (a.replicas == 1) return fmt::format("{} x {} ({})", a.gpus, gpu_name, layout);
    return fmt::format("{} x {} ({} replicas of {})", a.gpus, gpu_name, a.replicas, layout);
}

std::string verdict_line(const ReplicaAnswer& a, const ResolvedGpu& g) {
    const std::string where = replica_phrase(a, g);
    const std::string seqs = plural(a.demand.concurrency, "sequence", "sequences");
    const std::string room =
        a.replicas == 1 ? grouped_digits(a.max_concurrency)
                        : fmt::format("{} x {} = {}", a.replicas, grouped_digits(a.max_concurrency),
                                      grouped_digits(a.total_max_concurrency));
    switch (a.verdict) {
        case Verdict::fits:
            return fmt::format("FITS: {} of {} tokens on {}; room for {} at once", seqs,
                               grouped_digits(a.demand.context), where, room);
        case Verdict::does_not_fit: {
            if (a.sequence_cap != 0 && a.admitted > a.sequence_cap &&
                a.total_max_concurrency < a.demand.concurrency)
                return fmt::format(
                    "DOES NOT FIT: {} of {} tokens on {}; the engine's {} of {} caps it at {} "
                    "(its cache holds {} per replica)",
                    seqs, grouped_digits(a.demand.context), where,
                    sequence_cap_knob(a.serving.engine), grouped_digits(a.sequence_cap), room,
                    grouped_digits(a.admitted));
            if (a.max_concurrency == 0)
                return fmt::format(
                    "DOES NOT FIT: {} starts on {}, but not one sequence of {} tokens fits its "
                    "cache ({} of KV per GPU, {} tokens; one sequence needs {}): it refuses such "
                    "requests",
                    display_name(a.serving.engine), where, grouped_digits(a.demand.context),
                    bytes(a.kv_budget),
                    a.kv_tokens ? grouped_digits(*a.kv_tokens) : std::string("no"),
                    bytes(a.kv_per_sequence));
            return fmt::format(
                "DOES NOT FIT: {} of {} tokens need {} of KV per GPU on {}; {} available, room "
                "for {}",
                seqs, grouped_digits(a.demand.context), bytes(a.kv_needed), where,
                bytes(a.kv_budget), room);
        }
        case Verdict::does_not_start:
            return does_not_start_text(a, where);
    }
    return "";
}

namespace {
/// The release of `s`'s engine whose defaults apply, as resolve_serving takes it; nullopt for an
/// engine kvplan models at one release.
std::optional<EngineVersion> serving_release(const Serving& s) {
    if (s.engine == Engine::vllm) return vllm_release_or_newest(s.engine_version).line();
    if (s.engine == Engine::sglang) return sglang_release_or_newest(s.engine_version);
    return std::nullopt;
}
}  // namespace

std::string engine_text(const Serving& s) {
    std::string t(name(s.engine));
    if (const auto v = serving_release(s)) t += " " + v->text();
    return t;
}

void append_engine_version_input(Report& rep, const Serving& s) {
    if (const auto v = serving_release(s))
        rep.inputs.push_back({"engine_version", cell_text(v->text())});
}

void append_run_shape_inputs(Report& rep, const RunShape& run) {
    if (run.length_spread != 0.0)
        rep.inputs.push_back({"length_spread", cell_number(run.length_spread, "", 2)});
    if (run.requests) rep.inputs.push_back({"num_prompts", cell_count(*run.requests, "requests")});
    if (run.fixed_lengths) rep.inputs.push_back({"fixed_lengths", cell_bool(true)});
}

std::string describe_weights(const WeightOptions& w) {
    std::string s = name(w.format);
    if (w.format == WeightFormat::fp8 && w.layout.fp8_block != 0)
        s += fmt::format(" ({} x {} blocks)", w.layout.fp8_block, w.layout.fp8_block);
    if (w.format == WeightFormat::int4 && w.layout.group_size != 0 &&
        w.layout.group_size != 0xFFFF'FFFFU)
        s += fmt::format(" (groups of {})", w.layout.group_size);
    if (w.expert_format && *w.expert_format != w.format)
        s += fmt::format(", experts {}", name(*w.expert_format));
    if (w.attention_format && *w.attention_format != w.format)
        s += fmt::format(", attention {}", name(*w.attention_format));
    const auto part = [&](const std::optional<WeightFormat>& f, const char* what) {
        if (f) s += fmt::format(", {} {}", what, name(*f));
    };
    part(w.attention_output_format, "attention output");
    part(w.shared_expert_format, "shared experts");
    part(w.dense_mlp_format, "dense MLP");
    part(w.mixer_format, "mixers");
    part(w.lm_head_format, "LM head");
    return s;
}

std::string weights_phrase(const ReplicaAnswer& a) {
    const std::string w = describe_weights(a.replica.weights);
    switch (a.weight_source) {
        case WeightSource::checkpoint:
            return fmt::format("weights {} (the checkpoint's, {})", w,
                               a.replica.model.config().checkpoint.source);
        case WeightSource::assumed: {
            const std::string why = a.replica.model.config().checkpoint.source;
            return fmt::format("weights {} (assumed: {})", w,
                               why.empty() ? "the model states no format" : why);
        }
        case WeightSource::given:
            return fmt::format("weights {} (--weight-dtype)", w);
        case WeightSource::downcast:
            return fmt::format(
                "weights {} (the checkpoint's float32, {}, as {}'s dtype auto loads it)", w,
                a.replica.model.config().checkpoint.source, display_name(a.serving.engine));
    }
    return w;
}

std::string answer_heading(const ReplicaAnswer& a, std::string_view model_name) {
    const std::uint32_t b = a.serving.block_size;
    return fmt::format(
        "{}: {}, KV {}, engine {}, blocks of {} token{}; context limit {} tokens ({})", model_name,
        weights_phrase(a), name(a.replica.kv.dtype), name(a.serving.engine), b, b == 1 ? "" : "s",
        grouped_digits(a.limit.tokens), a.limit.field);
}

void append_shared_prefix_figures(Report& rep, const ReplicaAnswer& a) {
    // Always in JSON and CSV (zero without a prefix), so their keys stay put; in text when asked.
    const bool shown = a.demand.shared_prefix_tokens != 0;
    const std::string where = a.dp_ranks > 1 ? "a dp rank's" : "the replica's";
    const std::uint64_t running = a.dp_rank_running();
    rep.figures.push_back({"shared_prefix_tokens",
                           "shared prefix",
                           cell_count(a.demand.shared_prefix_tokens, "tokens"),
                           {},
                           {"the prompt prefix every request starts with (--shared-prefix)", {}},
                           false});
    rep.figures.push_back(
        {"shared_prefix_blocks",
         "shared prefix: full blocks held once",
         cell_count(a.shared_prefix_blocks, "blocks"),
         {},
         {"floor(min(shared prefix, context - 1) / block_size): only full blocks are shared "
          "(vLLM caches full blocks; a request whose whole prompt hits recomputes its last token)",
          {fmt::format("block_size = {} tokens", a.serving.block_size),
           fmt::format("{} B each sequence after the first does not hold, per GPU",
                       grouped_digits(a.shared_prefix_bytes_per_sequence.count()))}},
         shown});
    rep.figures.push_back(
        {"shared_prefix_blocks_saved",
         fmt::format("shared prefix saves (x {})", plural(running, "sequence", "sequences")),
         cell_count(a.shared_prefix_blocks_saved, "blocks"),
         {},
         {"shared_prefix_blocks x (sequences running - 1): blocks " + where +
              " cache would hold again without sharing",
          {fmt::format("sequences running = min({}, {})", grouped_digits(a.concurrency_per_dp_rank),
                       grouped_digits(a.dp_rank_max_concurrency))}},
         shown});
    rep.figures.push_back({"shared_prefix_bytes_saved",
                           "shared prefix saves per GPU",
                           cell(a.shared_prefix_bytes_saved),
                           cell_exact(a.shared_prefix_bytes_saved),
                           {"the saved blocks' bytes on each GPU, every layer counted (a sliding "
                            "layer shares only the blocks in its window)",
                            {}},
                           shown});
    rep.figures.push_back({"max_concurrency_without_sharing",
                           "max concurrency without sharing",
                           cell_count(a.max_concurrency_without_sharing, "sequences"),
                           {},
                           {"max_concurrency with every sequence holding the prefix itself", {}},
                           shown});
    rep.figures.push_back(
        {"shared_prefix_concurrency_added",
         "sequences the shared prefix adds",
         cell_count(a.shared_prefix_concurrency_added(), "sequences"),
         {},
         {"max_concurrency - max_concurrency_without_sharing, per replica",
          {"the prefix comes out of the pool once; each sequence then needs only its own blocks"}},
         shown});
}

void append_answer_figures(Report& rep, const ReplicaAnswer& a, const ReplicaRequest& in) {
    const EngineMemory& m = a.memory();
    const Engine e = a.serving.engine;
    const std::string frac(fraction_knob(e));
    const std::string gpu_src =
        in.gpu.source +
        (in.gpu.memory_basis == MemoryBasis::runtime  ? ": memory.runtime_total_bytes"
         : in.gpu.memory_basis == MemoryBasis::driver ? ": memory.driver_reported_bytes"
                                                      : ": memory.stated_bytes");
    const std::string stage_note =
        a.replica.parallel.pp > 1 ? fmt::format(" (stage {}, the limiting one)", a.limiting_stage)
                                  : "";
    const bool ideal = e == Engine::ideal;
    const bool charged_graphs = e == Engine::vllm && a.serving.options.vllm.charge_cuda_graphs;
    const std::string in_out_act = e == Engine::sglang   ? " (outside the fraction)"
                                   : e == Engine::trtllm ? " (before the fraction)"
                                                         : "";
    const VllmOptions& vo = a.serving.options.vllm;
    const bool charged_context = e == Engine::vllm && vo.charge_non_torch_in_use;
    const bool charged_comm = charged_context || (e == Engine::vllm && vo.charge_comm_buffers);
    const auto in_out_fixed = [&](bool charged) -> std::string {
        if (e == Engine::trtllm) return " (before the fraction)";
        return charged ? "" : " (outside the fraction)";
    };
    const std::string in_out_ctx = in_out_fixed(charged_context);
    const std::string in_out_comm = in_out_fixed(charged_comm);
    const std::string in_out_graphs = charged_graphs        ? ""
                                      : e == Engine::trtllm ? " (before the fraction)"
                                                            : " (outside the fraction)";
    // The texts the rows quote, before the rows.
    const std::string weights = weights_phrase(a);
    const std::string layout = layout_text(a.replica.parallel);
    rep.figures.push_back(
        {"fits",
         "Verdict",
         cell_bool(a.fits(), "fits", "does not fit"),
         {},
         {"starts and every replica together holds the concurrency",
          {fmt::format("engine starts: {}", a.starts() ? "yes" : "no"),
           fmt::format("max_concurrency = {} per replica x {} replica{}, concurrency = {}",
                       grouped_digits(a.max_concurrency), a.replicas, a.replicas == 1 ? "" : "s",
                       grouped_digits(a.demand.concurrency))}},
         false});
    rep.figures.push_back({"refusal",
                           "Refusal",
                           cell_text(name(a.refusal)),
                           {},
                           {"why the engine does not start (none when it starts)", {}},
                           false});
    if (a.refusal == Refusal::kv_dtype)
        rep.figures.push_back({"kv_dtype_rule",
                               "KV dtype rule",
                               cell_text(name(a.kv_dtype_check.rule)),
                               {},
                               {"the rule by which the engine refuses the KV dtype at start-up",
                                {std::string(a.kv_dtype_check.source)}},
                               false});
    rep.figures.push_back({"gpu_memory_bytes",
                           "GPU memory (runtime total)",
                           cell(m.memory_total),
                           cell_exact(m.memory_total),
                           {"the total the CUDA or HIP runtime reports", {gpu_src}}});
    if (e == Engine::sglang) {
        const ResolvedServing& s = a.serving;
        rep.figures.push_back(
            {"engine_version",
             "SGLang release",
             cell_text(s.sglang_release.text()),
             {},
             {"the release whose rules apply (kvplan/engine/sglang_release.hpp)",
              {s.engine_version_given
                   ? std::string("--engine-version")
                   : std::string("the newest release kvplan knows (--engine-version X.Y.Z for "
                                 "another)")}}});
    }
    if (e == Engine::vllm) {
        const ResolvedServing& s = a.serving;
        rep.figures.push_back(
            {"engine_version",
             "vLLM release",
             cell_text(s.engine_version.text()),
             {},
             {"the release whose defaults apply (kvplan/engine/release.hpp)",
              {s.engine_version_given
                   ? std::string("--engine-version")
                   : std::string("the newest release kvplan knows (--engine-version X.Y for "
                                 "another)")}}});
        rep.figures.push_back({"gpu_memory_utilization",
                               "gpu_memory_utilization",
                               cell_number(s.budget.utilization, "", 2),
                               {},
                               {"the fraction used", {}},
                               false});
        if (s.backend)
            rep.figures.push_back(
                {"attention_backend",
                 "attention backend",
                 cell_text(std::string(name(s.backend->backend))),
                 {},
                 {"vLLM's choice for this model on this GPU", {std::string(s.backend->rule)}}});
        rep.figures.push_back(
            {"block_size",
             "block size",
             cell_count(s.block_size, "tokens"),
             {},
             {"tokens per KV block",
              {s.backend && s.backend->forced
                   // On Hopper FlashMLA's rule forces it whichever MLA backend is then picked.
                   ? fmt::format("forced: {}", s.backend->rule)
                   : std::string(s.block_size_given ? "--block-size" : "vLLM's default")}}});
    }
    if (!a.kv_given) {
        std::string base_label = "total";
        if (e == Engine::sglang) base_label = "(total - CUDA context - comm buffers)";
        if (e == Engine::trtllm)
            base_label = "(total - weights - activations - CUDA context - comm buffers - graphs)";
        const std::string label = e == Engine::ideal ? std::string("x 1 (ideal: every byte)")
                                                     : fmt::format("x {} {:.2f}", frac, m.fraction);
        rep.figures.push_back(
            {"fraction_bytes",
             label,
             cell(m.fraction_bytes),
             cell_exact(m.fraction_bytes),
             {fmt::format("{} x {}", frac, base_label),
              {fmt::format("{} = {:.4f}{}", frac, m.fraction,
                           a.serving.fraction_given ? " (--gpu-memory-utilization)"
                                                    : " (the engine's default)"),
               fmt::format("{} = {} B", base_label, grouped_digits(m.fraction_base.count()))}}});
    }
    rep.figures.push_back(size_figure(
        "weight_bytes_per_gpu",
        "- weights" + std::string(e == Engine::trtllm ? " (before the fraction)" : ""), m.weights,
        {"the tensors (or slices) this rank holds" + stage_note +
             (a.loaded.rotary_table.is_zero()
                  ? std::string()
                  : fmt::format(", and {}'s RoPE cos/sin cache ({} B, {})",
                                display_name(a.serving.engine),
                                grouped_digits(a.loaded.rotary_table.count()),
                                e == Engine::sglang ? "fp32 on CUDA, layers/rotary_embedding.py"
                                                    : "rotary_embedding/base.py")) +
             (a.loaded.allocator_slack.is_zero()
                  ? std::string()
                  : fmt::format(", and PyTorch's allocator rounding of its parameters to 2 MiB "
                                "segments ({} B, CUDACachingAllocator.cpp)",
                                grouped_digits(a.loaded.allocator_slack.count()))) +
             (a.loaded.narrowed.is_zero()
                  ? std::string()
                  : fmt::format(", less {} B as the tid2eid tables are int32, not the "
                                "checkpoint's int64 (models/deepseek_v4.py)",
                                grouped_digits(a.loaded.narrowed.count()))),
         {"model: " + in.model.source, weights,
          layout + (a.placement.experts_per_gpu == 0
                        ? std::string()
                        : fmt::format("; {} of {} routed experts per GPU, each split {} ways",
                                      a.placement.experts_per_gpu, a.placement.physical_experts,
                                      a.placement.expert_tp))}}));
    // The checkpoint's bytes beside them: in the text only where a kernel holds more than the
    // checkpoint (the rotary table and SGLang's allocator rounding are named in the weights'
    // explanation).
    const bool repacked =
        a.weights_checkpoint_per_gpu + a.loaded.rotary_table + a.loaded.allocator_slack !=
        a.weights_per_gpu + a.loaded.narrowed;
    rep.figures.push_back(
        {"weight_bytes_checkpoint_per_gpu", "  (weights as stored in the checkpoint)",
         cell(a.weights_checkpoint_per_gpu), cell_exact(a.weights_checkpoint_per_gpu),
         repacked && a.loaded.kernel == WeightKernel::int4_triton_rocm
             ? Explanation{fmt::format("SGLang's Triton W4A16 MoE keeps {} experts' int32 index "
                                       "tensors (g_idx and sort indices over hidden {} and "
                                       "intermediate {})",
                                       grouped_digits(a.loaded.experts),
                                       grouped_digits(a.loaded.hidden),
                                       grouped_digits(a.loaded.intermediate)),
                           {"(python/sglang/srt/layers/quantization/compressed_tensors/schemes/"
                            "compressed_tensors_wNa16_moe.py)"}}
         : repacked ? Explanation{fmt::format("{}'s {} kernel pads the MXFP4 experts' intermediate "
                                              "width {} to {} and hidden {} to {} per GPU",
                                              display_name(a.serving.engine), name(a.loaded.kernel),
                                              grouped_digits(a.loaded.intermediate),
                                              grouped_digits(a.loaded.padded_intermediate),
                                              grouped_digits(a.loaded.hidden),
                                              grouped_digits(a.loaded.padded_hidden)),
                                  {a.loaded.kernel == WeightKernel::mxfp4_triton
                                       ? "and keeps its swizzled scales beside the loaded ones, "
                                         "biases in fp32 (quantization/mxfp4.py)"
                                   : a.serving.engine == Engine::sglang
                                       ? "(python/sglang/srt/layers/quantization/mxfp4.py)"
                                       : "(vllm/model_executor/layers/quantization/mxfp4.py)"}}
                    : Explanation{"the weights the engine holds are the checkpoint's", {}},
         repacked});
    if (!ideal) {
        const Layout l = a.replica.layout();
        const Reserve res =
            reserve_on_rank(a.replica, l, a.limiting_stage, a.serving.budget.reserve);
        rep.figures.push_back(size_figure(
            "activation_bytes", "- activation peak" + in_out_act, m.activation,
            {"(residual + max(attention, MLP) intermediates) x tokens x element bytes + logits",
             {fmt::format("tokens = max_num_batched_tokens = {}", res.activation_model.tokens),
              fmt::format("per token {} B, logits {} B",
                          grouped_digits(res.activation_model.per_token.count()),
                          grouped_digits(res.activation_model.logits.count())),
              res.activation.source == TermSource::given
                  ? "given"
                  : "modelled as vLLM's profile run measures it (budget/reserve.hpp)"}}));
        if (a.replica.model.config().vision_params != 0)
            rep.figures.push_back(size_figure(
                "encoder_cache_bytes", "- encoder outputs" + in_out_act, m.encoder_cache,
                {"images x tokens per image x hidden size x element bytes",
                 {e != Engine::vllm
                      ? std::string("not charged: only vLLM's profile run is known to hold them")
                  : res.encoder_cache.items == 0
                      ? std::string("none: --skip-mm-profiling, --limit-mm-per-prompt 0 or not the "
                                    "first stage")
                      : fmt::format("{} images x {} tokens (budget {}) x {} x {} B "
                                    "(vllm/v1/worker/gpu_model_runner.py, profile_run)",
                                    res.encoder_cache.items, res.encoder_cache.tokens_per_item,
                                    res.encoder_cache.budget, res.encoder_cache.hidden,
                                    res.encoder_cache.element.count())}}));
        rep.figures.push_back(size_figure(
            "cuda_graph_bytes", "- CUDA graphs" + in_out_graphs, m.cuda_graphs,
            {"captured batch sizes x 2 MiB",
             {res.cuda_graphs.source == TermSource::given ? "given"
                                                          : "modelled (budget/reserve.hpp)"}}));
        // SGLang's memory puts its own context and PCIe NCCL figures in place of the reserve's.
        const bool own_context = m.cuda_context != res.cuda_context.bytes;
        const bool own_comm = m.comm_buffers != res.comm_buffers.bytes;
        rep.figures.push_back(size_figure(
            "cuda_context_bytes", "- CUDA context" + in_out_ctx, m.cuda_context,
            {own_context ? fmt::format("SGLang's: (623 + 224 x {} SMs) / 77 MiB",
                                       a.replica.gpu.compute_units)
                         : std::string("the CUDA context of the process"),
             {res.cuda_context.source == TermSource::given ? "given"
              : own_context ? "grows with the SMs (engine/sglang.hpp, sglang_cuda_context)"
                            : "700 MiB (budget/reserve.hpp)"}}));
        // On ROCm SGLang's own terms are the all-reduces' buffers beside the reserve's; on a
        // CUDA PCIe node, NCCL's buffers in place of it.
        const bool rocm = is_rocm(a.replica.gpu.arch);
        rep.figures.push_back(size_figure(
            "comm_buffer_bytes", "- communication buffers" + in_out_comm, m.comm_buffers,
            {!own_comm ? std::string("128 MiB per rank of a multi-GPU replica")
             : rocm    ? fmt::format("128 MiB per rank (RCCL), aiter's custom all-reduce at SGLang "
                                        "{}'s max_size and the quick all-reduce's IPC buffer",
                                     a.serving.sglang_release.text())
                       : std::string("NCCL's ring and tree buffers on PCIe: 2 communicators x 2 "
                                        "channels x 2 receiving peers x 9.1875 MiB"),
             {res.comm_buffers.source == TermSource::given ? "given"
              : !own_comm ? "SGLang's reserve rule (budget/reserve.hpp)"
              : rocm      ? "SGLang's groups at init (engine/sglang_release.hpp, "
                            "sglang_aiter_all_reduce_bytes; engine/sglang.hpp, "
                            "sglang_rocm_quick_reduce_bytes)"
                     : "SGLang's groups at init (engine/sglang.hpp, sglang_pcie_nccl_bytes)"}}));
        if (!m.nccl_nvls.is_zero())
            rep.figures.push_back(size_figure(
                "nccl_nvls_bytes", "- NCCL NVLS buffers", m.nccl_nvls,
                {"NVLS channels x 2 x 8 steps x 128 KiB x GPUs of the group",
                 {fmt::format(
                     "connected by the profile's first all-reduce past {} B, within "
                     "the charged increase (engine/nccl.hpp)",
                     grouped_digits(vllm_all_reduce_below_nccl(a.replica.gpu, l.tp()).count()))}}));
        if (!m.torch_nccl_communicator.is_zero())
            rep.figures.push_back(size_figure(
                "torch_nccl_communicator_bytes", "- PyTorch's NCCL communicator (logits gather)",
                m.torch_nccl_communicator,
                {"24 ring channels x (6 + 6 MiB) + its init's 115 cuMem allocations x 2 MiB",
                 {"opened by the profile's logits all-gather through vLLM 0.22, within the "
                  "charged increase (engine/nccl.hpp)"}}));
        if (!m.fusion_workspace.is_zero())
            rep.figures.push_back(size_figure(
                "fusion_workspace_bytes", "- FlashInfer all-reduce fusion workspace",
                m.fusion_workspace,
                {a.serving.options.vllm.fusion_workspace == FusionWorkspaceRounding::multicast &&
                         !multicast_recommended_granularity(a.replica.gpu).is_zero()
                     ? "3 buffers, each rounded to the 512 MiB multicast granularity"
                 : fusion_workspace_is_lower_bound(a.serving.options.vllm.fusion_workspace,
                                                   a.replica.gpu)
                     ? "a lower bound: 3 buffers (tp x tokens x hidden, flags, 3 x Lamport), "
                       "each rounded to 2 MiB; this release's FlashInfer rounds each to the "
                       "GPU's multicast granularity, which no public source gives for it"
                     : "3 buffers (tp x tokens x hidden, flags, 3 x Lamport), each rounded to "
                       "2 MiB",
                 {"allocated as the profile compiles the model, within the charged increase "
                  "(engine/allreduce_fusion.hpp)"}}));
        if (!m.fusion_workspace.is_zero() &&
            fusion_workspace_is_lower_bound(a.serving.options.vllm.fusion_workspace, a.replica.gpu))
            rep.notes.push_back(fmt::format(
                "the FlashInfer all-reduce fusion workspace ({}) is a lower bound: the FlashInfer "
                "of vLLM v0.17 to v0.21 rounds each of its 3 buffers to the GPU's multicast "
                "granularity (512 MiB on Hopper), which no public source gives for {}, so the KV "
                "budget shown is an upper bound",
                bytes(m.fusion_workspace), a.replica.gpu.name.c_str()));
        if (!m.cublas_workspace.is_zero())
            rep.figures.push_back(size_figure(
                "cublas_workspace_bytes", "- cuBLAS workspace", m.cublas_workspace,
                {"PyTorch's default for the GPU's architecture: 32 MiB from Hopper, 8.125 MiB "
                 "before",
                 {"taken at the profile's first GEMM, within its torch peak "
                  "(aten/src/ATen/cuda/CublasHandlePool.cpp; budget/reserve.hpp)"}}));
        if (const LoraOptions& lo = a.serving.budget.reserve.lora; lo.max_loras > 0)
            rep.figures.push_back(size_figure(
                "lora_bytes", "- LoRA adapter slots (with the weights)", m.lora,
                {fmt::format("{} slots x rank {} over every targeted layer's A and B ({}), in "
                             "the model's dtype{}{}",
                             lo.max_loras, lo.max_lora_rank, lora_target_names(lo.targets, ", "),
                             lo.fully_sharded ? ", fully sharded" : "",
                             lo.max_cpu_loras > lo.max_loras
                                 ? fmt::format("; {} adapters cached in host memory, no GPU "
                                               "memory",
                                               lo.max_cpu_loras)
                                 : ""),
                 {(lo.targets & lora_all) == lora_all
                      ? "as vLLM's LoRA layers allocate them at load (budget/lora.hpp)"
                      : "as SGLang's LoRA pool allocates the targeted stacks (budget/lora.hpp)"}}));
    }
    rep.figures.push_back(
        {"kv_budget_bytes_per_gpu", "= KV budget per GPU", cell(a.kv_budget),
         cell_exact(a.kv_budget),
         a.kv_given
             ? Explanation{"given", {"--kv-memory"}}
             : Explanation{ideal ? "total - weights" + stage_note
                                 : fmt::format("{} x base - charged terms{}", frac, stage_note),
                           {fmt::format("charged {} B", grouped_digits(m.charged.count())),
                            fmt::format("engine {} (--engine)", name(e))}}});
    rep.figures.push_back(
        {"kv_bytes_per_sequence_per_gpu",
         fmt::format("KV per sequence ({} tokens)", grouped_digits(a.demand.context)),
         cell(a.kv_per_sequence),
         cell_exact(a.kv_per_sequence),
         {e == Engine::sglang && a.report.sglang.swa_tokens == 0
              ? "the pool's cell (every layer of the stage) x the context's pages, per GPU: "
                "SGLang's sliding layers keep the whole context"
              : "blocks of block_size tokens each layer holds x block bytes, per GPU (windows "
                "keep their own)",
          {fmt::format("block_size = {} tokens{}", a.serving.block_size,
                       a.serving.block_size_given ? " (--block-size)" : " (the engine's default)"),
           fmt::format("kv dtype {} {}", name(a.replica.kv.dtype),
                       kv_dtype_label(a.replica.model, a.kv_source, a.serving.engine))}}});
    rep.figures.push_back(
        {"kv_bytes_needed_per_gpu",
         fmt::format("KV needed (x {}{})",
                     plural(a.concurrency_per_dp_rank, "sequence", "sequences"),
                     a.dp_ranks > 1   ? " per dp rank"
                     : a.replicas > 1 ? " per replica"
                                      : ""),
         cell(a.kv_needed),
         cell_exact(a.kv_needed),
         {std::string(a.dp_ranks > 1 ? "kv_bytes_per_sequence_per_gpu x concurrency per dp "
                                       "rank (each rank holds only its own sequences)"
                                     : "kv_bytes_per_sequence_per_gpu x concurrency per "
                                       "replica") +
              (a.shared_prefix_bytes_per_sequence.is_zero()
                   ? ""
                   : " - the shared prefix's bytes x (sequences - 1)"),
          {}}});
    // An engine that refuses to start builds no pool: what only a running engine has (headroom,
    // its token and block counts, the concurrency it logs) stays out of the text, in JSON still.
    const bool started = a.starts();
    if (a.shortfall.is_zero())
        rep.figures.push_back({"headroom_bytes_per_gpu",
                               "headroom",
                               cell(a.headroom),
                               cell_exact(a.headroom),
                               {"KV budget - KV needed", {}},
                               started});
    else
        rep.figures.push_back({"shortfall_bytes_per_gpu",
                               "shortfall",
                               cell(a.shortfall),
                               cell_exact(a.shortfall),
                               {"KV needed - KV budget", {}}});
    rep.figures.push_back(
        {"kv_tokens_capacity",
         "KV capacity",
         a.kv_tokens ? cell_count(*a.kv_tokens, "tokens") : cell_tokens(std::nullopt),
         {},
         {"the engine's KV token figure (vLLM's \"GPU KV cache size\", SGLang's "
          "max_total_num_tokens, TensorRT-LLM's blocks x tokens_per_block)",
          {fmt::format("engine {}", name(e))}},
         started});
    if (e == Engine::vllm && a.report.vllm.refused.empty()) {
        const VllmKvCache& v = a.report.vllm;
        rep.figures.push_back(
            {"num_gpu_blocks",
             v.blocks_overridden ? "vLLM blocks (--num-gpu-blocks-override)"
                                 : "vLLM blocks (one is the null block)",
             cell_count(v.num_blocks, "blocks"),
             {},
             {"KV memory per GPU / bytes of one block over a group's layers "
              "(vllm/v1/core/kv_cache_planning.py); one pool shared by every KV-cache group, block "
              "0 held back as the null block (vllm/v1/core/block_pool.py)",
              {fmt::format("{} B per block, {} group{}, {} usable",
                           grouped_digits(v.bytes_per_block.count()), v.num_groups,
                           v.num_groups == 1 ? "" : "s", grouped_digits(v.usable_blocks))}},
             started});
    }
    rep.figures.push_back(
        {"max_concurrency",
         fmt::format("max concurrency at {} tokens", grouped_digits(a.demand.context)),
         cell_count(a.max_concurrency, "sequences"),
         {},
         {"sequences of the context each replica holds at once: what the engine's scheduler "
          "admits in its cache, within its cap",
          {fmt::format("admitted by the cache: {}", grouped_digits(a.admitted)),
           a.sequence_cap != 0
               ? fmt::format("{} = {}", sequence_cap_knob(e), grouped_digits(a.sequence_cap))
               : std::string("no sequence cap"),
           fmt::format("the engine logs {:.2f}x", a.max_concurrency_ratio)}}});
    rep.figures.push_back(
        {"max_concurrency_ratio",
         fmt::format("  as {} logs it (concurrency ratio)", display_name(e)),
         {fmt::format("{:.2f}x", a.max_concurrency_ratio), a.max_concurrency_ratio},
         {},
         {"vLLM's \"Maximum concurrency for N tokens per request: X.XXx\": blocks / the blocks one "
          "request reserves (windows with the tokens in flight); SGLang and TensorRT-LLM: their "
          "pool over one sequence",
          {}},
         started});
    rep.figures.push_back(
        {"sequence_cap",
         "sequence cap",
         a.sequence_cap == 0 ? cell_null("none") : cell_count(a.sequence_cap, "sequences"),
         {},
         {"the engine's cap on sequences at once (--max-num-seqs)", {}},
         false});
    rep.figures.push_back({"admitted_sequences",
                           "admitted by the cache",
                           cell_count(a.admitted, "sequences"),
                           {},
                           {"sequences the engine's cache holds at once, before the cap", {}},
                           false});
    if (a.dp_ranks > 1)
        rep.figures.push_back(
            {"max_concurrency_per_dp_rank",
             fmt::format("per attention dp rank (x {})", a.dp_ranks),
             cell_count(a.dp_rank_max_concurrency, "sequences"),
             {},
             {"each dp rank schedules its own sequences in its own cache: max concurrency = dp "
              "ranks x a rank's",
              {fmt::format("a rank carries {} of the replica's {} sequences",
                           grouped_digits(a.concurrency_per_dp_rank),
                           grouped_digits(a.concurrency_per_replica)),
               fmt::format(
                   "a rank's cache admits {}, its cap {}", grouped_digits(a.dp_rank_admitted),
                   a.dp_rank_sequence_cap == 0 ? std::string("none")
                                               : grouped_digits(a.dp_rank_sequence_cap))}}});
    if (a.replicas > 1)
        rep.figures.push_back(
            {"total_max_concurrency",
             fmt::format("over {} replicas", a.replicas),
             cell_count(a.total_max_concurrency, "sequences"),
             {},
             {"max_concurrency x replicas",
              {fmt::format("{} GPUs / {} GPUs a replica", a.gpus, a.replica_gpus)}}});
    append_shared_prefix_figures(rep, a);
    rep.figures.push_back(
        {"max_context",
         fmt::format("max context at {}{}",
                     plural(a.concurrency_per_replica, "sequence", "sequences"),
                     a.max_context_at_limit ? " (the model's limit)" : ""),
         cell_tokens(a.max_context),
         {},
         {"the longest context of which the engine's cache holds that many at once, at most the "
          "model's limit",
          {fmt::format("limit {} tokens ({})", grouped_digits(a.limit.tokens), a.limit.field)}}});
    rep.figures.push_back(
        {"longest_single_context",
         std::string("longest single sequence") +
             (a.longest_at_limit ? " (the model's limit)" : ""),
         cell_tokens(a.longest_single_context),
         {},
         {"the longest context one sequence alone can reach, at most the model's limit", {}}});
    if (a.estimated_max_model_len)
        rep.figures.push_back({"estimated_max_model_len",
                               "vLLM's estimated maximum model length",
                               cell_count(*a.estimated_max_model_len, "tokens"),
                               {},
                               {"the longest length whose one request fits the usable blocks "
                                "(_estimate_max_model_len_from_groups)",
                                {}}});
    rep.figures.push_back({"drafter_layers",
                           "speculative drafter layers",
                           cell_count(a.drafter_layers, "layers"),
                           {},
                           {"layers a speculative drafter adds to the KV cache", {}},
                           false});
    rep.figures.push_back({"drafter_kv_bytes_per_token",
                           "drafter KV per token",
                           cell(a.drafter_kv_per_token),
                           cell_exact(a.drafter_kv_per_token),
                           {"the drafter layers' KV per token, whole model", {}},
                           false});
    rep.figures.push_back(
        {"context_limit_tokens",
         "context limit",
         cell_count(a.limit.tokens, "tokens"),
         {},
         {"the least of the config's length keys, rope scaling applied "
          "(vllm/config/model.py, _get_and_verify_max_len)",
          {fmt::format("{} = {}", a.limit.field, grouped_digits(a.limit.field_tokens))}},
         false});
    if (a.decode)
        rep.figures.push_back(
            {"tpot_seconds",
             fmt::format("decode TPOT bound at {} x {} tokens",
                         grouped_digits(a.concurrency_per_replica),
                         grouped_digits(a.demand.context)),
             cell(a.decode->tpot),
             {},
             {"the roofline lower bound (kvplan roofline) at the load each replica carries", {}}});
}

void append_model_notes(Report& rep, const ResolvedModel& m) {
    for (const std::string& n : m.notes) rep.notes.push_back(display_name(m) + ": " + n);
}

std::string family_display(GpuFamily f) {
    switch (f) {
        case GpuFamily::ampere:
            return "Ampere";
        case GpuFamily::ada:
            return "Ada";
        case GpuFamily::hopper:
            return "Hopper";
        case GpuFamily::blackwell:
            return "Blackwell";
        case GpuFamily::cdna3:
            return "CDNA3";
    }
    return std::string(name(f));
}

std::string estimate_params_text(const EstimateParams& p) {
    // Attention's and the experts' own fractions where they have one (0: the GEMMs').
    std::string own;
    if (p.attention > 0.0) own += fmt::format("attention {:.2f}", p.attention);
    if (p.experts > 0.0)
        own += fmt::format("{}MoE experts {:.2f}", own.empty() ? "" : ", ", p.experts);
    // SGLang's and TensorRT-LLM's layers at their multiples of vLLM's (engine_layer_scale),
    // where they are not 1.
    const double trt = engine_layer_scale(p, ParallelRules::trtllm);
    const std::string scale =
        p.uncompiled_layer_scale == 1.0 && trt == 1.0 ? std::string()
        : trt == p.uncompiled_layer_scale
            ? fmt::format(" (x {:.2f} under SGLang and TensorRT-LLM)", p.uncompiled_layer_scale)
            : fmt::format(" (x {:.2f} under SGLang, x {:.2f} TensorRT-LLM's dense layers)",
                          p.uncompiled_layer_scale, trt);
    return fmt::format(
        "bandwidth {:.2f} and compute {:.2f} of peak{}, {:.0f} us a layer{}, {:.0f} us "
        "an all-reduce",
        p.bandwidth, p.compute, own.empty() ? "" : " (" + own + ")",
        p.layer_overhead.in(microseconds), scale, p.all_reduce_latency.in(microseconds));
}

std::string estimate_basis_text(EstimateBasis b, std::optional<GpuFamily> family,
                                const EstimateParams& p, const std::string& profile_path) {
    const std::string params = estimate_params_text(p);
    switch (b) {
        case EstimateBasis::family_fitted:
            return fmt::format("{}'s defaults, fitted on {}: {}", family_display(*family),
                               default_params(*family).fitted_on, params);
        case EstimateBasis::family_borrowed: {
            // fitted_on reads "none: Hopper's values (...)" for a family without measurements.
            std::string_view on = default_params(*family).fitted_on;
            if (on.substr(0, 6) == "none: ") on.remove_prefix(6);
            return fmt::format("{}'s defaults, {}: {}", family_display(*family), on, params);
        }
        case EstimateBasis::given:
            return fmt::format("calibrated, from the profile {}: {}", profile_path, params);
        default:
            return "";
    }
}

std::string no_estimate_text(const ReplicaAnswer& a) {
    switch (a.estimate_basis) {
        case EstimateBasis::does_not_start:
            return "no latency estimate: the engine does not start, so nothing runs";
        case EstimateBasis::no_gpu_figures:
            return "no latency estimate: the GPU spec lacks the bound's figures (memory bandwidth, "
                   "dense FLOP/s, a link for tp > 1)";
        case EstimateBasis::unknown_family:
            return fmt::format(
                "no latency estimate: GPU '{}' is of no known family, so no fitted fractions "
                "apply; --profile with a calibration of it (kvplan calibrate --bench) gives them",
                a.replica.gpu.id);
        default:
            return "";
    }
}

void append_estimate_figures(Report& rep, const ReplicaAnswer& a, const std::string& profile_path) {
    if (!a.demand.prompt_tokens) return;
    const auto json_only = [&](std::string key, Cell v) {
        rep.figures.push_back({std::move(key), "", std::move(v), {}, {}, false});
    };
    json_only("estimate_basis", cell_text(name(a.estimate_basis)));
    if (!a.estimate) return;
    const LatencyEstimate& e = *a.estimate;
    const std::uint64_t I = *a.demand.prompt_tokens, O = *a.demand.output_tokens;
    const std::string basis =
        estimate_basis_text(a.estimate_basis, a.gpu_family, a.estimate_params, profile_path);
    const auto step_text = [](const StepTerms& t) {
        return fmt::format("max(memory {}, compute {}) + layers {} + all-reduce {}", t.memory,
                           t.compute, t.layers, t.all_reduce);
    };
    const auto fig = [&](std::string key, std::string label, Cell v, Explanation how) {
        rep.figures.push_back({std::move(key), std::move(label), std::move(v), {}, std::move(how)});
    };
    const Explanation itl_how{
        "decode step + share x (mixed step - decode step): the mean step while a request decodes",
        {fmt::format("decode step {} = {}: {} sequences at the mean context {} tokens",
                     e.decode_step.time, step_text(e.decode_step), grouped_digits(e.running),
                     grouped_digits(e.mean_context)),
         fmt::format("mixed step {} = {}: {} decodes and a prefill chunk of {} tokens",
                     e.mixed_step.time, step_text(e.mixed_step), grouped_digits(e.running - 1),
                     grouped_digits(e.chunk)),
         fmt::format("share {:.3f} = min(1, (running - 1) x chunks per prompt / output tokens)",
                     e.mixed_share),
         "parameters: " + basis}};
    fig("itl_estimate_seconds",
        fmt::format("ITL = TPOT estimate ({} running, {} in / {} out)", grouped_digits(e.running),
                    grouped_digits(I), grouped_digits(O)),
        cell(e.itl), itl_how);
    rep.figures.push_back(
        {"tpot_estimate_seconds", "TPOT estimate", cell(e.tpot), {}, itl_how, false});
    fig("itl_bound_seconds", "ITL bound at the same load", cell(e.itl_bound),
        {"the decode bound at the running sequences of the prompt's tokens: peak figures, no fixed "
         "costs; no mean step is faster",
         {fmt::format("{} sequences of {} tokens", grouped_digits(e.running), grouped_digits(I))}});
    fig("ttft_estimate_seconds",
        fmt::format("TTFT estimate ({} waiting)", grouped_digits(e.waiting)), cell(e.ttft),
        {"the prompt's prefill chunks (after the prompts ahead of it) + the step in flight + the "
         "wait for a slot",
         {}});
    fig("ttft_prefill_estimate_seconds",
        fmt::format("  prefill: {} chunk{} of {} tokens", grouped_digits(e.chunks),
                    e.chunks == 1 ? "" : "s", grouped_digits(e.chunk)),
        cell(e.ttft_prefill),
        {"chunks x a step carrying one chunk beside the other running requests' decodes, after "
         "the prompts ahead of it (first come, first served)",
         {fmt::format("token budget {} a step (max_num_batched_tokens), the decodes first",
                      grouped_digits(e.token_budget)),
          fmt::format("the wait for the prompts ahead {}", e.ttft_prefill_wait)}});
    fig("ttft_in_flight_estimate_seconds", "  the step in flight", cell(e.ttft_in_flight),
        {"a request arrives during a step and waits for it to end, half a step on average (none "
         "when it runs alone); SGLang's and TensorRT-LLM's overlap schedulers add the forward "
         "already scheduled",
         {}});
    fig("ttft_queue_estimate_seconds",
        fmt::format("  queue: {} waiting for {} slots", grouped_digits(e.waiting),
                    grouped_digits(e.running)),
        cell(e.ttft_queue),
        {"(clients - running) / running x a request's time (Little's law, closed loop)",
         {fmt::format("a request's time once admitted {}", e.request),
          fmt::format("running at most {} (max concurrency)", grouped_digits(e.running_cap))}});
    if (e.ttft_first_wave > Seconds{})
        fig("ttft_first_wave_estimate_seconds",
            fmt::format("  first wave: {} of {} requests sent at once",
                        grouped_digits(std::min(e.concurrency, *a.demand.run.requests)),
                        grouped_digits(*a.demand.run.requests)),
            cell(e.ttft_first_wave),
            {"C / N x (a burst's TTFT - the steady state's): the run's first C requests queue for "
             "prefill together",
             {}});
    fig("ttft_bound_seconds", "TTFT bound (one prompt's prefill)", cell(e.ttft_bound),
        {"the prefill bound of one prompt alone: peak figures, no queue",
         {fmt::format("{} tokens", grouped_digits(I))}});
    fig("tokens_per_second_estimate", "tokens/s estimate (replica)",
        cell_number(e.tokens_per_s, "tokens/s", 1),
        {"running x output tokens / a request's time", {}});
    fig("tokens_per_second_per_gpu_estimate", "tokens/s estimate per GPU",
        cell_number(e.tokens_per_s_per_gpu, "tokens/s", 1),
        {"tokens_per_second_estimate / GPUs of a replica", {}});
    fig("tokens_per_second_bound", "tokens/s bound at the same load (replica)",
        cell_number(e.tokens_per_s_bound, "tokens/s", 1),
        {"the lesser of the decode bound's rate at the clients' sequences and the prompts' "
         "compute at peak: no run gives more",
         {fmt::format("{} sequences of {} tokens", grouped_digits(e.concurrency),
                      grouped_digits(I))}});
    json_only("estimate_running_sequences", cell_count(e.running, "sequences"));
    json_only("estimate_waiting_requests", cell_count(e.waiting, "requests"));
    json_only("estimate_bandwidth_fraction", cell_number(a.estimate_params.bandwidth, "", 2));
    json_only("estimate_compute_fraction", cell_number(a.estimate_params.compute, "", 2));
    json_only("estimate_layer_overhead_seconds", cell(a.estimate_params.layer_overhead));
    json_only("estimate_all_reduce_latency_seconds", cell(a.estimate_params.all_reduce_latency));
}

void append_profile_notes(Report& rep, const std::optional<CalibrationProfile>& profile,
                          const std::string& path, const std::string& model_id) {
    if (profile && profile->has_reserve)
        rep.notes.push_back(fmt::format(
            "reserve from the profile {} ({}, fitted on {} from {}){}", path, profile->model,
            profile->gpu.empty() ? std::string("its GPU") : profile->gpu, profile->source,
            profile->model == model_id ? "" : ": a different model than --model"));
    if (profile && profile->estimate && profile->model != model_id)
        rep.notes.push_back(fmt::format(
            "the estimate's parameters were calibrated on {}, a different model than --model",
            profile->model));
}

void append_estimate_notes(Report& rep, const ReplicaAnswer& a, const std::string& profile_path,
                           const std::string& verdict_use) {
    if (!a.demand.prompt_tokens) return;
    if (!a.estimate) {
        rep.notes.push_back(no_estimate_text(a));
        return;
    }
    const LatencyEstimate& e = *a.estimate;
    const std::uint64_t I = *a.demand.prompt_tokens, O = *a.demand.output_tokens;
    rep.notes.push_back(fmt::format(
        "latency: the estimate (what a benchmark such as vllm bench serve should measure) beside "
        "the roofline bound (what no step beats); {}",
        verdict_use));
    const RunShape& run = a.demand.run;
    const std::string lengths =
        run.length_spread != 0.0
            ? fmt::format(
                  "each request's lengths drawn within +-{:.0f} % of {} tokens in and {} out",
                  100.0 * run.length_spread, grouped_digits(I), grouped_digits(O))
            : fmt::format("every request {}{} tokens in and {} out",
                          run.fixed_lengths ? "exactly " : "", grouped_digits(I),
                          grouped_digits(O));
    const std::string runs = run.requests
                                 ? fmt::format(
                                       ", a run of {} requests started at once (the first wave's "
                                       "wait and the last requests' drain counted)",
                                       grouped_digits(*run.requests))
                                 : std::string(", the steady state");
    const std::string scheduling =
        e.separate_prefill
            ? fmt::format(
                  "each prompt a prefill pass of at most {} tokens apart from the decode "
                  "steps, as SGLang schedules",
                  grouped_digits(e.token_budget))
            : fmt::format(
                  "chunked prefill of {} tokens a step with the decodes first, as {} "
                  "schedules",
                  grouped_digits(e.token_budget),
                  e.engine == ParallelRules::trtllm ? "TensorRT-LLM's in-flight batching"
                                                    : "vLLM V1");
    rep.notes.push_back(fmt::format(
        "the estimate assumes a closed loop of {} clients per replica, {}{}; at most {} run at "
        "once (the max concurrency above), {}; it leaves out prefix caching, speculative "
        "decoding and preemption",
        grouped_digits(e.concurrency), lengths, runs, grouped_digits(e.running_cap), scheduling));
    rep.notes.push_back(
        "estimate parameters: " +
        estimate_basis_text(a.estimate_basis, a.gpu_family, a.estimate_params, profile_path));
    if (const std::uint64_t request = TokenSplit{I, O}.tokens(); a.demand.context > request)
        rep.notes.push_back(fmt::format(
            "the estimate runs at most {} at once, what the cache holds at {} tokens each; vLLM "
            "admits by the blocks a request holds, so requests of {} tokens may run more at once "
            "(--context {} shows it)",
            grouped_digits(a.max_concurrency), grouped_digits(a.demand.context),
            grouped_digits(request), request));
}

void append_answer_notes(Report& rep, const ReplicaAnswer& a) {
    if (a.replicas > 1)
        rep.notes.push_back(fmt::format(
            "{} GPUs make {} replicas of tp {} x pp {}, each carrying {} of the {} sequences",
            a.gpus, a.replicas, a.replica.parallel.tp, a.replica.parallel.pp,
            grouped_digits(a.concurrency_per_replica), grouped_digits(a.demand.concurrency)));
    // The engine's log is of sequences that share nothing: compared with what it admits so.
    if (a.vllm_log_understates())
        rep.notes.push_back(fmt::format(
            "vLLM logs {:.2f}x for {} tokens per request (it reserves each sliding window's tokens "
            "in flight for every request); its scheduler admits {}, as windows stop growing",
            a.max_concurrency_ratio, grouped_digits(a.demand.context),
            grouped_digits(a.dp_rank_admitted_without_sharing())));
    if (a.demand.shared_prefix_tokens != 0)
        rep.notes.push_back(fmt::format(
            "shared prefix: every request starts with the same {} tokens; {}'s cache holds their "
            "{} full blocks once (prefix caching: vLLM's --enable-prefix-caching, on by default; "
            "SGLang's radix cache), so max concurrency is {} where it would be {}; the longest "
            "contexts are without sharing",
            grouped_digits(a.demand.shared_prefix_tokens),
            a.dp_ranks > 1 ? "each dp rank" : "the replica", grouped_digits(a.shared_prefix_blocks),
            grouped_digits(a.max_concurrency), grouped_digits(a.max_concurrency_without_sharing)));
    if (a.sequence_cap != 0 && a.admitted > a.sequence_cap)
        rep.notes.push_back(fmt::format(
            "the engine's sequence cap ({}) binds: its cache holds {} (--max-num-seqs raises it)",
            grouped_digits(a.sequence_cap), grouped_digits(a.admitted)));
    if (a.over_limit && a.long_context_allowed)
        rep.notes.push_back(fmt::format(
            "{} tokens pass the model's limit of {} ({}); served as --allow-long-context asks, "
            "though the model was not trained for it",
            grouped_digits(a.demand.context), grouped_digits(a.limit.tokens), a.limit.field));
    if (const DraftMethod method = a.serving.draft_method; method != DraftMethod::none) {
        const std::uint32_t tokens = a.serving.speculative_tokens;
        if (a.drafter_layers == 0)
            rep.notes.push_back(fmt::format(
                "speculative decoding ({}): no drafter, no KV of its own", name(method)));
        else
            rep.notes.push_back(fmt::format(
                "speculative decoding ({}, {} drafted per step): the drafter ({}) keeps its KV "
                "in the model's cache (+{} B per token) and its weights on the last stage{}; the "
                "decode bound is the model's own step, as acceptance is not modelled",
                name(method), plural(tokens, "token", "tokens"),
                plural(a.drafter_layers, "layer", "layers"),
                grouped_digits(a.drafter_kv_per_token.count()),
                a.drafter_weights.is_zero()
                    ? ""
                    : fmt::format(" ({} for the draft model)", a.drafter_weights)));
    }
    if (a.weight_source == WeightSource::assumed) {
        const std::string why = a.replica.model.config().checkpoint.source;
        rep.notes.push_back(fmt::format("weights sized as bf16 ({}); --weight-dtype sets them",
                                        why.empty() ? "the model states no format" : why));
    }
    if (!a.kv_given && !a.memory().outside_fits)
        rep.notes.push_back(
            "the terms outside the engine's fraction do not fit in what it leaves: "
            "lower the fraction");
}

}  // namespace kvplan::cli

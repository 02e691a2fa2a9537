#include "capacity.hpp"

#include <fmt/format.h>

#include <cmath>
#include <limits>

#include <kvplan/capacity.hpp>
#include <kvplan/format.hpp>

namespace kvplan::cli {

FitResult compute_fit(const Replica& r, const EngineSetup& e, std::uint64_t context,
                      std::uint64_t concurrency) {
    FitResult f;
    f.engine = e.engine;
    f.context = context;
    f.concurrency = concurrency;
    f.block_size = e.block_size;
    f.kv_given = e.budget.kv_memory_per_gpu.has_value();
    const Layout l = r.layout();
    const EngineReport rep = engine_report(e.engine, r, context, e.budget, e.options);
    f.starts = rep.summary.starts;
    f.kv_tokens = rep.summary.tokens;
    f.max_concurrency_exact = rep.summary.max_concurrency;
    f.max_concurrency = std::isfinite(f.max_concurrency_exact) && f.max_concurrency_exact > 0
                            ? static_cast<std::uint64_t>(std::floor(f.max_concurrency_exact))
                            : 0;
    // The limiting stage: the fewest sequences of `context` in its KV memory.
    std::uint64_t least = std::numeric_limits<std::uint64_t>::max();
    bool first = true;
    for (std::uint32_t st = 0; st < l.pp(); ++st) {
        const EngineMemory& em = rep.memory[st];
        const Bytes kv = e.budget.kv_memory_per_gpu ? *e.budget.kv_memory_per_gpu : em.kv_memory;
        const Shard s = l.stage(st);
        const std::uint64_t n =
            sequences_that_fit(kv, r.model, r.kv, context, e.block_size, s);
        if (n < least) {
            least = n;
            f.limiting_stage = st;
        }
        const auto mc = kvplan::max_context(kv, r.model, r.kv, concurrency, e.block_size, s);
        const auto one = kvplan::max_context(kv, r.model, r.kv, 1, e.block_size, s);
        const auto min_opt = [](std::optional<std::uint64_t> a, std::optional<std::uint64_t> b) {
            if (!a) return b;
            if (!b) return a;
            return std::optional<std::uint64_t>(std::min(*a, *b));
        };
        f.max_context = first ? mc : min_opt(f.max_context, mc);
        f.longest_single_context = first ? one : min_opt(f.longest_single_context, one);
        first = false;
    }
    f.memory = rep.memory[f.limiting_stage];
    f.kv_budget = f.kv_given ? *e.budget.kv_memory_per_gpu : f.memory.kv_memory;
    f.kv_per_sequence =
        reserved_per_sequence(r.model, r.kv, context, e.block_size, l.stage(f.limiting_stage));
    f.kv_needed = f.kv_per_sequence * concurrency;
    if (f.kv_needed <= f.kv_budget) f.headroom = f.kv_budget - f.kv_needed;
    else f.shortfall = f.kv_needed - f.kv_budget;
    f.fits = f.starts && f.max_concurrency >= concurrency && f.shortfall.is_zero();
    return f;
}

Cell cell_tokens(std::optional<std::uint64_t> v) {
    if (!v) return {"any length", nullptr};
    return cell_count(*v, "tokens");
}

std::string fit_verdict(const FitResult& f, const Replica& r, const ResolvedGpu& g) {
    const std::string gpu_name = g.spec.name.empty() ? g.id : std::string(g.spec.name);
    const std::string replica =
        fmt::format("{} x {} (tp {} x pp {})", r.gpus(), gpu_name, r.parallel.tp, r.parallel.pp);
    if (!f.starts)
        return fmt::format("DOES NOT START: {} under {} leaves no room for the KV cache on {}{}",
                           r.model.name(), name(f.engine), replica,
                           f.memory.shortfall.is_zero()
                               ? std::string()
                               : fmt::format(" ({} short before any KV)",
                                             fmt::format("{}", f.memory.shortfall)));
    if (f.fits)
        return fmt::format("FITS: {} sequence{} of {} tokens on {}; room for {} at once",
                           grouped(f.concurrency), f.concurrency == 1 ? "" : "s",
                           grouped(f.context), replica, grouped(f.max_concurrency));
    return fmt::format(
        "DOES NOT FIT: {} sequence{} of {} tokens need {} of KV per GPU on {}; {} available, room "
        "for {}",
        grouped(f.concurrency), f.concurrency == 1 ? "" : "s", grouped(f.context),
        fmt::format("{}", f.kv_needed), replica, fmt::format("{}", f.kv_budget),
        grouped(f.max_concurrency));
}

namespace {

std::string source_of(const ReserveTerm& t, std::string_view modelled) {
    return t.source == TermSource::given ? "given" : std::string(modelled);
}

}  // namespace

void append_fit_figures(Report& rep, const FitResult& f, const Replica& r, const ResolvedModel& rm,
                        const ResolvedGpu& g, const EngineSetup& e) {
    const EngineMemory& m = f.memory;
    const std::string frac = engine_fraction_name(f.engine);
    const std::string gpu_src = g.source + ": memory.driver_reported_bytes";
    const std::string stage_note =
        r.parallel.pp > 1 ? fmt::format(" (stage {}, the limiting one)", f.limiting_stage) : "";
    rep.figures.push_back({"fits", "Verdict", cell_bool(f.fits, "fits", "does not fit"), {},
                           {"starts and max_concurrency >= concurrency",
                            {fmt::format("engine starts: {}", f.starts ? "yes" : "no"),
                             fmt::format("max_concurrency = {}, concurrency = {}",
                                         grouped(f.max_concurrency), grouped(f.concurrency))}},
                           false});
    rep.figures.push_back({"gpu_memory_bytes", "GPU memory (driver total)", cell(m.memory_total),
                           cell_exact(m.memory_total), {"the driver's total", {gpu_src}}});
    if (!f.kv_given) {
        std::string base_label = "total";
        if (f.engine == Engine::sglang) base_label = "(total - CUDA context - comm buffers)";
        if (f.engine == Engine::trtllm)
            base_label = "(total - weights - activations - CUDA context - comm buffers - graphs)";
        rep.figures.push_back(
            {"fraction_bytes", fmt::format("x {} {:.2f}", frac, m.fraction), cell(m.fraction_bytes),
             cell_exact(m.fraction_bytes),
             {fmt::format("{} x {}", frac, base_label),
              {fmt::format("{} = {:.4f}{}", frac, m.fraction,
                           e.utilization_given ? " (--gpu-memory-utilization)"
                                               : " (the engine's default)"),
               fmt::format("{} = {} B", base_label, grouped(m.fraction_base.count()))}}});
    }
    const auto term = [&](const char* key, std::string label, Bytes b, Explanation how) {
        rep.figures.push_back({key, std::move(label), cell(b), cell_exact(b), std::move(how)});
    };
    const bool charged_graphs = (f.engine == Engine::vllm && e.options.vllm.charge_cuda_graphs) ||
                                f.engine == Engine::ideal;
    const std::string in_out_act = f.engine == Engine::sglang   ? " (outside the fraction)"
                                   : f.engine == Engine::trtllm ? " (before the fraction)"
                                                                : "";
    const std::string in_out_ctx =
        f.engine == Engine::ideal ? "" : f.engine == Engine::trtllm ? " (before the fraction)"
                                                                     : " (outside the fraction)";
    const std::string in_out_graphs = charged_graphs ? ""
                                      : f.engine == Engine::trtllm ? " (before the fraction)"
                                                                   : " (outside the fraction)";
    term("weight_bytes_per_gpu", "- weights" + std::string(f.engine == Engine::trtllm ? " (before the fraction)" : ""),
         m.weights,
         {"the tensors (or slices) this rank holds" + stage_note,
          {"model: " + rm.source,
           fmt::format("weight format {} (--weight-dtype)", name(r.weights.format)),
           fmt::format("tp {}, pp {}", r.parallel.tp, r.parallel.pp)}});
    const Reserve res = reserve_on_rank(r, r.layout(), f.limiting_stage, e.budget.reserve);
    term("activation_bytes", "- activation peak" + in_out_act, m.activation,
         {"(residual + max(attention, MLP) intermediates) x tokens x element bytes + logits",
          {fmt::format("tokens = max_num_batched_tokens = {}", res.activation_model.tokens),
           fmt::format("per token {} B, logits {} B", grouped(res.activation_model.per_token.count()),
                       grouped(res.activation_model.logits.count())),
           source_of(res.activation, "modelled as vLLM's profile run measures it (budget.hpp)")}});
    term("cuda_graph_bytes", "- CUDA graphs" + in_out_graphs, m.cuda_graphs,
         {"captured batch sizes x 2 MiB", {source_of(res.cuda_graphs, "modelled (budget.hpp)")}});
    term("cuda_context_bytes", "- CUDA context" + in_out_ctx, m.cuda_context,
         {"the CUDA context of the process", {source_of(res.cuda_context, "700 MiB (budget.hpp)")}});
    term("comm_buffer_bytes", "- communication buffers" + in_out_ctx, m.comm_buffers,
         {"128 MiB per rank of a multi-GPU replica",
          {source_of(res.comm_buffers, "SGLang's reserve rule (budget.hpp)")}});
    rep.figures.push_back(
        {"kv_budget_bytes_per_gpu", "= KV budget per GPU", cell(f.kv_budget), cell_exact(f.kv_budget),
         f.kv_given ? Explanation{"given", {"--kv-memory"}}
                    : Explanation{fmt::format("{} x base - charged terms{}", frac, stage_note),
                                  {fmt::format("charged {} B", grouped(m.charged.count())),
                                   fmt::format("engine {} (--engine)", name(f.engine))}}});
    rep.figures.push_back(
        {"kv_bytes_per_sequence_per_gpu", fmt::format("KV per sequence ({} tokens)", grouped(f.context)),
         cell(f.kv_per_sequence), cell_exact(f.kv_per_sequence),
         {"blocks of block_size tokens each layer holds x block bytes, per GPU",
          {fmt::format("block_size = {} tokens{}", f.block_size,
                       e.block_size_given ? " (--block-size)" : " (the engine's default)"),
           fmt::format("kv dtype {} (--kv-dtype)", name(r.kv.dtype))}}});
    rep.figures.push_back({"kv_bytes_needed_per_gpu",
                           fmt::format("KV needed (x {} sequences)", grouped(f.concurrency)),
                           cell(f.kv_needed), cell_exact(f.kv_needed),
                           {"kv_bytes_per_sequence_per_gpu x concurrency", {}}});
    if (f.shortfall.is_zero())
        rep.figures.push_back({"headroom_bytes_per_gpu", "headroom", cell(f.headroom),
                               cell_exact(f.headroom), {"KV budget - KV needed", {}}});
    else
        rep.figures.push_back({"shortfall_bytes_per_gpu", "shortfall", cell(f.shortfall),
                               cell_exact(f.shortfall), {"KV needed - KV budget", {}}});
    rep.figures.push_back(
        {"kv_tokens_capacity", "KV capacity", f.kv_tokens ? cell_count(*f.kv_tokens, "tokens") : cell_tokens(std::nullopt), {},
         {"the engine's KV token figure (vLLM's \"GPU KV cache size\", SGLang's "
          "max_total_num_tokens, TensorRT-LLM's blocks x tokens_per_block)",
          {fmt::format("engine {}", name(f.engine))}}});
    rep.figures.push_back(
        {"max_concurrency", fmt::format("max concurrency at {} tokens", grouped(f.context)),
         cell_count(f.max_concurrency, "sequences"), {},
         {"whole sequences of the context the cache holds at once (the engine's rule)",
          {fmt::format("engine figure {:.2f}x", f.max_concurrency_exact)}}});
    rep.figures.push_back(
        {"max_context", fmt::format("max context at {} sequences", grouped(f.concurrency)),
         cell_tokens(f.max_context), {},
         {"the longest context each of the sequences can reach in the KV budget, in blocks", {}}});
    rep.figures.push_back({"longest_single_context", "longest single sequence",
                           cell_tokens(f.longest_single_context), {},
                           {"the longest context one sequence alone can reach", {}}});
}

}  // namespace kvplan::cli

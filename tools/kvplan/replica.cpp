#include "replica.hpp"

#include <kvplan/detail/nearest.hpp>
#include <kvplan/error.hpp>

#include "parse.hpp"

namespace kvplan::cli {

Engine parse_engine_flag(const std::string& text) {
    if (text.empty()) return Engine::vllm;
    if (const auto e = parse_engine(text)) return *e;
    throw UsageError("--engine: expected ideal, vllm, sglang or trtllm, found '" + text + "'" +
                     detail::did_you_mean(text, {"ideal", "vllm", "sglang", "trtllm"}));
}

EngineSetup engine_setup(const CommonOptions& o) {
    EngineSetup s;
    s.engine = parse_engine_flag(o.engine);
    if (!o.block_size.empty()) {
        const std::uint64_t b = parse_count(o.block_size, "--block-size");
        if (b > (1U << 20)) usage_error("--block-size", "at most 1048576 tokens", o.block_size);
        s.block_size = static_cast<std::uint32_t>(b);
        s.block_size_given = true;
    }
    if (!o.gpu_memory_utilization.empty()) {
        const double u = parse_fraction(o.gpu_memory_utilization, "--gpu-memory-utilization");
        s.utilization_given = true;
        s.budget.utilization = u;
        s.options.sglang.mem_fraction_static = u;
        s.options.trtllm.free_gpu_memory_fraction = u;
    }
    if (!o.kv_memory.empty()) s.budget.kv_memory_per_gpu = parse_size(o.kv_memory, "--kv-memory");
    switch (s.engine) {
        case Engine::ideal:
            if (!s.block_size_given) s.block_size = 1;
            break;
        case Engine::vllm:
            if (!s.block_size_given) s.block_size = s.options.vllm.block_size;
            s.options.vllm.block_size = s.block_size;
            break;
        case Engine::sglang:
            if (!s.block_size_given) s.block_size = s.options.sglang.page_size;
            s.options.sglang.page_size = s.block_size;
            break;
        case Engine::trtllm:
            if (!s.block_size_given) s.block_size = s.options.trtllm.tokens_per_block;
            s.options.trtllm.tokens_per_block = s.block_size;
            break;
    }
    return s;
}

std::string engine_fraction_name(Engine e) {
    switch (e) {
        case Engine::ideal: return "utilization";
        case Engine::vllm: return "gpu_memory_utilization";
        case Engine::sglang: return "mem_fraction_static";
        case Engine::trtllm: return "free_gpu_memory_fraction";
    }
    return "fraction";
}

}  // namespace kvplan::cli

#include "explain.hpp"

namespace kvplan::cli {

Replica ReplicaInput::replica() const {
    return Replica{.model = model.get(),
                   .gpu = gpu.spec,
                   .parallel = {.tp = layout.tp, .pp = layout.pp},
                   .weights = weights,
                   .kv = kv};
}

std::uint64_t context_or_default(const CommonOptions& o, const Model& m) {
    if (!o.context.empty()) return parse_tokens(o.context, "--context");
    if (m.config().max_position_embeddings != 0) return m.config().max_position_embeddings;
    usage_error("--context", "a context length (the model states no max_position_embeddings)", "");
}

ReplicaInput read_replica_input(const CommonOptions& o, const Context& ctx) {
    // Flags first, so that a usage error is reported before any file is read.
    const LayoutInput layout = parse_layout(o);
    const KvFormat kv = parse_kv_dtype_flag(o.kv_dtype, "--kv-dtype");
    const WeightOptions weights = weight_options(o);
    const EngineSetup engine = engine_setup(o);
    const std::uint64_t concurrency =
        o.concurrency.empty() ? 1 : parse_count(o.concurrency, "--concurrency");
    if (!o.context.empty()) (void)parse_tokens(o.context, "--context");
    if (o.gpu.empty() && !engine.budget.kv_memory_per_gpu)
        usage_error("--gpu", "a GPU id or spec path (kvplan list gpus)", "");
    ReplicaInput in{resolve_model(o.model, ctx, "--model", import_options(o)), resolve_gpu(o.gpu, ctx), layout, kv, weights,
                    engine, 0, concurrency};
    in.context = context_or_default(o, in.model.get());
    (void)make_layout(in.model.get(), layout);  // InvalidLayout before any figure
    return in;
}

}  // namespace kvplan::cli

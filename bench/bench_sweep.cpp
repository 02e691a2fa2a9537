// Evaluations per second of a planning sweep over models x GPUs x tp x KV dtypes x contexts x
// concurrencies, through the library and through a plain loop doing the same arithmetic inline.
// One evaluation: the paged bytes of one sequence on the fullest rank, the bytes of the whole
// batch, whether it fits the rank's KV budget, and how many such sequences would.

#include <benchmark/benchmark.h>

#include <array>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <kvplan/budget.hpp>
#include <kvplan/gpu.hpp>
#include <kvplan/hf_config.hpp>
#include <kvplan/kvplan.hpp>
#include <kvplan/roofline.hpp>
#include <string>
#include <vector>

using namespace kvplan;

namespace {

constexpr std::array kv_dtypes{KvDtype::bf16, KvDtype::fp8_e4m3, KvDtype::int4};
constexpr std::array<std::uint32_t, 4> tps{1, 2, 4, 8};
constexpr std::array<std::uint64_t, 4> contexts{1024, 8192, 32768, 131072};
constexpr std::array<std::uint64_t, 4> concurrencies{1, 16, 64, 256};
constexpr std::uint32_t block = 16;

/// The (model, GPU, tp, dtype) cells of the grid with their KV budget per rank (vLLM's default
/// utilization, weights and the modelled reserve, from budget.hpp); contexts and concurrencies
/// vary inside a cell.
struct Cell {
    const Model* model;
    Layout layout;
    KvFormat kv;
    Bytes budget;
    DecodeCosts decode;  ///< the roofline's per-replica costs
    std::array<std::uint64_t, max_cache_specs> layers_of_spec;  ///< for the inline loop
};

std::array<std::uint64_t, max_cache_specs> count_layers(const ModelConfig& m) {
    std::array<std::uint64_t, max_cache_specs> count{};
    for (std::uint32_t i = 0; i < m.layers.num_layers; ++i) ++count[m.layers.spec_of_layer[i]];
    return count;
}

std::vector<Cell> make_cells() {
    std::vector<Cell> cells;
    for (const Model* m : presets::all)
        for (const GpuSpec* g : gpus::all)
            for (std::uint32_t tp : tps)
                for (KvDtype d : kv_dtypes) {
                    try {
                        const Replica r{.model = *m, .gpu = *g, .parallel = {.tp = tp}, .kv = d};
                        const ReplicaBudget b = replica_budget(r, {.context = 1, .concurrency = 1});
                        cells.push_back({m, r.layout(), d, b.stages[0].kv_budget, decode_costs(r),
                                         count_layers(m->config())});
                    } catch (const InvalidLayout&) {
                    }
                }
    return cells;
}

const std::vector<Cell>& cells();

/// Evaluations in one pass over the grid.
std::size_t grid_points() { return cells().size() * contexts.size() * concurrencies.size(); }

const std::vector<Cell>& cells() {
    static const std::vector<Cell> c = make_cells();
    return c;
}

/// One evaluation of the grid point (cell, ctx, conc), nothing hoisted out of it.
struct Answer {
    Bytes batch;
    std::uint64_t sequences;
    bool fits;
};

Answer evaluate(const Cell& c, std::uint64_t ctx, std::uint64_t conc) {
    const Shard s = c.layout.stage(0);
    // What sequences_that_fit computes, from the one size: how many whole sequences fit.
    const Bytes each = reserved_per_sequence(*c.model, c.kv, ctx, block, s);
    const Bytes batch = each * conc;
    return {batch, c.budget / each, batch <= c.budget};
}

void library_sweep(benchmark::State& state) {
    std::uint64_t evals = 0;
    for (auto _ : state) {
        for (const Cell& c : cells())
            for (std::uint64_t ctx : contexts)
                for (std::uint64_t conc : concurrencies)
                    benchmark::DoNotOptimize(evaluate(c, ctx, conc));
        evals += cells().size() * contexts.size() * concurrencies.size();
    }
    state.SetItemsProcessed(static_cast<std::int64_t>(evals));
    state.counters["points"] = static_cast<double>(grid_points());
}
BENCHMARK(library_sweep)->Unit(benchmark::kMillisecond);

/// The same, plus the decode step's roofline lower bound at that batch and context.
void library_sweep_with_roofline(benchmark::State& state) {
    std::uint64_t evals = 0;
    for (auto _ : state) {
        for (const Cell& c : cells())
            for (std::uint64_t ctx : contexts)
                for (std::uint64_t conc : concurrencies) {
                    benchmark::DoNotOptimize(evaluate(c, ctx, conc));
                    benchmark::DoNotOptimize(decode_point(c.decode, conc, ctx));
                }
        evals += cells().size() * contexts.size() * concurrencies.size();
    }
    state.SetItemsProcessed(static_cast<std::int64_t>(evals));
    state.counters["points"] = static_cast<double>(grid_points());
}
BENCHMARK(library_sweep_with_roofline)->Unit(benchmark::kMillisecond);

// The same answers computed inline, the way one would without the library: count the shard's
// layers of each cache shape, bytes per token of each shape from heads, dimensions and element
// bits (fp8/bf16 unscaled, int4 with one fp32 scale per head vector), blocks rounded up, windows
// capping sliding layers; plain unchecked uint64 and double arithmetic. What depends only on the
// cell (layers of each shape, and the roofline's weight bytes and matmul parameters) is hoisted
// per cell, as DecodeCosts hoists it; what varies per point is computed inline.
std::uint64_t inline_vector_bytes(KvDtype d, std::uint64_t elements) {
    const std::uint64_t bits = d == KvDtype::bf16 ? 16 : d == KvDtype::fp8_e4m3 ? 8 : 4;
    const std::uint64_t scale_bits = d == KvDtype::int4 ? 32 : 0;
    return (elements * bits + scale_bits + 7) / 8;
}

struct InlineSizes {
    std::uint64_t reserved;  ///< paged bytes of one sequence
    std::uint64_t used;      ///< its bytes without paging (what a decode step reads)
    double attention;        ///< attention FLOPs of one token attending to it
};

InlineSizes inline_sizes(const Cell& c, std::uint64_t ctx) {
    const ModelConfig& m = c.model->config();
    const std::uint32_t tp = c.layout.tp();
    const std::array<std::uint64_t, max_cache_specs>& count = c.layers_of_spec;
    const double heads = static_cast<double>(m.num_heads / tp);
    InlineSizes out{0, 0, 0.0};
    for (std::uint32_t k = 0; k < m.layers.num_specs; ++k) {
        const CacheSpec& sp = m.layers.specs[k];
        std::uint64_t per_token = 0, blocks = 0, kept = ctx;
        double attention_dims = 0.0;
        switch (sp.kind) {
            case CacheKind::full_attention:
            case CacheKind::sliding_window: {
                const std::uint64_t kv_heads = tp >= sp.kv_heads ? 1 : sp.kv_heads / tp;
                per_token = kv_heads * (inline_vector_bytes(c.kv.dtype, sp.k_head_dim) +
                                        inline_vector_bytes(c.kv.dtype, sp.v_head_dim));
                attention_dims = sp.k_head_dim + sp.v_head_dim;
                if (sp.kind == CacheKind::sliding_window && ctx > sp.window) {
                    blocks = (ctx - 1) / block + 1 - (ctx - sp.window) / block;
                    kept = sp.window;
                } else {
                    blocks = (ctx + block - 1) / block;
                }
                break;
            }
            case CacheKind::mla_latent:
                per_token = inline_vector_bytes(c.kv.dtype, sp.kv_lora_rank + sp.qk_rope_head_dim);
                attention_dims = 2.0 * sp.kv_lora_rank + sp.qk_rope_head_dim;
                blocks = (ctx + block - 1) / block;
                break;
            default:
                kept = 0;
                break;
        }
        const std::uint64_t state =
            sp.kind == CacheKind::constant_state ? (sp.state_bytes.count() + tp - 1) / tp : 0;
        out.reserved += count[k] * (per_token * blocks * block + state);
        out.used += count[k] * (per_token * kept + state);
        out.attention += 2.0 * heads * attention_dims * static_cast<double>(kept) *
                         static_cast<double>(count[k]);
    }
    return out;
}

struct InlineAnswer {
    std::uint64_t batch;
    std::uint64_t sequences;
    bool fits;
    double step_s;  ///< the decode step's lower bound, seconds
    bool compute_bound;
    double tokens_per_s;
    double tokens_per_s_per_gpu;
};

InlineAnswer inline_evaluate(const Cell& c, std::uint64_t ctx, std::uint64_t conc) {
    const InlineSizes z = inline_sizes(c, ctx);
    const std::uint64_t batch = z.reserved * conc;
    // Roofline: weights read (routed experts in the share the batch touches) plus the batch's KV
    // at peak bandwidth, against matmul and attention FLOPs at peak bf16 throughput.
    const DecodeCosts::Stage& st = c.decode.stages[0];
    const MoeShape& moe = c.model->config().moe;
    double weights = static_cast<double>(st.weights.dense.count());
    if (moe.experts != 0) {
        const double miss = 1.0 - static_cast<double>(moe.experts_per_token) / moe.experts;
        double p = 1.0, base = miss;
        for (std::uint64_t b = conc; b != 0; b >>= 1) {
            if (b & 1U) p *= base;
            base *= base;
        }
        weights += std::floor(static_cast<double>(st.weights.experts.count()) * (1.0 - p));
    }
    const double bytes = weights + static_cast<double>(z.used * conc);
    const double flops = 2.0 * (st.matmul.dense + st.matmul.routed) * static_cast<double>(conc) +
                         z.attention * static_cast<double>(conc);
    const double memory_s = bytes / c.decode.replica.gpu.memory_bandwidth.in(B_per_s);
    const double compute_s = flops / c.decode.replica.gpu.dense(ComputeDtype::bf16)->in(FLOP_per_s);
    const double step_s = memory_s > compute_s ? memory_s : compute_s;
    const double tokens_per_s = static_cast<double>(conc) / step_s;
    return {batch,
            z.reserved == 0 ? ~0ULL : c.budget.count() / z.reserved,
            batch <= c.budget.count(),
            step_s,
            compute_s > memory_s,
            tokens_per_s,
            tokens_per_s / c.layout.tp()};
}

void inline_sweep(benchmark::State& state) {
    std::uint64_t evals = 0;
    for (auto _ : state) {
        for (const Cell& c : cells())
            for (std::uint64_t ctx : contexts)
                for (std::uint64_t conc : concurrencies)
                    benchmark::DoNotOptimize(inline_evaluate(c, ctx, conc));
        evals += cells().size() * contexts.size() * concurrencies.size();
    }
    state.SetItemsProcessed(static_cast<std::int64_t>(evals));
    state.counters["points"] = static_cast<double>(grid_points());
}
BENCHMARK(inline_sweep)->Unit(benchmark::kMillisecond);

/// The library and the inline loop must agree, or the comparison means nothing.
[[maybe_unused]] const bool answers_agree = [] {
    for (const Cell& c : cells())
        for (std::uint64_t ctx : contexts)
            for (std::uint64_t conc : concurrencies) {
                const Answer a = evaluate(c, ctx, conc);
                const DecodePoint d = decode_point(c.decode, conc, ctx);
                const double step = d.step.in(seconds);
                const InlineAnswer b = inline_evaluate(c, ctx, conc);
                if (a.batch.count() != b.batch || a.sequences != b.sequences || a.fits != b.fits ||
                    std::abs(step - b.step_s) > 1e-12 * step ||
                    (d.bound == Bound::compute) != b.compute_bound ||
                    std::abs(d.tokens_per_s_per_gpu - b.tokens_per_s_per_gpu) >
                        1e-12 * b.tokens_per_s_per_gpu) {
                    std::fprintf(stderr, "inline loop disagrees on %s\n",
                                 std::string(c.model->name()).c_str());
                    std::abort();
                }
            }
    return true;
}();

}  // namespace

// `plan` for a 70B model: every bundled GPU, 1 to 8 GPUs, every tp x pp layout of that count, the
// replica budget of each (weights per rank, reserve, KV, the answers) and, where it fits, the
// decode bound at the target: a 8,192-token p95 context and 32 sequences.
void plan_70b(benchmark::State& state) {
    const Workload w{.context = 8192, .concurrency = 32};
    std::uint64_t replicas = 0;
    for (auto _ : state) {
        std::uint32_t fitting = 0;
        for (const GpuSpec* g : gpus::all)
            for (std::uint32_t n = 1; n <= 8; ++n)
                for (std::uint32_t tp = 1; tp <= n; ++tp) {
                    if (n % tp != 0) continue;
                    const Replica r{.model = presets::llama_3_70b,
                                    .gpu = *g,
                                    .parallel = {.tp = tp, .pp = n / tp},
                                    .kv = KvDtype::bf16};
                    try {
                        // The budget, and for a replica that fits its TPOT bound (plan ranks by
                        // it).
                        if (replica_budget(r, w).fits) {
                            ++fitting;
                            benchmark::DoNotOptimize(
                                decode_point(decode_costs(r), w.concurrency, w.context));
                        }
                        ++replicas;
                    } catch (const InvalidLayout&) {
                        // tp 3, 5, 6, 7 do not divide 64 heads: not a layout of this model.
                    }
                }
        benchmark::DoNotOptimize(fitting);
    }
    state.counters["replicas"] =
        benchmark::Counter(static_cast<double>(replicas) / static_cast<double>(state.iterations()));
}
BENCHMARK(plan_70b)->Unit(benchmark::kMillisecond);

// Importing the largest bundled config.json: read the file, parse the JSON, map and validate it.
void import_largest_config(benchmark::State& state) {
    std::filesystem::path file;
    for (const auto& e :
         std::filesystem::directory_iterator(std::filesystem::path(KVPLAN_CONFIG_DIR) / "models"))
        if (e.path().extension() == ".json" &&
            (file.empty() || e.file_size() > std::filesystem::file_size(file)))
            file = e.path();
    state.SetLabel(file.filename().string() + ", " +
                   std::to_string(std::filesystem::file_size(file)) + " B");
    for (auto _ : state) benchmark::DoNotOptimize(load_hf_config(file));
}
BENCHMARK(import_largest_config)->Unit(benchmark::kMicrosecond);

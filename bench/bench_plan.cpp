// plan_replicas over the parallel layouts people run: DeepSeek-V3 at 32k tokens x 256 sequences on
// every bundled GPU, 1 to 64 GPUs, every tp / pp / dp / ep / dcp split vLLM takes, 2 KV dtypes and
// 2 weight formats.

#include <benchmark/benchmark.h>

#include <cstdint>
#include <filesystem>
#include <kvplan/gpu.hpp>
#include <kvplan/hf_config.hpp>
#include <kvplan/plan.hpp>
#include <optional>

using namespace kvplan;

namespace {

SearchSpace full_grid() {
    SearchSpace s;
    for (const GpuSpec* g : gpus::all) s.gpus.push_back(*g);
    s.max_gpus = 64;
    s.kv_formats = {KvFormat{KvDtype::bf16}, KvFormat{KvDtype::fp8_e4m3}};
    // The checkpoint's fp8 (128 x 128 blocks) and bf16.
    s.weights = {std::nullopt, WeightOptions{.format = WeightFormat::bf16}};
    return s;
}

void plan(benchmark::State& state, Ranking ranking) {
    const Model m = load_bundled_model(std::filesystem::path(KVPLAN_CONFIG_DIR), "deepseek-v3");
    const SearchSpace space = full_grid();
    const Demand demand{.context = 32000, .concurrency = 256};
    PlanAnswer last;
    for (auto _ : state) {
        last = plan_replicas(m, space, {}, demand, ranking);
        benchmark::DoNotOptimize(last.fits.data());
    }
    state.counters["layouts"] = static_cast<double>(last.layouts);
    state.counters["candidates"] = static_cast<double>(last.searched);
    state.counters["fitting"] = static_cast<double>(last.fitting);
}

}  // namespace

// Fewest GPUs first: the search goes up in GPU count and stops at the count where the 50 best are
// settled (PlanAnswer::complete is false then).
void plan_deepseek_v3_fewest_gpus(benchmark::State& state) { plan(state, Ranking::fewest_gpus); }
BENCHMARK(plan_deepseek_v3_fewest_gpus)->Unit(benchmark::kMillisecond);

// Fastest first: every candidate of the grid is considered, largest replicas first; one whose
// decode bound cannot beat the 50 fastest fits found so far is skipped before its engine is
// evaluated.
void plan_deepseek_v3_fastest(benchmark::State& state) { plan(state, Ranking::fastest); }
BENCHMARK(plan_deepseek_v3_fastest)->Unit(benchmark::kMillisecond);

namespace {

// One replica's verdict, as a caller without a prepared layout or engine asks it: Llama-3-70B on
// 4 x H100 at 8k tokens x 48 sequences, the cache and the verdict only (no context search, no
// decode bound, no latency estimate), as a search's candidate or a one-off kvplan.fit costs.
// `prepared`: the same with prepare_layout and prepare_engine hoisted out, as the Python
// module's Deployment does.
void evaluate_llama_3_70b(benchmark::State& state, bool prepared) {
    const Deployment d{
        .model = load_bundled_model(std::filesystem::path(KVPLAN_CONFIG_DIR), "llama-3-70b"),
        .gpu = gpus::h100_sxm,
        .parallel = {.tp = 4}};
    const Demand demand{.context = 8192, .concurrency = 48};
    const EvaluateOptions o{.contexts = false, .decode = false};
    const PreparedLayout layout = prepare_layout(d);
    const PreparedEngine engine = prepare_engine(d, layout);
    for (auto _ : state) {
        const ReplicaAnswer a =
            prepared ? evaluate(d, demand, o, layout, engine) : evaluate(d, demand, o);
        benchmark::DoNotOptimize(a.max_concurrency);
    }
}

}  // namespace

void evaluate_unprepared(benchmark::State& state) { evaluate_llama_3_70b(state, false); }
BENCHMARK(evaluate_unprepared)->Unit(benchmark::kMicrosecond);

void evaluate_prepared(benchmark::State& state) { evaluate_llama_3_70b(state, true); }
BENCHMARK(evaluate_prepared)->Unit(benchmark::kMicrosecond);

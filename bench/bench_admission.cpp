// Admission decisions per second: a scheduler loop over 128 request slots on gpt-oss-120b's vLLM
// pool (12 GiB of KV: 21,845 blocks, a sliding and a full group), more than the pool holds at
// once, so admissions are refused and decode steps preempt. Each decision is one call:
// admit a new request into an empty slot, grow a running one by its next step (one decode token),
// or release one that finished. Request lengths cycle through a fixed pseudo-random table
// (prompts 1 to 8,000 tokens, outputs 1 to 190), so every call takes a data-dependent path.

#include <benchmark/benchmark.h>

#include <array>
#include <cstdint>
#include <kvplan/admission.hpp>
#include <kvplan/admission/engine_pools.hpp>
#include <kvplan/presets.hpp>

using namespace kvplan;

namespace {

struct Shape {
    std::uint64_t prompt, max_new;
};

constexpr std::array<Shape, 256> make_shapes() {
    std::array<Shape, 256> s{};
    std::uint64_t x = 0x9E3779B97F4A7C15ULL;
    for (Shape& e : s) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        e.prompt = 1 + x % 8000;
        e.max_new = 1 + (x >> 32) % 190;
    }
    return s;
}
constexpr std::array<Shape, 256> shapes = make_shapes();

constexpr VllmOptions vllm_8k{.max_model_len = 8192, .max_num_batched_tokens = 8192};
constexpr BlockPoolSpec gpt_oss =
    vllm_block_pool(vllm_kv_cache(presets::gpt_oss_120b, KvDtype::bf16,
                                  Layout{presets::gpt_oss_120b, {}}, 12 * GiB, vllm_8k),
                    vllm_8k);

void scheduler_loop(benchmark::State& state, AdmitPolicy policy) {
    BlockPool pool(gpt_oss, policy);
    std::array<RequestBlocks, 128> slots{};
    std::size_t next = 0, slot = 0;
    std::uint64_t admitted = 0, refused = 0, preempted = 0;
    for (auto _ : state) {
        RequestBlocks& r = slots[slot];
        slot = (slot + 1) % slots.size();
        if (!r.running) {
            const Shape& s = shapes[next % shapes.size()];
            const AdmitResult a = pool.admit(r, s.prompt, s.max_new);
            benchmark::DoNotOptimize(a);
            if (a) {
                ++next;
                ++admitted;
            } else {
                ++refused;
            }
        } else if (r.tokens + 1 <= r.prompt + r.max_new - 1) {
            const GrowResult g = pool.grow(r);
            benchmark::DoNotOptimize(g);
            if (!g) {
                benchmark::DoNotOptimize(pool.release(r));  // preempted
                ++preempted;
            }
        } else {
            benchmark::DoNotOptimize(pool.release(r));
        }
    }
    state.SetItemsProcessed(state.iterations());
    // Shares of the decisions.
    const auto share = [](std::uint64_t n) {
        return benchmark::Counter(static_cast<double>(n), benchmark::Counter::kAvgIterations);
    };
    state.counters["admits"] = share(admitted);
    state.counters["refusals"] = share(refused);
    state.counters["preemptions"] = share(preempted);
}

void admission_engine(benchmark::State& state) { scheduler_loop(state, AdmitPolicy::engine); }
BENCHMARK(admission_engine);

void admission_no_preemption(benchmark::State& state) {
    scheduler_loop(state, AdmitPolicy::no_preemption);
}
BENCHMARK(admission_no_preemption);

}  // namespace

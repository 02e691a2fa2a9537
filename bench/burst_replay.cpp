// Replays the bursts of tests/data/latency_measurements.json (every request sent at once) through
// the engine's scheduler step by step, each step at the estimate's cost, beside the estimate's
// closed form (estimate_latency: waves of the running cap) and the measurement.
//
//   kvplan_burst_replay [--prefix-cache] [ID-SUBSTRING]
//
// What it checks: whether the waves of the closed form follow what the scheduler does with the
// same step costs. A gap between the replay and the closed form is the closed form's; a gap between
// the replay and the measurement is the step's cost (or the row's reading), not the scheduling.
//
// The schedulers, as their sources run them:
// - vLLM (vllm/v1/core/sched/scheduler.py, Scheduler.schedule): the running requests first, in
//   order, each its next token or the next chunk of its prompt within what is left of
//   max_num_batched_tokens, each allocating the KV blocks those tokens need
//   (KVCacheManager.allocate_slots); when the pool has none left the newest running request is
//   preempted (_preempt_request: its blocks freed, num_computed_tokens reset, back at the head of
//   the waiting queue), and so on until the allocation succeeds or the request itself was
//   preempted. Then, only if nothing was preempted in the step ("if not preempted_reqs"), waiting
//   requests in arrival order while the budget, max_num_seqs and free blocks for the chunk being
//   scheduled last: a prompt is admitted by its chunk's blocks, not its whole sequence's.
//   --prefix-cache keeps a preempted request's computed tokens (the prefix cache, on by default
//   in V1, finds its blocks again unless they were evicted): the replay then bounds the
//   recompute from below, and without it from above.
// - TensorRT-LLM: the capacity scheduler's default policy GUARANTEED_NO_EVICT
//   (cpp/tensorrt_llm/batch_manager/capacityScheduler.cpp, GuaranteedNoEvictScheduler) admits a
//   request only while the blocks for its whole sequence, prompt and max_tokens, are free, and
//   never preempts; the micro-batch scheduler packs generation and context chunks within
//   max_num_tokens (tokens_per_block 32, tensorrt_llm/llmapi/llm_args.py KvCacheConfig).
// SGLang's bursts (prefill passes apart from decode steps) and attention data parallelism are not
// replayed; a hybrid model's pool (several KV cache groups, vLLM's raised block size) is replayed
// as one pool of its blocks, which only approximates its admission.
//
// A step's cost is the estimate's (detail::step): its decodes at the mean context I + O / 2 and
// its prompt tokens as a share of prompts of I tokens, the defaults of the row's GPU family. TTFT
// adds the engine's request overhead, as the estimate's does.

#include <cstdio>
#include <cstdlib>
#include <deque>
#include <kvplan/hf_config.hpp>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "latency_fit.hpp"

using namespace kvplan;
using namespace kvplan::testing;

namespace {

struct Request {
    std::uint64_t computed = 0;  ///< prompt tokens (and, once prefilled, output tokens) in the KV
    std::uint64_t out = 0;       ///< output tokens produced
    std::uint64_t blocks = 0;    ///< KV blocks held
    bool prefilled = false;
    double first = -1.0;  ///< time of the first token, s
    double done = -1.0;   ///< time of the last token, s
};

struct Replay {
    double tpot_ms = 0.0, ttft_ms = 0.0, tokens_per_s = 0.0;
    std::uint64_t pool_blocks = 0, block_tokens = 0, steps = 0, preemptions = 0, recomputed = 0;
};

/// The engine's KV pool for the row's release and options.
struct Pool {
    std::uint64_t blocks = 0;
    std::uint64_t block_tokens = 16;
    std::uint64_t sequence_cap = 0;  ///< max_num_seqs, max_batch_size; 0: none
};

Pool pool_of(const MeasuredRow& row, Engine engine) {
    const LatencyObservation& o = row.obs;
    const Replica& r = o.replica;
    const Load& l = o.load;
    const std::uint64_t sequence = l.prompt_tokens + l.output_tokens;
    // A run that sets its own memory fraction or cap: the cap the table derived, whole sequences.
    if (l.max_running) {
        const std::uint64_t bt = engine == Engine::vllm ? 16 : 32;
        return {*l.max_running * ((sequence + bt - 1) / bt), bt, *l.max_running};
    }
    // As running_cap takes it (roofline/estimate.hpp): the release's pool under vLLM.
    BudgetOptions b{.reserve = {.max_num_batched_tokens = l.max_num_batched_tokens,
                                .sampler = VllmSampler::plain}};
    EngineOptions opts;
    const EngineVersion release = vllm_release_or_newest(o.options.vllm_release);
    if (const auto d = vllm_release_defaults(release);
        d && o.options.vllm_release && engine == Engine::vllm) {
        b.utilization = d->gpu_memory_utilization;
        opts.vllm = vllm_release_options(opts.vllm, release);
        const VllmBatchDefaults then = vllm_batch_defaults(r.gpu, *d);
        if (!b.reserve.max_num_batched_tokens)
            b.reserve.max_num_batched_tokens = then.max_num_batched_tokens;
        if (!opts.vllm.max_num_seqs) opts.vllm.max_num_seqs = then.max_num_seqs;
    }
    const EngineReport rep = engine_report(engine, r, sequence, b, opts, release);
    const std::uint64_t cap = rep.summary.sequence_cap;
    if (engine == Engine::vllm) return {rep.vllm.usable_blocks, rep.vllm.block_size, cap};
    const std::uint64_t bt = rep.trtllm.tokens_per_block;
    return {rep.summary.tokens.value_or(0) / bt, bt, cap};
}

Replay replay(const MeasuredRow& row, bool prefix_cache) {
    const LatencyObservation& o = row.obs;
    const Replica& r = o.replica;
    const Load& l = o.load;
    const Engine engine = engine_of(r.parallel.rules);
    const bool vllm = engine == Engine::vllm;
    const EstimateParams p = default_params(row.family).params;
    RooflineOptions bound = o.options;
    bound.efficiency.reset();
    const DecodeCosts c = decode_costs(r, bound);
    const std::uint64_t I = l.prompt_tokens, O = l.output_tokens, N = l.concurrency;
    const std::uint64_t budget =
        l.max_num_batched_tokens.value_or(default_token_budget(r.gpu, r.parallel.rules));
    const Pool pool = pool_of(row, engine);
    Replay out;
    out.pool_blocks = pool.blocks;
    out.block_tokens = pool.block_tokens;
    const std::uint64_t bt = pool.block_tokens;
    const auto blocks_for = [bt](std::uint64_t tokens) { return (tokens + bt - 1) / bt; };
    // The sequence cap binds beside the pool (the pool alone bounds what runs otherwise).
    const std::uint64_t max_running =
        pool.sequence_cap != 0 ? pool.sequence_cap : std::uint64_t{1} << 40;

    std::vector<Request> req(N);
    std::deque<std::size_t> waiting;
    for (std::size_t i = 0; i < N; ++i) waiting.push_back(i);
    std::vector<std::size_t> running;
    std::uint64_t free_blocks = out.pool_blocks;
    std::map<std::pair<std::uint64_t, std::uint64_t>, double> cost;
    const auto step_time = [&](std::uint64_t decodes, std::uint64_t prompt) {
        const auto key = std::make_pair(decodes, (prompt + 15) / 16);
        if (const auto it = cost.find(key); it != cost.end()) return it->second;
        detail::PrefillPart pre{};
        if (prompt > 0) pre = {1, I, static_cast<double>(prompt) / static_cast<double>(I), 1};
        const double t = detail::step(c, decodes, I + O / 2, pre, p).time.in(seconds);
        cost.emplace(key, t);
        return t;
    };
    double now = 0.0;
    std::size_t finished = 0;
    while (finished < N && out.steps < 50'000'000) {
        std::uint64_t left = budget, decodes = 0, prompt = 0;
        std::vector<std::pair<std::size_t, std::uint64_t>> scheduled;
        bool preempted = false;
        for (std::size_t k = 0; k < running.size() && left > 0; ++k) {
            const std::size_t i = running[k];
            Request& q = req[i];
            const std::uint64_t want = q.prefilled ? 1 : std::min(I - q.computed, left);
            const std::uint64_t held = blocks_for(q.computed + want);
            const std::uint64_t need = vllm && held > q.blocks ? held - q.blocks : 0;
            bool self = false;
            while (need > free_blocks) {
                const std::size_t v = running.back();
                running.pop_back();
                free_blocks += req[v].blocks;
                req[v].blocks = 0;
                if (!prefix_cache) {
                    out.recomputed += req[v].computed;
                    req[v].computed = 0;
                    req[v].prefilled = false;
                    req[v].out = 0;
                }
                waiting.push_front(v);
                preempted = true;
                ++out.preemptions;
                if (v == i) {
                    self = true;
                    break;
                }
            }
            if (self) break;
            free_blocks -= need;
            q.blocks += need;
            scheduled.emplace_back(i, want);
            left -= want;
            (q.prefilled ? decodes : prompt) += want;
        }
        if (!preempted) {
            while (!waiting.empty() && left > 0 && running.size() < max_running) {
                const std::size_t i = waiting.front();
                Request& q = req[i];
                const std::uint64_t want = q.prefilled ? 1 : std::min(I - q.computed, left);
                // vLLM: the blocks of what it computes now; TensorRT-LLM: its whole sequence.
                const std::uint64_t held = vllm ? blocks_for(q.computed + want) : blocks_for(I + O);
                if (held > free_blocks + q.blocks) break;
                free_blocks -= held - q.blocks;
                q.blocks = held;
                waiting.pop_front();
                running.push_back(i);
                scheduled.emplace_back(i, want);
                left -= want;
                (q.prefilled ? decodes : prompt) += want;
            }
        }
        if (scheduled.empty()) break;  // the pool holds no request at all
        now += step_time(decodes, prompt);
        ++out.steps;
        for (const auto& [i, n] : scheduled) {
            Request& q = req[i];
            q.computed += n;
            if (q.prefilled) {
                ++q.out;
            } else if (q.computed >= I) {
                q.prefilled = true;
                q.out = 1;
                if (q.first < 0.0) q.first = now;
            }
        }
        std::vector<std::size_t> still;
        for (const std::size_t i : running) {
            Request& q = req[i];
            if (q.prefilled && q.out >= O) {
                q.done = now;
                free_blocks += q.blocks;
                q.blocks = 0;
                ++finished;
            } else {
                still.push_back(i);
            }
        }
        running = std::move(still);
    }
    if (finished < N) return out;
    const double overhead = request_overhead(p, r.parallel.rules, r.model).in(seconds);
    for (const Request& q : req) {
        out.ttft_ms += 1e3 * (q.first + overhead) / static_cast<double>(N);
        if (O > 1)
            out.tpot_ms +=
                1e3 * (q.done - q.first) / static_cast<double>(O - 1) / static_cast<double>(N);
    }
    out.tokens_per_s = static_cast<double>(N * O) / now;
    return out;
}

}  // namespace

int main(int argc, char** argv) {
    bool prefix_cache = false;
    std::string filter;
    for (int a = 1; a < argc; ++a) {
        const std::string arg = argv[a];
        if (arg == "--prefix-cache")
            prefix_cache = true;
        else if (!arg.empty() && arg[0] != '-')
            filter = arg;
        else {
            std::fprintf(stderr, "usage: kvplan_burst_replay [--prefix-cache] [ID-SUBSTRING]\n");
            return 2;
        }
    }
    std::printf(
        "| row | set | pool | replay TPOT / TTFT / tok/s (preempted) "
        "| estimate | measured |\n|---|---|---|---|---|---|\n");
    for (const MeasuredRow& row : latency_table()) {
        const LatencyObservation& o = row.obs;
        if (o.load.kind != LoadKind::burst || row.id.find(filter) == std::string::npos) continue;
        if (o.replica.parallel.rules == ParallelRules::sglang || o.replica.layout().dp() > 1) {
            std::printf("| %s | %s | not replayed (SGLang or attention dp) | | | |\n",
                        row.id.c_str(), row.set.c_str());
            continue;
        }
        const Replay s = replay(row, prefix_cache);
        const LatencyEstimate e = estimate_with_defaults(row);
        const auto ms = [](const std::optional<Seconds>& t) {
            return t ? t->in(milliseconds) : 0.0;
        };
        std::printf(
            "| %s | %s | %llu blocks of %llu tokens | %.1f ms / %.0f ms / %.0f (%llu) "
            "| %.1f ms / %.0f ms / %.0f | %.1f ms / %.0f ms / %.0f |\n",
            row.id.c_str(), row.set.c_str(), static_cast<unsigned long long>(s.pool_blocks),
            static_cast<unsigned long long>(s.block_tokens), s.tpot_ms, s.ttft_ms, s.tokens_per_s,
            static_cast<unsigned long long>(s.preemptions), e.tpot.in(milliseconds),
            e.ttft.in(milliseconds), e.tokens_per_s, ms(o.itl), ms(o.ttft),
            row.throughput.value_or(0.0));
    }
    return 0;
}

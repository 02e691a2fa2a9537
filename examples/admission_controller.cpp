// A continuous-batching scheduler on kvplan's block pool: the pool vLLM builds for gpt-oss-120b in
// the KV memory a serving process measured, and requests admitted, grown a token a step and
// released as vLLM's scheduler does. The pool accounts the way the engine does: one pool of
// blocks with a null block, a sliding-window group that holds only the window's blocks and a
// full-attention group that grows. When a decode step finds the pool dry, the newest request is
// preempted and recomputed later.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <kvplan/admission.hpp>               // BlockPool, admit / grow / release: core-light
#include <kvplan/admission/engine_pools.hpp>  // the pool vLLM builds for a model (planning tier)
#include <kvplan/presets.hpp>
#include <vector>

using namespace kvplan;

namespace {

struct Request {
    int id;
    std::uint64_t prompt_tokens;
    std::uint64_t output_tokens;
    std::uint64_t generated = 0;  // kept across a preemption: recomputed as prompt
};

struct Running {
    Request req;
    RequestBlocks blocks;  // this request's share of the pool, filled by admit
};

}  // namespace

int main(int argc, char** argv) {
    // The KV memory this process measured (vLLM's "Available KV cache memory"), in MiB.
    const std::uint64_t kv_mib = argc > 1 ? std::strtoull(argv[1], nullptr, 10) : 288;
    const Model& model = presets::gpt_oss_120b;
    const VllmOptions vllm{.max_model_len = 8192, .max_num_batched_tokens = 8192};
    const VllmKvCache cache =
        vllm_kv_cache(model, KvDtype::bf16, Layout{model, {}}, kv_mib * MiB, vllm);
    BlockPool pool(vllm_block_pool(cache, vllm));  // AdmitPolicy::engine: vLLM's own rule
    std::printf("%s, bf16 KV, %llu MiB: %llu blocks of %llu B (%s %llu + %s), %llu usable\n",
                model.name().c_str(), static_cast<unsigned long long>(kv_mib),
                static_cast<unsigned long long>(cache.num_blocks),
                static_cast<unsigned long long>(cache.bytes_per_block.count()),
                name(pool.spec().groups[0].kind),
                static_cast<unsigned long long>(pool.spec().groups[0].span),
                name(pool.spec().groups[1].kind),
                static_cast<unsigned long long>(pool.spec().usable_blocks()));

    std::deque<Request> waiting{{1, 700, 200},  {2, 1500, 100}, {3, 300, 400}, {4, 900, 50},
                                {5, 1500, 300}, {6, 4000, 200}, {7, 100, 100}, {8, 9000, 10}};
    std::vector<Running> running;
    unsigned admitted = 0, deferred = 0, preempted = 0, finished = 0, rejected = 0;
    std::uint64_t peak = 0;
    int last_deferred = 0;

    for (int step = 0; (!waiting.empty() || !running.empty()) && step < 100000; ++step) {
        // Finished requests leave; the others decode one token, preempting the newest when the
        // pool runs dry.
        for (std::size_t i = 0; i < running.size();) {
            Running& r = running[i];
            if (r.req.generated == r.req.output_tokens) {
                pool.release(r.blocks);
                ++finished;
                running.erase(running.begin() + static_cast<std::ptrdiff_t>(i));
                continue;
            }
            if (!pool.grow(r.blocks)) {
                Running victim = running.back();
                running.pop_back();
                pool.release(victim.blocks);
                waiting.push_front(victim.req);
                ++preempted;
                std::printf("step %d: preempt request %d (%llu free)\n", step, victim.req.id,
                            static_cast<unsigned long long>(pool.free_blocks()));
                continue;
            }
            ++r.req.generated;
            ++i;
        }
        // Admit in arrival order while the pool says yes.
        while (!waiting.empty()) {
            Request q = waiting.front();
            Running r{q, {}};
            // A preempted request recomputes its prompt and what it generated.
            const AdmitResult a =
                pool.admit(r.blocks, q.prompt_tokens + q.generated, q.output_tokens - q.generated);
            if (a.status == AdmitStatus::never) {
                std::printf("step %d: reject request %d (%llu tokens, max_model_len %llu)\n", step,
                            q.id,
                            static_cast<unsigned long long>(q.prompt_tokens + q.output_tokens),
                            static_cast<unsigned long long>(pool.spec().max_model_len));
                waiting.pop_front();
                ++rejected;
                continue;
            }
            if (!a) {
                if (q.id != last_deferred) {
                    std::printf("step %d: defer request %d (needs %llu blocks, %llu free)\n", step,
                                q.id, static_cast<unsigned long long>(a.blocks),
                                static_cast<unsigned long long>(a.available));
                    ++deferred;
                }
                last_deferred = q.id;
                break;
            }
            ++r.req.generated;  // the prefill step yields the first token
            std::printf("step %d: admit request %d (%llu prompt tokens, %llu blocks, %llu free)\n",
                        step, q.id, static_cast<unsigned long long>(q.prompt_tokens),
                        static_cast<unsigned long long>(a.blocks),
                        static_cast<unsigned long long>(pool.free_blocks()));
            running.push_back(r);
            waiting.pop_front();
            ++admitted;
        }
        if (pool.used_blocks() > peak) peak = pool.used_blocks();
    }
    std::printf(
        "admitted %u, deferred %u, preempted %u, rejected %u, finished %u; peak %llu of %llu "
        "blocks\n",
        admitted, deferred, preempted, rejected, finished, static_cast<unsigned long long>(peak),
        static_cast<unsigned long long>(pool.spec().usable_blocks()));
    return finished + rejected == 8 && pool.free_blocks() == pool.spec().usable_blocks() ? 0 : 1;
}

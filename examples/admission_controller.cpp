// A small continuous-batching scheduler on the core, at run time: the KV memory a serving process
// measured becomes a pool of blocks, and each request is admitted when its prompt's blocks are free
// or deferred until they are. Decode grows each sequence a block at a time; when the pool runs dry
// the newest sequence is preempted and requeued, as vLLM's scheduler does.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <vector>

#include <kvplan/core.hpp>
#include <kvplan/presets.hpp>

using namespace kvplan;

namespace {

struct Request {
    int id;
    std::uint64_t prompt_tokens;
    std::uint64_t output_tokens;
};

struct Running {
    Request req;
    std::uint64_t tokens = 0;  // cached so far
    std::uint64_t blocks = 0;  // held
};

}  // namespace

int main(int argc, char** argv) {
    // The free HBM this process measured after loading weights (e.g. from cudaMemGetInfo), in MiB.
    const std::uint64_t free_mib = argc > 1 ? std::strtoull(argv[1], nullptr, 10) : 256;
    const Model& model = presets::llama_3_8b;
    const KvFormat kv = KvDtype::bf16;
    const std::uint32_t block = default_block_size;

    // One block: 16 tokens x 128 KiB = 2 MiB across all 32 layers.
    const Bytes per_block = bytes_per_block(model, kv, block);
    const std::uint64_t total_blocks = (free_mib * MiB) / per_block;
    std::uint64_t free_blocks = total_blocks;
    std::printf("%s, bf16 KV: %llu B per block of %u tokens; %llu MiB free -> %llu blocks\n",
                model.name().c_str(), static_cast<unsigned long long>(per_block.count()), block,
                static_cast<unsigned long long>(free_mib),
                static_cast<unsigned long long>(total_blocks));

    std::deque<Request> waiting{{1, 700, 200}, {2, 1500, 100}, {3, 300, 400},
                                {4, 900, 50},  {5, 1500, 300}, {6, 4000, 200},
                                {7, 100, 100}};
    std::vector<Running> running;
    unsigned admitted = 0, deferred = 0, preempted = 0, finished = 0, rejected = 0;
    std::uint64_t peak = 0;
    int last_deferred = 0;

    for (int step = 0; (!waiting.empty() || !running.empty()) && step < 100000; ++step) {
        // Admit in arrival order while the prompt (and its first output token) fits.
        while (!waiting.empty()) {
            const Request r = waiting.front();
            // A request whose whole length can never fit is refused, not deferred forever.
            if (blocks_for(r.prompt_tokens + r.output_tokens, block) > total_blocks) {
                std::printf("step %d: reject request %d (%llu tokens never fit in %llu blocks)\n",
                            step, r.id,
                            static_cast<unsigned long long>(r.prompt_tokens + r.output_tokens),
                            static_cast<unsigned long long>(total_blocks));
                waiting.pop_front();
                ++rejected;
                continue;
            }
            const std::uint64_t need = blocks_for(r.prompt_tokens + 1, block);
            // Keep one block of headroom per running sequence so decode does not preempt at once
            // (vLLM keeps a watermark for the same reason).
            const std::uint64_t headroom = running.size();
            if (need + headroom > free_blocks) {
                if (r.id != last_deferred)
                    std::printf("step %d: defer request %d (needs %llu blocks, %llu free)\n", step,
                                r.id, static_cast<unsigned long long>(need),
                                static_cast<unsigned long long>(free_blocks));
                if (r.id != last_deferred) ++deferred;
                last_deferred = r.id;
                break;
            }
            free_blocks -= need;
            running.push_back({r, r.prompt_tokens + 1, need});
            waiting.pop_front();
            ++admitted;
            std::printf("step %d: admit request %d (%llu prompt tokens, %llu blocks)\n", step, r.id,
                        static_cast<unsigned long long>(r.prompt_tokens),
                        static_cast<unsigned long long>(need));
        }
        // Decode one token per running sequence; a sequence entering a new block takes one more.
        for (std::size_t i = 0; i < running.size();) {
            Running& s = running[i];
            if (s.tokens >= s.req.prompt_tokens + s.req.output_tokens) {
                free_blocks += s.blocks;
                ++finished;
                running.erase(running.begin() + static_cast<std::ptrdiff_t>(i));
                continue;
            }
            const std::uint64_t need = blocks_for(s.tokens + 1, block) - s.blocks;
            if (need > free_blocks) {
                // Preempt the newest sequence and recompute it later.
                Running victim = running.back();
                running.pop_back();
                free_blocks += victim.blocks;
                waiting.push_front(victim.req);
                ++preempted;
                std::printf("step %d: preempt request %d\n", step, victim.req.id);
                continue;
            }
            free_blocks -= need;
            s.blocks += need;
            ++s.tokens;
            ++i;
        }
        peak = std::max(peak, total_blocks - free_blocks);
    }
    std::printf(
        "admitted %u, deferred %u, preempted %u, rejected %u, finished %u; peak %llu of %llu "
        "blocks\n",
        admitted, deferred, preempted, rejected, finished, static_cast<unsigned long long>(peak),
        static_cast<unsigned long long>(total_blocks));
    return finished + rejected == 7 ? 0 : 1;
}

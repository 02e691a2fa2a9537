// static_assert only: if this file compiles, admission gives these figures at compile time.
#include <kvplan/admission.hpp>
#include <kvplan/admission/engine_pools.hpp>
#include <kvplan/presets.hpp>

namespace {
using namespace kvplan;

// One sliding group (window 128) and one full group, blocks of 16, 1,000 blocks with the null one.
constexpr BlockPoolSpec window_pool = [] {
    BlockPoolSpec s;
    s.num_blocks = 1000;
    s.groups[0] = {.kind = BlockGroupKind::sliding_window, .block_size = 16, .span = 128};
    s.groups[1] = {.kind = BlockGroupKind::full, .block_size = 16};
    s.num_groups = 2;
    return s;
}();
static_assert(window_pool.usable_blocks() == 999);

// 8,064 prompt tokens: cdiv(8,064, 16) = 504 blocks in each group at the prefill step; decoding,
// the full group reaches 512 and the window holds 9 (8 when block aligned).
static_assert(request_need(window_pool, 8064, 129).admission == 1008);
static_assert(request_need(window_pool, 8064, 129).steady == 521);
// Outside a window a group keeps every block: 1,000 tokens in blocks of 16 = 63.
static_assert(group_blocks({.kind = BlockGroupKind::full, .block_size = 16}, 1000, 999) == 63);
// The window at 1,001 slots, 1,000 processed: 873 tokens skipped = 54 blocks, 63 - 54 = 9.
static_assert(group_blocks(window_pool.groups[0], 1001, 1000) == 9);

// A pool in use at compile time: a 1,000-token prompt takes 63 + 63 blocks; its first decode
// step frees 54 from the window; release returns the 9 + 63 it holds.
constexpr bool admit_grow_release = [] {
    BlockPool pool(window_pool);
    RequestBlocks r;
    const bool admitted = pool.admit(r, 1000, 100).blocks == 126;
    const bool grown = pool.grow(r).freed == 54 && r.blocks() == 72;
    const bool released = pool.release(r) == 72 && pool.free_blocks() == 999;
    return admitted && grown && released;
}();
static_assert(admit_grow_release);

// gpt-oss-120b, 12 GiB of KV on one GPU: 12 GiB / (18 x 32,768 B) = 21,845 blocks; 40 requests
// of 8,064 + 129 tokens run at once (1 + (21,844 - 1,008) / 521).
constexpr VllmOptions vllm_8k{.max_model_len = 8192, .max_num_batched_tokens = 8192};
constexpr BlockPoolSpec gpt_oss =
    vllm_block_pool(vllm_kv_cache(presets::gpt_oss_120b, KvDtype::bf16,
                                  Layout{presets::gpt_oss_120b, {}}, 12 * GiB, vllm_8k),
                    vllm_8k);
static_assert(gpt_oss.num_blocks == 21'845);
static_assert(concurrent_requests(gpt_oss, 8064, 129) == 40);

}  // namespace

#include <algorithm>
#include <array>
#include <catch2/catch.hpp>
#include <cstdint>
#include <deque>
#include <kvplan/admission.hpp>
#include <kvplan/admission/engine_pools.hpp>
#include <kvplan/presets.hpp>
#include <kvplan/trace.hpp>
#include <limits>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "support/fixture_models.hpp"
#include "support/random.hpp"
#include "support/rounds.hpp"

using namespace kvplan;
using namespace kvplan::presets;

namespace {

// ---------------------------------------------------------------------------------------------
// A literal model of vLLM's block accounting, written apart from the library: block ids, a free
// queue, reference counts, one block table per KV-cache group with null blocks, and the steps of
// KVCacheManager.allocate_slots / the single-type managers (remove_skipped_blocks, then
// get_num_blocks_to_allocate, then allocate_new_blocks; MambaManager's align mode with its
// last_state_block_idx). The pool under test only counts; this one moves real block ids, so the
// two agree only if the counting is right.
// ---------------------------------------------------------------------------------------------
namespace ref {

constexpr int null_id = 0;
constexpr std::uint64_t no_limit = std::numeric_limits<std::uint64_t>::max() / 4;

std::uint64_t cdiv(std::uint64_t a, std::uint64_t b) { return (a + b - 1) / b; }

struct Prefix {
    std::uint64_t tokens = 0;
    bool cached = false;
    std::vector<std::vector<int>> ids;  // per table: the prefix's blocks (full tables)
};

struct Table {
    std::uint32_t group = 0;  // index of the BlockGroup
    std::vector<int> blocks;
    bool allocated = false;  // MambaManager._allocated_block_reqs
    long last_state = -1;    // MambaManager.last_state_block_idx
};

struct Request {
    std::uint64_t computed = 0;  // num_computed_tokens
    std::vector<Table> tables;
    Prefix* prefix = nullptr;
    bool running = false;
};

class Pool {
   public:
    explicit Pool(const BlockPoolSpec& s) : s_(s) {
        ref_.assign(s.num_blocks, 0);
        for (std::uint64_t id = s.null_block ? 1 : 0; id < s.num_blocks; ++id)
            free_.push_back(static_cast<int>(id));
        for (std::uint32_t g = 0; g < s.num_groups; ++g)
            for (std::uint32_t c = 0; c < s.groups[g].count; ++c) table_group_.push_back(g);
    }

    std::uint64_t free_blocks() const { return free_.size(); }
    /// The prefixes whose cached blocks an allocation evicted since the last call: they are no
    /// longer a hit (the caller of the pool under test learns it as vLLM's KV events tell it).
    std::vector<Prefix*> take_evicted() { return std::exchange(evicted_, {}); }

    // The block size a table allocates with: a Mamba state outside align mode is one block for
    // any length (vLLM sets its block size to max_model_len).
    std::uint64_t block(const BlockGroup& g) const {
        return g.kind == BlockGroupKind::state && !g.align ? no_limit : g.block_size;
    }
    std::uint64_t skipped(const BlockGroup& g, std::uint64_t computed) const {
        switch (g.kind) {
            case BlockGroupKind::full:
                return 0;
            case BlockGroupKind::sliding_window:
                return computed + 1 >= g.span ? computed + 1 - g.span : 0;
            case BlockGroupKind::chunked_local:
                return computed / g.span * g.span;
            case BlockGroupKind::state:
                return computed >= 1 ? computed - 1 : 0;
        }
        return 0;
    }

    // The hit blocks a new request finds for one table: the prefix's own ids in full tables; in
    // windowed tables nulls for what the window skipped and, for the rest, blocks that are cached
    // but held by no one (taken off the free queue as fresh ones); a Mamba state: its one cached
    // state block at the end of the hit.
    std::vector<int> hit_blocks(const Request& r, std::size_t t, std::uint64_t hit) {
        const BlockGroup& g = s_.groups[table_group_[t]];
        if (hit == 0) return {};
        if (g.kind == BlockGroupKind::full) return r.prefix->ids[t];
        return {};  // handled as evictable counts below
    }

    // get_num_blocks_to_allocate for one table.
    std::uint64_t to_allocate(const Request& r, std::size_t t, std::uint64_t tokens,
                              std::uint64_t hit, bool cap) {
        const BlockGroup& g = s_.groups[table_group_[t]];
        const std::uint64_t B = block(g);
        const bool is_new = !r.running;
        if (g.kind == BlockGroupKind::state && g.align) {
            const std::uint64_t have = is_new ? hit / B : r.tables[t].blocks.size();
            const std::uint64_t required = cdiv(tokens, B);
            std::uint64_t n = required > have ? 1 : 0;
            if (is_new && hit > 0) n += 1;  // the cached state block comes off the free queue
            return n;
        }
        std::uint64_t required = cdiv(tokens, B);
        if (cap && g.admission_cap != 0) required = std::min(required, g.admission_cap);
        if (!is_new) {
            const std::uint64_t len = r.tables[t].blocks.size();
            return required > len ? required - len : 0;
        }
        const std::uint64_t skipped_blocks = skipped(g, hit) / B;
        const std::uint64_t local = hit / B;
        std::uint64_t n = required > std::max(skipped_blocks, local)
                              ? required - std::max(skipped_blocks, local)
                              : 0;
        // Evictable hit blocks inside the window (ref_cnt 0) are taken off the free queue.
        if (g.kind == BlockGroupKind::full) {
            for (int id : hit_blocks(r, t, hit))
                if (ref_[static_cast<std::size_t>(id)] == 0) ++n;
        } else if (g.kind != BlockGroupKind::state) {
            n += local - skipped_blocks;
        }
        return n;
    }

    // allocate_slots for a new request: both checks, then the blocks (unless only asked whether
    // they pass).
    bool admit(Request& r, std::uint64_t prompt, std::uint64_t chunk, Prefix* px,
               std::uint64_t watermark, bool check_only = false) {
        r = Request{};
        r.prefix = px;
        const std::uint64_t hit = px != nullptr && (px->cached || holders(px) > 0) ? px->tokens : 0;
        const std::uint64_t tokens = hit + chunk;
        r.tables.resize(table_group_.size());
        for (std::size_t t = 0; t < r.tables.size(); ++t) r.tables[t].group = table_group_[t];
        std::uint64_t gate = 0, step = 0;
        for (std::size_t t = 0; t < r.tables.size(); ++t) {
            if (s_.full_sequence_must_fit) gate += to_allocate(r, t, prompt, hit, true);
            step += to_allocate(r, t, tokens, hit, false);
        }
        if (s_.full_sequence_must_fit && gate + watermark > free_blocks()) return false;
        if (step + watermark > free_blocks()) return false;
        if (check_only) {
            r = Request{};
            return true;
        }
        // Every group's hit blocks are touched before any new block is taken, so a new block
        // never evicts a hit (allocate_new_computed_blocks runs before allocate_new_blocks).
        for (std::size_t t = 0; t < r.tables.size(); ++t) {
            const BlockGroup& g = s_.groups[table_group_[t]];
            if (g.kind != BlockGroupKind::full) continue;
            r.tables[t].blocks.clear();
            for (int id : hit_blocks(r, t, hit)) {
                touch(id);
                r.tables[t].blocks.push_back(id);
            }
        }
        for (std::size_t t = 0; t < r.tables.size(); ++t) {
            const BlockGroup& g = s_.groups[table_group_[t]];
            const std::uint64_t B = block(g);
            Table& tb = r.tables[t];
            if (g.kind == BlockGroupKind::state) {
                if (hit > 0 && g.align) {  // add_local_computed_blocks: nulls, the cached state
                    tb.blocks.assign(hit / B - 1, null_id);
                    tb.blocks.push_back(take());
                }
                allocate_state(tb, g, tokens);
                continue;
            }
            if (g.kind != BlockGroupKind::full) {
                const std::uint64_t nulls = skipped(g, hit) / B;
                tb.blocks.assign(nulls, null_id);
                for (std::uint64_t i = nulls; i < hit / B; ++i) tb.blocks.push_back(take());
            }
            while (tb.blocks.size() < cdiv(tokens, B)) tb.blocks.push_back(take());
        }
        // A prefix computed now: its full blocks are the first tokens / B of each full table.
        if (px != nullptr && hit == 0) {
            px->ids.assign(table_group_.size(), {});
            for (std::size_t t = 0; t < r.tables.size(); ++t)
                if (s_.groups[table_group_[t]].kind == BlockGroupKind::full)
                    px->ids[t].assign(
                        r.tables[t].blocks.begin(),
                        r.tables[t].blocks.begin() +
                            static_cast<long>(px->tokens / block(s_.groups[table_group_[t]])));
        }
        if (px != nullptr) {
            px->cached = true;
            holding_[px] += 1;
        }
        r.computed = tokens;
        r.running = true;
        return true;
    }

    // allocate_slots for a running request scheduling `n` tokens.
    bool grow(Request& r, std::uint64_t n) {
        remove_skipped(r, r.computed);
        const std::uint64_t tokens = r.computed + n;
        std::uint64_t need = 0;
        for (std::size_t t = 0; t < r.tables.size(); ++t)
            need += to_allocate(r, t, tokens, 0, false);
        if (need > free_blocks()) return false;
        for (Table& tb : r.tables) {
            const BlockGroup& g = s_.groups[tb.group];
            if (g.kind == BlockGroupKind::state) {
                allocate_state(tb, g, tokens);
                continue;
            }
            while (tb.blocks.size() < cdiv(tokens, block(g))) tb.blocks.push_back(take());
        }
        r.computed = tokens;
        return true;
    }

    void release(Request& r) {
        for (Table& tb : r.tables)
            for (auto it = tb.blocks.rbegin(); it != tb.blocks.rend(); ++it)
                if (*it != null_id) free_block(*it);
        if (r.prefix != nullptr) holding_[r.prefix] -= 1;
        r = Request{};
    }

    // Blocks a request holds (prefix blocks included).
    std::uint64_t held(const Request& r) const {
        std::uint64_t n = 0;
        for (const Table& tb : r.tables)
            for (int id : tb.blocks) n += id != null_id ? 1 : 0;
        return n;
    }

   private:
    int holders(Prefix* px) { return holding_[px]; }

    int take() {
        REQUIRE(!free_.empty());
        const int id = free_.front();
        free_.pop_front();
        for (auto& [px, n] : holding_)
            if (px->cached && n == 0)
                for (const auto& ids : px->ids)
                    if (std::find(ids.begin(), ids.end(), id) != ids.end()) {
                        px->cached = false;
                        evicted_.push_back(px);
                    }
        ref_[static_cast<std::size_t>(id)] = 1;
        return id;
    }
    void touch(int id) {
        if (ref_[static_cast<std::size_t>(id)] == 0)
            free_.erase(std::find(free_.begin(), free_.end(), id));
        ref_[static_cast<std::size_t>(id)] += 1;
    }
    void free_block(int id) {
        if (--ref_[static_cast<std::size_t>(id)] == 0) free_.push_back(id);
    }

    // SingleTypeKVCacheManager.remove_skipped_blocks, and MambaManager's align-mode free of the
    // state two steps old.
    void remove_skipped(Request& r, std::uint64_t processed) {
        for (Table& tb : r.tables) {
            const BlockGroup& g = s_.groups[tb.group];
            const std::uint64_t B = block(g);
            const std::uint64_t skip = g.kind == BlockGroupKind::state
                                           ? (processed >= 1 ? processed - 1 : 0)
                                           : skipped(g, processed);
            const std::uint64_t nb = std::min<std::uint64_t>(skip / B, tb.blocks.size());
            for (std::uint64_t i = nb; i-- > 0;) {
                if (tb.blocks[i] == null_id) break;
                free_block(tb.blocks[i]);
                tb.blocks[i] = null_id;
            }
            if (g.kind == BlockGroupKind::state && g.align && tb.last_state >= 0 &&
                static_cast<std::uint64_t>(tb.last_state) + 1 < cdiv(processed, B)) {
                int& id = tb.blocks[static_cast<std::size_t>(tb.last_state)];
                if (id != null_id) {
                    free_block(id);
                    id = null_id;
                }
            }
        }
    }

    // MambaManager.allocate_new_blocks (align), or the plain table for one state block.
    void allocate_state(Table& tb, const BlockGroup& g, std::uint64_t tokens) {
        const std::uint64_t B = block(g);
        const std::uint64_t required = cdiv(tokens, B);
        if (required <= tb.blocks.size()) {
            tb.allocated = true;
            return;
        }
        const std::uint64_t prev = tb.blocks.size();
        if (g.align && prev > 0) tb.last_state = static_cast<long>(prev) - 1;
        while (tb.blocks.size() + 1 < required) tb.blocks.push_back(null_id);
        tb.blocks.push_back(take());
        tb.allocated = true;
    }

    BlockPoolSpec s_;
    std::vector<int> ref_;
    std::deque<int> free_;
    std::vector<std::uint32_t> table_group_;
    std::map<Prefix*, int> holding_;  // running requests using each prefix
    std::vector<Prefix*> evicted_;
};

/// The most blocks a request holds at any step and while decoding, by running it alone through
/// the reference: its first step of `chunk` tokens after `hit`, the rest of the prompt in chunks,
/// then one token a step.
struct Alone {
    std::uint64_t peak = 0, steady = 0, admission = 0;
};
Alone run_alone(const BlockPoolSpec& s, std::uint64_t prompt, std::uint64_t max_new,
                std::uint64_t hit, std::uint64_t chunk) {
    BlockPoolSpec big = s;
    big.num_blocks = 4 * (prompt + max_new) * 8 + 64;
    big.full_sequence_must_fit = false;
    Pool p(big);
    Prefix px{.tokens = hit, .cached = false, .ids = {}};
    Request warm, r;
    Alone a;
    if (hit > 0) {  // a first request computes the prefix, then leaves it cached
        REQUIRE(p.admit(warm, hit + 1, hit + 1, &px, 0));
        p.release(warm);
    }
    const std::uint64_t first = chunk == 0 ? prompt - hit : std::min(chunk, prompt - hit);
    REQUIRE(p.admit(r, prompt, first, hit > 0 ? &px : nullptr, 0));
    a.admission = a.peak = p.held(r);
    while (r.computed < prompt) {
        REQUIRE(p.grow(r, std::min(first, prompt - r.computed)));
        a.peak = std::max(a.peak, p.held(r));
    }
    for (std::uint64_t t = prompt + 1; t + 1 <= prompt + max_new; ++t) {
        REQUIRE(p.grow(r, 1));
        a.peak = std::max(a.peak, p.held(r));
        a.steady = std::max(a.steady, p.held(r));
    }
    return a;
}

}  // namespace ref

// gpt-oss-120b on one GPU with `kv` bytes of KV memory, vLLM's defaults at max_model_len 8,192.
BlockPoolSpec gpt_oss_pool(Bytes kv) {
    const VllmOptions o{.max_model_len = 8192, .max_num_batched_tokens = 8192};
    return vllm_block_pool(
        vllm_kv_cache(gpt_oss_120b, KvDtype::bf16, Layout{gpt_oss_120b, {}}, kv, o), o);
}

BlockPoolSpec one_group(BlockGroup g, std::uint64_t num_blocks) {
    BlockPoolSpec s;
    s.num_blocks = num_blocks;
    s.groups[0] = g;
    s.num_groups = 1;
    return s;
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// Hand-derived figures
// ---------------------------------------------------------------------------------------------

TEST_CASE("gpt-oss-120b: vLLM's pool has a sliding and a full group of 18 layers",
          "[admission][vllm]") {
    // A page is 16 tokens x 8 KV heads x 64 x 2 (K, V) x 2 B = 32,768 B per layer; the 18 sliding
    // and 18 full layers form one group each (group size min(18, 18) = 18), so a block is
    // 18 x 32,768 = 589,824 B. 12 GiB / 589,824 B = 21,845.33: 21,845 blocks, 21,844 usable.
    const BlockPoolSpec s = gpt_oss_pool(12 * GiB);
    CHECK(s.num_blocks == 21'845);
    CHECK(s.usable_blocks() == 21'844);
    REQUIRE(s.num_groups == 2);
    CHECK(s.groups[0].kind == BlockGroupKind::sliding_window);
    CHECK(s.groups[0].span == 128);
    CHECK(s.groups[0].count == 1);
    // The whole-prompt cap: cdiv(min(127 + 2 x 8,192 in flight, 8,192), 16) + 1 = 513.
    CHECK(s.groups[0].admission_cap == 513);
    CHECK(s.groups[1].kind == BlockGroupKind::full);
    CHECK(s.groups[1].block_size == 16);
    CHECK(s.max_model_len == 8192);
}

TEST_CASE("gpt-oss-120b: its sliding layers keep the window, so twice the requests fit",
          "[admission][vllm]") {
    const BlockPoolSpec s = gpt_oss_pool(12 * GiB);
    // A request of 8,064 prompt tokens generating 129: its last step holds 8,064 + 128 = 8,192
    // slots. The prefill step takes cdiv(8,064, 16) = 504 blocks in each group: 1,008, and the
    // whole-prompt check asks the same (504 is below the cap of 513).
    const RequestNeed n = request_need(s, 8064, 129);
    CHECK(n.gate == 1008);
    CHECK(n.admission == 1008);
    CHECK(n.peak == 1008);
    // Decoding, the full group reaches cdiv(8,191, 16) = 512 blocks; the sliding group holds
    // cdiv(128 + r, 16) with r = (slots - 128) mod 16: 8 blocks when r = 0, else 9. At 8,191
    // slots r = 15: 512 + 9 = 521, the most (at 8,192, r = 0: 512 + 8 = 520).
    CHECK(n.steady == 521);
    // Admitted one after another, each once the previous one decodes: 1 + (21,844 - 1,008) / 521
    // = 1 + 39 = 40 at once.
    CHECK(concurrent_requests(s, 8064, 129) == 40);
    // The natural count, free / bytes_per_block blocks over cdiv(8,192, 16) = 512 per group for
    // both groups: 21,845 / 1,024 = 21. vLLM's own "Maximum concurrency" line agrees with it:
    // 21,845 / (512 + 513) = 21.3x. The pool admits 40, 1.9 times as many.
    CHECK(s.num_blocks / 1024 == 21);
    const VllmKvCache c =
        vllm_kv_cache(gpt_oss_120b, KvDtype::bf16, Layout{gpt_oss_120b, {}}, 12 * GiB,
                      {.max_model_len = 8192, .max_num_batched_tokens = 8192});
    CHECK(c.max_concurrency == Approx(21'845.0 / 1025.0));

    // Under no_preemption the pool admits exactly those 40, then refuses the 41st: 40 x 521 =
    // 20,840 are reserved and 1,008 more exceed the 21,844 usable blocks.
    BlockPool pool(s, AdmitPolicy::no_preemption);
    std::vector<RequestBlocks> reqs(41);
    for (int i = 0; i < 40; ++i) {
        REQUIRE(pool.admit(reqs[static_cast<std::size_t>(i)], 8064, 129));
        REQUIRE(pool.grow(reqs[static_cast<std::size_t>(i)]));  // its first decode step
    }
    CHECK(pool.committed_blocks() == 40 * 521);
    const AdmitResult r = pool.admit(reqs[40], 8064, 129);
    CHECK(r.status == AdmitStatus::wait);
    CHECK(r.blocks == 1008);
    CHECK(r.available == 21'844 - 40 * 521);
    // Every request can decode to its end without a refusal.
    for (int t = 1; t < 128; ++t)
        for (int i = 0; i < 40; ++i) REQUIRE(pool.grow(reqs[static_cast<std::size_t>(i)]));
    // At 8,192 slots each holds 520; the free count is what is left.
    CHECK(pool.free_blocks() == 21'844 - 40 * 520);
}

TEST_CASE("Gemma-3-27B: six sliding groups draw on the pool beside one full group",
          "[admission][vllm]") {
    // vllm_kv_cache groups its 52 sliding and 10 full layers into 6 + 1 groups of 10 layers
    // (test_engine.cpp); 20 GiB / (10 x 131,072 B) = 16,384 blocks.
    const VllmOptions o{
        .max_model_len = 32768, .max_num_batched_tokens = 8192, .concurrent_batches = 1};
    const BlockPoolSpec s = vllm_block_pool(
        vllm_kv_cache(gemma_3_27b, KvDtype::bf16, Layout{gemma_3_27b, {}}, 20 * GiB, o), o);
    CHECK(s.num_blocks == 16'384);
    REQUIRE(s.num_groups == 2);
    const BlockGroup& sliding =
        s.groups[0].kind == BlockGroupKind::sliding_window ? s.groups[0] : s.groups[1];
    const BlockGroup& full = s.groups[0].kind == BlockGroupKind::full ? s.groups[0] : s.groups[1];
    CHECK(sliding.count == 6);
    CHECK(sliding.span == 1024);
    CHECK(sliding.admission_cap == 577);  // cdiv(1,023 + 8,192, 16) + 1
    CHECK(full.count == 1);
    // 8,000 prompt tokens: 7 tables x cdiv(8,000, 16) = 7 x 500 = 3,500 blocks at the prefill
    // step; the whole-prompt check caps each sliding table at 577, above 500: the same.
    const RequestNeed n = request_need(s, 8000, 100);
    CHECK(n.gate == 3500);
    CHECK(n.admission == 3500);
    // Decoding to 8,099 slots: the full table reaches cdiv(8,099, 16) = 507; a window of 1,024
    // holds 64 blocks, 65 off the block edge ((8,099 - 1,024) mod 16 = 3): 507 + 6 x 65 = 897.
    CHECK(n.steady == 897);
    CHECK(n.peak == 3500);
}

TEST_CASE("a Mamba hybrid: states in align mode beside a full group of raised blocks",
          "[admission][vllm][state]") {
    // The 40-layer hybrid of test_engine.cpp (vLLM v0.17.0 log): attention blocks raised to
    // 2,096 tokens, 1 full and 3 linear-attention groups of 10 layers, 304 blocks.
    const Model hybrid = testing::hybrid_40();
    const VllmOptions o{.max_model_len = 65536, .mamba_cache_mode = MambaCacheMode::align};
    const BlockPoolSpec s = vllm_block_pool(
        vllm_kv_cache(hybrid, KvDtype::fp8_e4m3, Layout{hybrid, {}}, round_to_bytes(6.08, GiB), o),
        o);
    CHECK(s.num_blocks == 304);
    REQUIRE(s.num_groups == 2);
    const BlockGroup& state = s.groups[0].kind == BlockGroupKind::state ? s.groups[0] : s.groups[1];
    const BlockGroup& full = s.groups[0].kind == BlockGroupKind::full ? s.groups[0] : s.groups[1];
    CHECK(state.count == 3);
    CHECK(state.align);
    CHECK(state.block_size == 2096);
    CHECK(full.block_size == 2096);
    // 10,000 prompt tokens: cdiv(10,000, 2,096) = 5 full blocks + 3 states = 8. Decoding to
    // 10,499 slots: the full table reaches 6 blocks, and at 10,481 slots (10,480 = 5 x 2,096
    // processed) each state takes its second block: 6 + 3 x 2 = 12.
    const RequestNeed n = request_need(s, 10000, 500);
    CHECK(n.admission == 8);
    CHECK(n.steady == 12);
    CHECK(n.peak == 12);
}

TEST_CASE("the null block is never handed out", "[admission][null]") {
    // 65 blocks of 16 tokens, one of them the null block: 64 usable = 1,024 tokens.
    const BlockPoolSpec s = one_group({.kind = BlockGroupKind::full, .block_size = 16}, 65);
    CHECK(s.usable_blocks() == 64);
    BlockPool pool(s);
    RequestBlocks a, b;
    // 1,024 prompt tokens take all 64 usable blocks; with max_new 1 the request never decodes.
    const AdmitResult r = pool.admit(a, 1024, 1);
    REQUIRE(r);
    CHECK(r.blocks == 64);
    CHECK(pool.free_blocks() == 0);
    // One more token would need block 65 = the null block: never, even in an empty pool.
    CHECK(pool.admit(b, 1025, 1).status == AdmitStatus::never);
    // vLLM's start-up rule, the same: a request of max_model_len must fit in num_blocks - 1
    // (kv_cache_planning.py, check_memory = (num_blocks - 1) x bytes_per_block).
    CHECK(pool.release(a) == 64);
    CHECK(pool.free_blocks() == 64);
    // SGLang's pool has no null block: 1,024 tokens of page 16 are 64 pages, all allocatable.
    const SglangKvPool sp = sglang_kv_pool(llama_3_8b, KvDtype::bf16, Layout{llama_3_8b, {}},
                                           128 * MiB, {.page_size = 16});
    // 128 MiB / 131,072 B per token = 1,024 tokens = 64 pages.
    const BlockPoolSpec ss = sglang_block_pool(sp);
    CHECK(ss.num_blocks == 64);
    CHECK(ss.usable_blocks() == 64);
    BlockPool sg(ss);
    CHECK(sg.admit(a, 1024, 1));
}

TEST_CASE("a sliding window frees the blocks it slides past", "[admission][window]") {
    // Window 128, blocks of 16. A 1,000-token prompt takes cdiv(1,000, 16) = 63 blocks.
    const BlockPoolSpec s =
        one_group({.kind = BlockGroupKind::sliding_window, .block_size = 16, .span = 128}, 1000);
    BlockPool pool(s);
    RequestBlocks r;
    REQUIRE(pool.admit(r, 1000, 100).blocks == 63);
    // First decode step: 1,000 tokens processed, 1,000 - 128 + 1 = 873 skipped = 54 whole blocks
    // freed; the table reaches cdiv(1,001, 16) = 63 blocks, 63 - 54 = 9 held, none new.
    GrowResult g = pool.grow(r);
    CHECK(g.freed == 54);
    CHECK(g.taken == 0);
    CHECK(r.blocks() == 9);
    // Held = cdiv(128 + r, 16) with r = (slots - 128) mod 16. Slots 1,002 to 1,007 keep 9; at
    // 1,008 (processed 1,007: 880 skipped = 55 blocks) one is freed and the window is block
    // aligned: 8; 1,009 opens block 64 (cdiv(1,009, 16) = 64), none freed: 9 again.
    for (int i = 0; i < 6; ++i) {
        g = pool.grow(r);
        REQUIRE(g);
        CHECK(g.taken + g.freed == 0);
    }
    g = pool.grow(r);
    CHECK(g.freed == 1);
    CHECK(r.blocks() == 8);
    g = pool.grow(r);
    CHECK(g.taken == 1);
    CHECK(g.freed == 0);
    CHECK(r.blocks() == 9);
    // At 1,024 slots (processed 1,023: 896 skipped = 56 blocks) the window is block aligned: 8.
    while (r.tokens < 1024) REQUIRE(pool.grow(r));
    CHECK(r.blocks() == 8);
    CHECK(pool.release(r) == 8);
    CHECK(pool.free_blocks() == 999);
}

TEST_CASE("a chunked local group keeps only the current chunk", "[admission][chunked]") {
    // Chunk 64, blocks of 16: a 100-token prompt takes 7 blocks. At the first decode step 100
    // tokens are processed, 100 // 64 x 64 = 64 skipped = 4 blocks freed: 3 held (tokens 64..100).
    const BlockPoolSpec s =
        one_group({.kind = BlockGroupKind::chunked_local, .block_size = 16, .span = 64}, 100);
    BlockPool pool(s);
    RequestBlocks r;
    REQUIRE(pool.admit(r, 100, 40).blocks == 7);
    CHECK(pool.grow(r).freed == 4);
    CHECK(r.blocks() == 3);
    // At 128 slots processed is 127: still chunk 64..127, blocks 4..7 = 4 held. At 129 (processed
    // 128) the chunk 128.. starts: blocks 0..7 skipped, the table is 9 long: 1 held.
    while (r.tokens < 128) REQUIRE(pool.grow(r));
    CHECK(r.blocks() == 4);
    REQUIRE(pool.grow(r));
    CHECK(r.blocks() == 1);
}

TEST_CASE("a Mamba state in align mode holds a second block for one step", "[admission][state]") {
    // MambaManager, align mode, blocks of 16: one running state; a step entering a new block
    // takes a second and the next step frees the old one. Outside align mode: one block.
    const BlockPoolSpec s =
        one_group({.kind = BlockGroupKind::state, .block_size = 16, .align = true}, 10);
    BlockPool pool(s);
    RequestBlocks r;
    REQUIRE(pool.admit(r, 40, 30).blocks == 1);
    // 41..48 slots stay in block 3 (cdiv 3); 49 enters block 4: 2 held.
    for (int i = 0; i < 8; ++i) REQUIRE(pool.grow(r));
    CHECK(r.blocks() == 1);
    const GrowResult g = pool.grow(r);
    CHECK(g.taken == 1);
    CHECK(r.blocks() == 2);
    CHECK(pool.grow(r).freed == 1);
    CHECK(r.blocks() == 1);
    const BlockPoolSpec none = one_group({.kind = BlockGroupKind::state, .block_size = 16}, 10);
    CHECK(request_need(none, 40, 30).peak == 1);
    CHECK(request_need(s, 40, 30).peak == 2);
}

TEST_CASE("requests sharing a cached prefix hold its full blocks once", "[admission][prefix]") {
    // Llama-3-8B-like: one full group of blocks of 16. A 1,024-token prefix is 64 blocks.
    const BlockPoolSpec s = one_group({.kind = BlockGroupKind::full, .block_size = 16}, 1001);
    BlockPool pool(s);
    SharedPrefix px{.tokens = 1024};
    RequestBlocks a, b, c;
    // The first request computes it: cdiv(1,500, 16) = 94 blocks, 64 of them the prefix's.
    AdmitResult r = pool.admit(a, 1500, 10, {.prefix = &px});
    REQUIRE(r);
    CHECK(r.blocks == 94);
    CHECK(a.blocks() == 30);
    CHECK(px.blocks == 64);
    CHECK(px.holders == 1);
    // The second finds it held: cdiv(1,200, 16) - 64 = 75 - 64 = 11 blocks.
    r = pool.admit(b, 1200, 10, {.prefix = &px});
    REQUIRE(r);
    CHECK(r.blocks == 11);
    CHECK(pool.used_blocks() == 94 + 11);
    // The prefix's blocks go back only when its last holder leaves.
    CHECK(pool.release(a) == 30);
    CHECK(pool.release(b) == 11 + 64);
    CHECK(pool.free_blocks() == 1000);
    // Still cached (evictable): a third request touches its 64 blocks and computes the rest.
    r = pool.admit(c, 1100, 10, {.prefix = &px});
    CHECK(r.blocks == 69);  // cdiv(1,100, 16) = 69: 64 touched + 5 new
    CHECK(c.tokens == 1100);
}

TEST_CASE("gpt-oss-120b: a prefix hit shares the full group and pads the window with nulls",
          "[admission][prefix][window]") {
    const BlockPoolSpec s = gpt_oss_pool(12 * GiB);
    BlockPool pool(s);
    SharedPrefix px{.tokens = 4096};  // 256 blocks
    RequestBlocks a, b;
    // First: 5,000 tokens, both tables cdiv(5,000, 16) = 313 blocks: 626.
    REQUIRE(pool.admit(a, 5000, 50, {.prefix = &px}).blocks == 626);
    // Second, 4,500 tokens, hit 4,096: full table 282 - 256 shared = 26 new; sliding table:
    // skipped(4,096) = 4,096 - 127 = 3,969 = 248 null blocks; 282 - 248 = 34 held (the 8
    // in-window hit blocks come off the free queue, 26 are computed). 26 + 34 = 60.
    const AdmitResult r = pool.admit(b, 4500, 50, {.prefix = &px});
    REQUIRE(r);
    CHECK(r.blocks == 60);
    // The whole-prompt check asks the same: full 282 - 256 = 26; sliding min(282, 513) - 256
    // local + (256 - 248) in window = 26 + 8 = 34.
    CHECK(request_need(s, 4500, 50, 4096).admission == 60 + 256);
}

TEST_CASE("release returns exactly what admit and grow took", "[admission][property]") {
    KVPLAN_TEST_RNG(rng, 20240611);
    const BlockPoolSpec s = gpt_oss_pool(1 * GiB);  // 1,820 blocks
    for (int round = 0; round < 200; ++round) {
        BlockPool pool(s);
        RequestBlocks r;
        const std::uint64_t prompt = 1 + rng() % 3000, max_new = 1 + rng() % 400;
        const AdmitResult a = pool.admit(r, prompt, max_new, {.chunk = 1 + rng() % 1024});
        REQUIRE(a);
        std::uint64_t taken = a.blocks, freed = 0;
        while (r.tokens + 1 <= prompt + max_new - 1) {
            const std::uint64_t n = r.tokens < prompt ? std::min(r.chunk, prompt - r.tokens) : 1;
            const GrowResult g = pool.grow(r, n);
            REQUIRE(g);
            taken += g.taken;
            freed += g.freed;
            CHECK(r.blocks() == taken - freed);
        }
        CHECK(pool.release(r) == taken - freed);
        CHECK(pool.free_blocks() == s.usable_blocks());
    }
}

// ---------------------------------------------------------------------------------------------
// Against the reference
// ---------------------------------------------------------------------------------------------

namespace {

BlockPoolSpec random_spec(test::Rng& rng) {
    BlockPoolSpec s;
    s.num_groups = 1 + static_cast<std::uint32_t>(rng() % 3);
    const std::uint32_t block = std::array<std::uint32_t, 3>{4, 8, 16}[rng() % 3];
    for (std::uint32_t i = 0; i < s.num_groups; ++i) {
        BlockGroup& g = s.groups[i];
        g.kind = static_cast<BlockGroupKind>(rng() % 4);
        g.count = 1 + static_cast<std::uint32_t>(rng() % 2);
        g.block_size = block * (g.kind == BlockGroupKind::full && rng() % 3 == 0 ? 2 : 1);
        if (g.kind == BlockGroupKind::sliding_window) {
            g.span = 1 + rng() % 80;
            if (rng() % 2) g.admission_cap = 1 + g.span / g.block_size + rng() % 6;
        }
        if (g.kind == BlockGroupKind::chunked_local) {
            g.span = block * (1 + rng() % 6);
            if (rng() % 2) g.admission_cap = g.span / g.block_size + rng() % 6;
        }
        g.align = g.kind == BlockGroupKind::state && rng() % 2;
    }
    s.num_blocks = 40 + rng() % 200;
    s.watermark_blocks = rng() % 3 == 0 ? rng() % 4 : 0;
    s.full_sequence_must_fit = rng() % 4 != 0;
    return s;
}

}  // namespace

TEST_CASE("a request's admission, peak and steady blocks match running it alone",
          "[admission][property]") {
    KVPLAN_TEST_RNG(rng, 7);
    for (int round = 0; round < test::rounds(3000); ++round) {
        const BlockPoolSpec s = random_spec(rng);
        const std::uint64_t prompt = 1 + rng() % 300, max_new = 1 + rng() % 120;
        // A hit is a multiple of every block size (lcm 32 covers 4, 8, 16, 32) below the prompt.
        const std::uint64_t hit = rng() % 3 == 0 ? (prompt - 1) / 32 * 32 : 0;
        const std::uint64_t chunk = rng() % 2 ? 0 : 1 + rng() % 64;
        INFO("round " << round << " prompt " << prompt << " max_new " << max_new << " hit " << hit
                      << " chunk " << chunk);
        const RequestNeed n = request_need(s, prompt, max_new, hit, chunk);
        const ref::Alone a = ref::run_alone(s, prompt, max_new, hit, chunk);
        CHECK(n.admission == a.admission);
        CHECK(n.peak == a.peak);
        CHECK(n.steady == a.steady);
    }
}

TEST_CASE("random admits, grows and releases leave the free count the reference leaves",
          "[admission][property]") {
    // Under engine the pool admits and grows exactly when the reference does; under
    // no_preemption it admits only what the reference admits, and no grow ever fails.
    KVPLAN_TEST_RNG(rng, 99);
    for (int round = 0; round < test::rounds(800); ++round) {
        const BlockPoolSpec s = random_spec(rng);
        const AdmitPolicy policy =
            round % 2 == 0 ? AdmitPolicy::engine : AdmitPolicy::no_preemption;
        BlockPool pool(s, policy);
        ref::Pool rp(s);
        std::vector<RequestBlocks> reqs(12);
        std::vector<ref::Request> rreqs(12);
        std::vector<SharedPrefix> prefixes(2);
        std::vector<ref::Prefix> rprefixes(2);
        for (int p = 0; p < 2; ++p) prefixes[p].tokens = rprefixes[p].tokens = 32 * (1 + p);
        for (int op = 0; op < 300; ++op) {
            const std::size_t i = rng() % reqs.size();
            RequestBlocks& r = reqs[i];
            INFO("round " << round << " op " << op << " request " << i);
            if (!r.running) {
                const std::uint64_t prompt = 1 + rng() % 200, max_new = 1 + rng() % 60;
                const int p = static_cast<int>(rng() % 3) - 1;  // -1: no prefix
                SharedPrefix* px = nullptr;
                ref::Prefix* rpx = nullptr;
                if (p >= 0 && prompt > prefixes[static_cast<std::size_t>(p)].tokens) {
                    px = &prefixes[static_cast<std::size_t>(p)];
                    rpx = &rprefixes[static_cast<std::size_t>(p)];
                }
                const std::uint64_t hit =
                    px != nullptr && (px->cached || px->holders > 0) ? px->tokens : 0;
                std::uint64_t chunk = rng() % 2 ? prompt - hit : 1 + rng() % 64;
                if (px != nullptr && hit == 0) chunk = std::max(chunk, px->tokens);  // computes it
                chunk = std::min(chunk, prompt - hit);
                const bool others = pool.running() > 0;
                const AdmitResult a =
                    pool.admit(r, prompt, max_new, {.prefix = px, .chunk = chunk});
                if (a.status == AdmitStatus::never) continue;
                // Under no_preemption a refusal may be the reservation's: then the reference is
                // only asked whether vLLM's checks pass.
                const bool check_only = policy == AdmitPolicy::no_preemption && !a;
                const bool ok = rp.admit(rreqs[i], prompt, chunk, rpx,
                                         others ? s.watermark_blocks : 0, check_only);
                if (policy == AdmitPolicy::engine)
                    CHECK(static_cast<bool>(a) == ok);
                else
                    CHECK((!a || ok));
                if (!a) rreqs[i] = ref::Request{};
            } else if (rng() % 5 == 0 || r.tokens + 1 > r.prompt + r.max_new - 1) {
                const std::uint64_t freed = pool.release(r);
                const std::uint64_t before = rp.free_blocks();
                rp.release(rreqs[i]);
                CHECK(rp.free_blocks() - before == freed);
            } else {
                const std::uint64_t room = r.prompt + r.max_new - 1 - r.tokens;
                std::uint64_t n = r.tokens < r.prompt ? std::min(1 + rng() % 64, room) : 1;
                if (policy == AdmitPolicy::no_preemption && r.tokens < r.prompt)
                    n = std::min(r.chunk, r.prompt - r.tokens);  // the steps it reserved for
                const bool g = static_cast<bool>(pool.grow(r, n));
                CHECK(rp.grow(rreqs[i], n) == g);
                if (policy == AdmitPolicy::no_preemption) CHECK(g);
            }
            for (ref::Prefix* e : rp.take_evicted())
                prefixes[static_cast<std::size_t>(e - rprefixes.data())].cached = false;
            REQUIRE(pool.free_blocks() == rp.free_blocks());
            std::uint64_t held = 0;
            for (const RequestBlocks& q : reqs) held += q.blocks();
            for (const SharedPrefix& q : prefixes) held += q.blocks;
            REQUIRE(held == pool.used_blocks());
            REQUIRE(pool.used_blocks() <= s.usable_blocks());
            if (policy == AdmitPolicy::no_preemption) {
                REQUIRE(pool.used_blocks() <= pool.committed_blocks());
                REQUIRE(pool.committed_blocks() <= s.usable_blocks());
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------
// A trace replayed through a scheduler loop
// ---------------------------------------------------------------------------------------------

namespace {

// Requests of the Azure LLM inference trace 2023, conversation, first 1,000 (Azure Public Dataset,
// CC-BY 4.0; Patel et al., "Splitwise: Efficient generative LLM inference using phase splitting",
// ISCA 2024).
const Trace& azure_conv() {
    static const Trace t =
        load_trace(std::string(KVPLAN_TEST_DATA_DIR) + "/traces/azure-conv-2023-first1000.csv");
    return t;
}

struct Live {
    std::size_t id = 0;
    std::uint64_t target = 0;               // tokens it generates (at least one)
    std::uint64_t prompt = 0, max_new = 0;  // as admitted (a preempted request recomputes)
    std::uint64_t generated = 0;            // over its whole life
    RequestBlocks blocks;
    ref::Request ref;
};

Live live(std::size_t id, std::uint64_t target, std::uint64_t prompt, std::uint64_t max_new,
          std::uint64_t generated) {
    Live l;
    l.id = id;
    l.target = target;
    l.prompt = prompt;
    l.max_new = max_new;
    l.generated = generated;
    return l;
}

struct ReplayStats {
    std::uint64_t admitted = 0, preempted = 0, finished = 0, max_running = 0, waits = 0;
};

/// Steps of 20 ms: arrivals join the queue at their step; running requests decode one token a
/// step (a prompt longer than `chunk` is prefilled `chunk` tokens a step), then waiting requests
/// are admitted first come, first served until one does not fit. A running request that cannot
/// grow preempts the newest (vLLM's FCFS policy, vllm/v1/core/sched/scheduler.py) and is
/// recomputed later from its prompt and the tokens it generated.
ReplayStats replay(const BlockPoolSpec& s, AdmitPolicy policy, std::uint64_t chunk) {
    const Trace& t = azure_conv();
    BlockPool pool(s, policy);
    ref::Pool rp(s);
    std::deque<Live> waiting;
    std::vector<Live> running;
    ReplayStats st;
    std::map<std::array<std::uint64_t, 3>, std::uint64_t> peaks;  // run_alone, by shape
    std::size_t next = 0;
    const std::uint64_t usable = s.usable_blocks();
    for (std::uint64_t step = 0; next < t.requests.size() || !waiting.empty() || !running.empty();
         ++step) {
        REQUIRE(step < 1'000'000);
        while (next < t.requests.size() && static_cast<std::uint64_t>(t.requests[next].arrival.in(
                                               kvplan::seconds)*50.0) <= step) {
            const TraceRequest& q = t.requests[next];
            const std::uint64_t out = std::max<std::uint64_t>(q.output_tokens, 1);
            waiting.push_back(live(next, out, q.prompt_tokens, out, 0));
            ++next;
        }
        // Finished requests leave.
        for (std::size_t i = 0; i < running.size();) {
            Live& l = running[i];
            if (l.blocks.tokens >= l.blocks.prompt && l.generated == l.target) {
                const std::uint64_t freed = pool.release(l.blocks);
                const std::uint64_t before = rp.free_blocks();
                rp.release(l.ref);
                REQUIRE(rp.free_blocks() - before == freed);
                running.erase(running.begin() + static_cast<long>(i));
                ++st.finished;
            } else {
                ++i;
            }
        }
        // Running requests take their step.
        for (std::size_t i = 0; i < running.size();) {
            Live& l = running[i];
            const bool prefill = l.blocks.tokens < l.blocks.prompt;
            const std::uint64_t n =
                prefill ? std::min(chunk, l.blocks.prompt - l.blocks.tokens) : 1;
            const GrowResult g = pool.grow(l.blocks, n);
            REQUIRE(rp.grow(l.ref, n) == g.grown);
            REQUIRE(pool.free_blocks() == rp.free_blocks());
            if (!g) {
                REQUIRE(policy == AdmitPolicy::engine);  // a reservation never runs dry
                Live victim = std::move(running.back());
                running.pop_back();
                const std::uint64_t freed = pool.release(victim.blocks);
                const std::uint64_t before = rp.free_blocks();
                rp.release(victim.ref);
                REQUIRE(rp.free_blocks() - before == freed);
                ++st.preempted;
                waiting.push_front(live(victim.id, victim.target,
                                        t.requests[victim.id].prompt_tokens + victim.generated,
                                        victim.target - victim.generated, victim.generated));
                continue;  // retry this request (or stop if it was the victim)
            }
            if (l.blocks.tokens >= l.blocks.prompt) ++l.generated;
            ++i;
        }
        // Waiting requests, first come first served.
        while (!waiting.empty()) {
            Live& l = waiting.front();
            const std::uint64_t first = std::min(chunk, l.prompt);
            const std::uint64_t committed = pool.committed_blocks();
            const bool others = pool.running() > 0;
            const AdmitResult a = pool.admit(l.blocks, l.prompt, l.max_new, {.chunk = first});
            REQUIRE(a.status != AdmitStatus::never);
            const bool ok =
                rp.admit(l.ref, l.prompt, first, nullptr, others ? s.watermark_blocks : 0,
                         policy == AdmitPolicy::no_preemption && !a);
            if (policy == AdmitPolicy::engine) {
                // Admitted exactly when vLLM's two checks pass on the reference's free queue.
                REQUIRE(static_cast<bool>(a) == ok);
            } else {
                // Admitted exactly when vLLM's checks pass and its peak, found by running it
                // alone, fits beside the reservations.
                auto [it, fresh] = peaks.try_emplace({l.prompt, l.max_new, first}, 0);
                if (fresh) it->second = ref::run_alone(s, l.prompt, l.max_new, 0, first).peak;
                REQUIRE(static_cast<bool>(a) == (ok && committed + it->second <= usable));
            }
            REQUIRE(pool.free_blocks() == rp.free_blocks());
            if (!a) {
                ++st.waits;
                break;
            }
            ++st.admitted;
            if (l.prompt == first) ++l.generated;  // the prefill step yields the first token
            running.push_back(std::move(l));
            waiting.pop_front();
        }
        st.max_running = std::max<std::uint64_t>(st.max_running, running.size());
        REQUIRE(pool.used_blocks() <= usable);
        if (policy == AdmitPolicy::no_preemption)
            REQUIRE(pool.used_blocks() <= pool.committed_blocks());
    }
    CHECK(pool.free_blocks() == usable);
    return st;
}

}  // namespace

TEST_CASE("the Azure conversation trace replays as vLLM's accounting allows",
          "[admission][trace]") {
    // gpt-oss-120b with 576 MiB of KV: 603,979,776 / 589,824 = 1,024 blocks, 1,023 usable. The
    // trace's longest prompt, 4,145 tokens, takes 2 x 260 = 520 of them.
    const BlockPoolSpec s = gpt_oss_pool(576 * MiB);
    REQUIRE(s.num_blocks == 1024);
    SECTION("whole prompts, vLLM's admission, preempting when decode runs dry") {
        const ReplayStats st = replay(s, AdmitPolicy::engine, 1u << 20);
        CHECK(st.finished == 1000);
        CHECK(st.admitted == 1000 + st.preempted);
        CHECK(st.waits > 0);  // the pool was the limit at times
    }
    SECTION("prompts in chunks of 512 tokens") {
        const ReplayStats st = replay(s, AdmitPolicy::engine, 512);
        CHECK(st.finished == 1000);
    }
    SECTION("reserving each request's peak: no preemption") {
        const ReplayStats st = replay(s, AdmitPolicy::no_preemption, 1u << 20);
        CHECK(st.finished == 1000);
        CHECK(st.preempted == 0);
        CHECK(st.admitted == 1000);
    }
}

TEST_CASE("a bad pool is refused with the field named", "[admission][errors]") {
    BlockPoolSpec s = one_group({.kind = BlockGroupKind::sliding_window, .block_size = 16}, 10);
    CHECK_THROWS_WITH(BlockPool(s),
                      "block pool: groups[0].span: expected a window or chunk of >= "
                      "1 token, found 0");
    s.groups[0].span = 64;
    s.num_blocks = 1;
    CHECK_THROWS_WITH(BlockPool(s),
                      "block pool: num_blocks: expected at least one block besides "
                      "the null block, found 1");
    s.num_blocks = 10;
    s.num_groups = 0;
    CHECK_THROWS_AS(BlockPool(s), InvalidInput);
}

TEST_CASE("a request past max_model_len never runs", "[admission]") {
    const BlockPoolSpec s = gpt_oss_pool(12 * GiB);
    BlockPool pool(s);
    RequestBlocks r;
    // 8,000 + 193 - 1 = 8,192 slots: fits max_model_len; one more token does not.
    CHECK(pool.admit(r, 8000, 193));
    RequestBlocks q;
    CHECK(pool.admit(q, 8000, 194).status == AdmitStatus::never);
    // Without max_model_len, a request whose last step cannot fit even alone never runs: 64
    // usable blocks of 16 hold 1,024 slots; 100 + 925 - 1 = 1,024 fits, one more token does not.
    BlockPool small(one_group({.kind = BlockGroupKind::full, .block_size = 16}, 65));
    RequestBlocks a, b;
    CHECK(small.admit(a, 100, 926).status == AdmitStatus::never);
    CHECK(small.admit(b, 100, 925));
}

TEST_CASE("a request's next step is its chunk until the prompt is in, then one token",
          "[admission][no_preemption]") {
    // A prompt of 1,000 tokens scheduled 512 at a time, 100 new tokens: the steps its admission
    // reserves for are 512, then the 488 left of the prompt (1,000 - 512), then one token each.
    RequestBlocks r{.prompt = 1000, .max_new = 100, .tokens = 0, .chunk = 512};
    CHECK(r.next_step() == 512);
    // Slots left: 1,000 + 100 - 1 - 0 = 1,099 (the last token is sampled, never cached).
    CHECK(r.tokens_left() == 1099);
    r.tokens = 512;
    CHECK(r.next_step() == 488);
    CHECK(r.tokens_left() == 587);
    r.tokens = 1000;
    CHECK(r.next_step() == 1);
    CHECK(r.tokens_left() == 99);
    // A chunk exactly the rest of the prompt: 1,000 - 488 = 512 left, one step of 512.
    r.tokens = 488;
    CHECK(r.next_step() == 512);
}

"""kvplan.BlockPool: admit, grow and release as vLLM's scheduler takes and frees blocks, on small
pools whose every count is derived by hand; and every misuse refused before the library sees it."""

import pytest

import kvplan


def pool(num_blocks=11, **kw):
    # 11 blocks of 4 tokens: the null block and 10 a request can hold.
    return kvplan.BlockPool(num_blocks, 4, **kw)


def test_admit_grow_and_release_account_every_block():
    p = pool()
    assert (p.num_blocks, p.usable_blocks, p.free_blocks) == (11, 10, 10)
    # A prompt of 8 tokens in one step: ceil(8 / 4) = 2 blocks.
    a = p.admit(8, 3)
    assert a and a.status == "admitted" and a.blocks == 2 and a.available == 10
    r = a.request
    assert (r.tokens, r.blocks, p.free_blocks, p.running) == (8, 2, 8, 1)
    # Its first decode step gives it 9 slots: ceil(9 / 4) = 3, one block more.
    g = p.grow(r)
    assert g and (g.taken, g.freed) == (1, 0)
    # The next, 10 slots, fits in the third block: nothing taken. 8 + 3 - 1 = 10 is its last.
    assert p.grow(r).taken == 0 and r.tokens == 10
    with pytest.raises(kvplan.UsageError, match="^n: expected at most the 0 tokens left"):
        p.grow(r)
    # A prompt of 28 tokens takes the 7 blocks left; then a 1-token prompt waits for one.
    b = p.admit(28, 1)
    assert b and p.free_blocks == 0
    w = p.admit(1, 1)
    assert not w and w.status == "wait" and (w.blocks, w.available) == (1, 0) and w.request is None
    # 40 tokens need ceil(40 / 4) = 10 blocks: all of them, but never more.
    assert p.admit(41, 1).status == "never"
    # Release gives back what it holds.
    assert p.release(r) == 3 and p.free_blocks == 3 and not r.running
    assert p.release(b.request) == 7 and p.free_blocks == 10 and p.running == 0


def test_a_dry_pool_refuses_a_step_until_a_request_is_released():
    p = pool(num_blocks=4)  # 3 usable blocks
    # 8 + 8 - 1 = 15 slots at its last step need ceil(15 / 4) = 4 blocks: never, even alone.
    assert p.admit(8, 8).status == "never"
    r = p.admit(8, 2).request  # 2 blocks now, 3 at its last step (9 slots)
    s = p.admit(4, 1).request  # 1 block: the pool is dry
    assert p.free_blocks == 0
    g = p.grow(r)  # 9 slots need a third block
    assert not g and g.taken == 1 and g.freed == 0 and r.tokens == 8
    # vLLM preempts the newest; the step then succeeds.
    assert p.release(s) == 1
    assert p.grow(r) and r.blocks == 3


def test_a_sliding_window_frees_the_blocks_it_has_passed():
    # A window of 8 tokens over blocks of 4. After a 16-token prompt the table is 4 blocks; the
    # step to 17 slots (16 computed) skips 16 + 1 - 8 = 9 tokens, 2 whole blocks, and enters a
    # fifth: 2 freed, 1 taken, 3 held.
    group = kvplan.BlockGroup("sliding_window", block_size=4, span=8)
    p = kvplan.BlockPool(21, groups=[group])
    r = p.admit(16, 10).request
    assert r.blocks == 4
    g = p.grow(r)
    assert (g.taken, g.freed, r.blocks) == (1, 2, 3)
    assert p.free_blocks == 20 - 3
    assert p.groups == [group] or repr(p.groups[0]) == repr(group)


def test_no_preemption_reserves_each_requests_peak():
    # A prompt of 8 generating 9: its last step holds 8 + 9 - 1 = 16 slots, ceil(16 / 4) = 4
    # blocks, and it holds 4 while decoding: gate and admission 2, peak and steady 4.
    p = pool(policy="no_preemption")
    need = p.need(8, 9)
    assert (need.gate, need.admission, need.peak, need.steady) == (2, 2, 4, 4)
    # 1 + (10 - 4) / 4 = 2 such requests at once.
    assert p.concurrent_requests(8, 9) == 2
    first, second = p.admit(8, 9), p.admit(8, 9)
    assert first and second and p.committed_blocks == 8 and p.free_blocks == 6
    # A third finds 6 blocks free but only 10 - 8 = 2 unreserved: it waits.
    third = p.admit(8, 9)
    assert third.status == "wait" and (third.blocks, third.available) == (4, 2)
    # The engine's own rule admits it: its first step's 2 blocks are free.
    assert pool().admit(8, 9) and pool(policy="engine").policy == "engine"
    # Under no_preemption a step is one token once the prompt is in.
    with pytest.raises(kvplan.UsageError, match="^n: expected 1 under no_preemption"):
        p.grow(first.request, 2)
    p.release(first.request)
    assert p.committed_blocks == 4


def test_a_shared_prefix_is_held_once():
    # A prefix of 8 tokens is 2 full blocks. The first request (12 tokens) computes it: its own
    # ceil(12 / 4) - 2 = 1 block and the prefix's 2. The second finds it held: its 1 block only.
    p = pool()
    prefix = kvplan.Prefix(8)
    a = p.admit(12, 1, prefix=prefix).request
    assert p.free_blocks == 7 and (prefix.holders, prefix.blocks, prefix.cached) == (1, 2, True)
    b = p.admit(12, 1, prefix=prefix).request
    assert p.free_blocks == 6 and prefix.holders == 2 and b.prefix is prefix
    # The first to finish frees its own block; the last the prefix's too.
    assert p.release(a) == 1 and p.release(b) == 3 and p.free_blocks == 10
    assert prefix.holders == 0 and prefix.blocks == 0 and prefix.cached


def test_the_engines_pool_is_the_one_fit_counts():
    # gpt-oss-120b under vLLM: the pool's blocks are fit's num_gpu_blocks at the same context.
    d = kvplan.Deployment("gpt-oss-120b", "h100-sxm")
    fit = kvplan.fit(model="gpt-oss-120b", gpu="h100-sxm", context=8192)
    p = d.block_pool(8192)
    assert p.num_blocks == fit.num_gpu_blocks and p.max_model_len == 8192
    kinds = sorted(g.kind for g in p.groups)
    assert kinds == ["full", "sliding_window"]
    # SGLang's pages: max_total_num_tokens / page_size pages, no null block.
    s = kvplan.Deployment("llama-3-8b", "h100-sxm", engine="sglang").block_pool(8192)
    sglang = kvplan.fit(model="llama-3-8b", gpu="h100-sxm", engine="sglang", context=8192)
    assert s.usable_blocks == s.num_blocks == sglang.kv_tokens_capacity
    with pytest.raises(kvplan.UsageError, match="^engine: expected vllm or sglang"):
        kvplan.Deployment("llama-3-8b", "h100-sxm", engine="trtllm").block_pool()
    with pytest.raises(kvplan.InvalidInputError, match="does_not_start|context_limit"):
        kvplan.Deployment("llama-3-8b", "h100-sxm").block_pool(9000)


def test_misuse_is_refused_before_the_library_sees_it():
    p, other = pool(), pool()
    r = p.admit(8, 2).request
    with pytest.raises(kvplan.UsageError, match="^request: expected a request of this pool"):
        other.grow(r)
    with pytest.raises(kvplan.UsageError, match="^prompt: expected >= 1 tokens, found 0$"):
        p.admit(0, 1)
    with pytest.raises(kvplan.UsageError, match="^max_new: expected >= 1 tokens"):
        p.admit(4, 0)
    with pytest.raises(kvplan.UsageError, match="^n: expected >= 1 tokens"):
        p.grow(r, 0)
    with pytest.raises(kvplan.UsageError, match="^prefix: expected a multiple of every group"):
        p.admit(12, 1, prefix=kvplan.Prefix(6))
    with pytest.raises(kvplan.UsageError, match="^prefix: expected fewer tokens than the prompt"):
        p.admit(8, 1, prefix=kvplan.Prefix(8))
    with pytest.raises(kvplan.UsageError, match="^chunk: expected at least the prefix's 8 tokens"):
        p.admit(12, 1, prefix=kvplan.Prefix(8), chunk=4)
    with pytest.raises(kvplan.UsageError, match="^cached: expected fewer tokens"):
        p.need(8, 1, cached=8)
    p.release(r)
    with pytest.raises(kvplan.UsageError, match="^request: expected a running request, found a "
                                                "released one$"):
        p.release(r)
    with pytest.raises(kvplan.InvalidInputError, match="num_blocks: expected at least one block"):
        kvplan.BlockPool(1)
    with pytest.raises(kvplan.InvalidInputError, match=r"groups\[0\].span"):
        kvplan.BlockPool(10, groups=[kvplan.BlockGroup("sliding_window")])
    with pytest.raises(kvplan.UsageError, match="^block_size: expected no block_size beside"):
        kvplan.BlockPool(10, 16, groups=[kvplan.BlockGroup()])
    with pytest.raises(kvplan.UsageError, match="^kind: expected 'full'"):
        kvplan.BlockGroup("window")
    with pytest.raises(kvplan.UsageError, match="^policy: expected 'engine' or 'no_preemption'"):
        kvplan.BlockPool(10, policy="fifo")
    with pytest.raises(TypeError, match="groups"):
        kvplan.BlockPool(10, groups=42)

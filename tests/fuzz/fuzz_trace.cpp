// libFuzzer harness: a request trace (CSV or JSON Lines), read and, when it reads, replayed two
// ways that must agree figure for figure: the sorted-once replay walked per length, and the
// straightforward one that sorts every event by comparison (tests/support/trace_reference.hpp).

#include <kvplan/presets.hpp>
#include <kvplan/trace.hpp>
#include <vector>

#include "../support/trace_reference.hpp"
#include "fuzz_support.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    using namespace kvplan;
    fuzz::expect_errors_only([&] {
        const Trace t = parse_trace(fuzz::as_text(data, size), "fuzz");
        const TraceLengths l = trace_lengths(t);
        KVPLAN_FUZZ_CHECK(l.requests == t.requests.size());
        KVPLAN_FUZZ_CHECK(l.total.p50 <= l.total.p95 && l.total.p95 <= l.total.max);
        // Gemma 3: sliding and global layers, so KV is not proportional to length.
        const Model& m = presets::gemma_3_27b;
        const ServiceTimes times{0.5 * seconds, 0.125 * seconds};
        const std::vector<Bytes> held = kv_per_request(t, m, KvDtype::bf16, 16);
        const auto want = test::reference_concurrency(t, times, held);
        TraceReplay replay(t, times);
        const auto got = replay.concurrency_by_length(kv_per_length(replay, m, KvDtype::bf16, 16));
        KVPLAN_FUZZ_CHECK(got.has_value() == want.has_value());
        if (!got) return;
        KVPLAN_FUZZ_CHECK(got->peak_kv == want->peak_kv && got->p95_kv == want->p95_kv);
        KVPLAN_FUZZ_CHECK(got->peak_requests == want->peak_requests);
        KVPLAN_FUZZ_CHECK(got->p95_requests == want->p95_requests);
        KVPLAN_FUZZ_CHECK(got->peak_at == want->peak_at);
        KVPLAN_FUZZ_CHECK(got->p95_kv <= got->peak_kv && got->p95_requests <= got->peak_requests);
    });
    return 0;
}

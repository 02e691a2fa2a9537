#include <catch2/catch.hpp>
#include <kvplan/plan/trace.hpp>
#include <kvplan/presets.hpp>
#include <kvplan/trace.hpp>
#include <string>
#include <vector>

using namespace kvplan;
using presets::llama_3_8b;

namespace {

// 20 requests, prompt 100 x i and 10 generated tokens for i = 1..20, in a shuffled order and with
// no newline after the last row: totals 110, 210, ..., 2010.
const char* const twenty_csv =
    "ContextTokens,GeneratedTokens\n"
    "700,10\n300,10\n2000,10\n100,10\n1100,10\n1900,10\n500,10\n1500,10\n900,10\n1300,10\n"
    "200,10\n1800,10\n600,10\n1000,10\n1200,10\n400,10\n1700,10\n800,10\n1600,10\n1400,10";

}  // namespace

TEST_CASE("nearest-rank percentiles pick an observed value at rank ceil(p x n / 100)", "[trace]") {
    // n = 20: p50 is rank ceil(10) = 10, p95 rank ceil(19) = 19, p99 rank ceil(19.8) = 20.
    std::vector<std::uint64_t> v;
    for (std::uint64_t i = 1; i <= 20; ++i) v.push_back(i * 10);
    const std::span<const std::uint64_t> s{v};
    CHECK(nearest_rank(s, 50) == 100);
    CHECK(nearest_rank(s, 95) == 190);
    CHECK(nearest_rank(s, 99) == 200);
    CHECK(nearest_rank(s, 0) == 10);     // the minimum
    CHECK(nearest_rank(s, 100) == 200);  // the maximum
    CHECK(nearest_rank(s, 5.01) == 20);  // 5.01 % of 20 = 1.002: rank 2
}

TEST_CASE("a hand-made CSV trace gives hand-computed token percentiles", "[trace]") {
    const Trace t = parse_trace_csv(twenty_csv, "twenty.csv");
    REQUIRE(t.requests.size() == 20);
    CHECK_FALSE(t.has_arrivals);
    const TraceLengths l = trace_lengths(t);
    // Totals 100 i + 10: p50 = rank 10 = 1010, p95 = rank 19 = 1910, p99 = rank 20 = 2010.
    CHECK(l.total.p50 == 1010);
    CHECK(l.total.p95 == 1910);
    CHECK(l.total.p99 == 2010);
    CHECK(l.total.max == 2010);
    CHECK(l.prompt.p50 == 1000);
    CHECK(l.output.max == 10);
    // Mean prompt = 100 x (1 + ... + 20) / 20 = 100 x 10.5 = 1050.
    CHECK(l.mean_prompt == Approx(1050.0));
    CHECK(l.mean_total == Approx(1060.0));
}

TEST_CASE("KV per request follows the token percentiles, exact and paged", "[trace]") {
    const Trace t = parse_trace_csv(twenty_csv, "twenty.csv");
    const KvDistribution d = kv_distribution(t, llama_3_8b, KvDtype::bf16, 16);
    // Llama-3-8B bf16: 128 KiB per token. p50 = 1010 tokens = 1010 x 131,072 B.
    CHECK(d.exact.p50 == 1010 * (128 * KiB));
    CHECK(d.exact.max == 2010 * (128 * KiB));
    // Paged in 16-token blocks: 1010 -> ceil(1010 / 16) = 64 blocks = 1024 tokens = 128 MiB;
    // 1910 -> 120 blocks = 1920 tokens; 2010 -> 126 blocks = 2016 tokens.
    CHECK(d.paged.p50 == 128 * MiB);
    CHECK(d.paged.p95 == 1920 * (128 * KiB));
    CHECK(d.paged.p99 == 2016 * (128 * KiB));
    // Mean exact: 1060 tokens x 128 KiB (the sum divides evenly).
    CHECK(d.mean_exact == 1060 * (128 * KiB));
}

TEST_CASE("paged waste is block tails, contiguous waste is max_model_len minus use", "[trace]") {
    const Trace t = parse_trace_csv("prompt_tokens,output_tokens\n90,10\n900,100\n1900,100\n", "w");
    // max_model_len 1024: the 2000-token request does not fit and is left out (counted).
    const TraceWaste w = trace_waste(t, llama_3_8b, KvDtype::bf16, 1024, 16);
    CHECK(w.requests == 2);
    CHECK(w.over_max_len == 1);
    // Used 100 + 1000 = 1100 tokens; paged ceil(100/16) x 16 = 112 and ceil(1000/16) x 16 = 1008:
    // 1120 tokens; contiguous 2 x 1024 = 2048 tokens. All x 128 KiB.
    CHECK(w.used == 1100 * (128 * KiB));
    CHECK(w.paged == 1120 * (128 * KiB));
    CHECK(w.contiguous == 2048 * (128 * KiB));
    CHECK(w.paged_waste() == 20 * (128 * KiB));
    CHECK(w.contiguous_waste() == 948 * (128 * KiB));
    CHECK(w.paged_waste_fraction() == Approx(20.0 / 1120.0));
    CHECK(w.contiguous_waste_fraction() == Approx(948.0 / 2048.0));
    // In percent: 20 / 1120 = 1.786 %, 948 / 2048 = 46.29 %.
    CHECK(w.paged_waste_percent() == Approx(100.0 * 20.0 / 1120.0));
    CHECK(w.contiguous_waste_percent() == Approx(100.0 * 948.0 / 2048.0));
}

TEST_CASE("a replay of arrivals and completions gives hand-computed concurrency", "[trace]") {
    // TTFT 0.5 s, TPOT 0.125 s (both exact in binary): time in system = 0.5 + 0.125 x output.
    //   A: arrives 0, 12 tokens -> [0, 2)      B: 1, 20 -> [1, 4)      C: 2, 12 -> [2, 4)
    //   E: 3, 0 -> [3, 3.5)                    D: 5, 76 -> [5, 15)
    const Trace t = parse_trace_csv(
        "arrival_time,prompt_tokens,output_tokens\n0,1,12\n1,1,20\n2,1,12\n3,1,0\n5,1,76\n", "r");
    REQUIRE(t.has_arrivals);
    const std::vector<Bytes> held{1 * GiB, 2 * GiB, 4 * GiB, 8 * GiB, 1 * GiB};  // A B C E D
    const auto c = trace_concurrency(t, {0.5 * seconds, 0.125 * seconds}, held);
    REQUIRE(c);
    // Little: 4 gaps over 5 s = 0.8 /s; mean output (12+20+12+0+76)/5 = 24; W = 0.5 + 3 = 3.5 s;
    // L = 0.8 x 3.5 = 2.8.
    CHECK(c->arrival_span.in(seconds) == Approx(5.0));
    CHECK(c->rate_per_s == Approx(0.8));
    CHECK(c->mean_time_in_system.in(seconds) == Approx(3.5));
    CHECK(c->littles_law == Approx(2.8));
    // In flight: [0,1) 1, [1,2) 2, [2,3) 2 (A leaves as C comes), [3,3.5) 3, [3.5,4) 2, [4,5) 0,
    // [5,15) 1. Peak 3. Time at <= 0: 1 s, <= 1: 12 s, <= 2: 14.5 s of 15: p95 (14.25 s) = 2.
    // Mean (11 x 1 + 2.5 x 2 + 0.5 x 3) / 15 = 17.5 / 15.
    CHECK(c->peak_requests == 3);
    CHECK(c->p95_requests == 2);
    CHECK(c->mean_requests == Approx(17.5 / 15.0));
    // KV: [0,1) 1, [1,2) 3, [2,3) 6, [3,3.5) 14, [3.5,4) 6, [4,5) 0, [5,15) 1 GiB. Peak 14 GiB at 3
    // s. Time at <= 0: 1, <= 1: 12, <= 3: 13, <= 6: 14.5 >= 14.25: p95 = 6 GiB.
    CHECK(c->peak_kv == 14 * GiB);
    CHECK(c->peak_at.in(seconds) == Approx(3.0));
    CHECK(c->p95_kv == 6 * GiB);
}

TEST_CASE("a trace without arrival times has no concurrency", "[trace]") {
    const Trace t = parse_trace_csv(twenty_csv, "twenty.csv");
    const std::vector<Bytes> held(20, 1 * GiB);
    CHECK_FALSE(trace_concurrency(t, {0.5 * seconds, 0.05 * seconds}, held).has_value());
}

TEST_CASE("date-time arrivals are read to the sub-second and made relative", "[trace]") {
    const Trace t = parse_trace_csv(
        "TIMESTAMP,ContextTokens,GeneratedTokens\r\n"
        "2023-11-16 23:59:59.7500000,374,44\r\n"
        "2023-11-17 00:00:01.0000000,396,109\r\n",
        "dt.csv");
    REQUIRE(t.has_arrivals);
    // Across midnight: 00:00:01.0 - 23:59:59.75 = 1.25 s.
    CHECK(t.requests[0].arrival.in(seconds) == Approx(0.0));
    CHECK(t.requests[1].arrival.in(seconds) == Approx(1.25));
    // ISO 8601 with 'T' and an offset: 12:00:00+02:00 is 10:00:00Z, 2 s before 10:00:02Z.
    const Trace u = parse_trace_jsonl(
        "{\"timestamp\": \"2024-01-01T12:00:00+02:00\", \"input_tokens\": 5, \"output_tokens\": "
        "1}\n"
        "{\"timestamp\": \"2024-01-01T10:00:02Z\", \"input_tokens\": 5, \"output_tokens\": 1}\n",
        "iso.jsonl");
    CHECK(u.requests[1].arrival.in(seconds) == Approx(2.0));
}

TEST_CASE("JSON Lines traces skip unknown and nested fields", "[trace]") {
    // Mooncake-style: timestamp in ms by column name, hash_ids a nested array to skip.
    const Trace t = parse_trace(
        "{\"timestamp_ms\": 0, \"input_length\": 6955, \"output_length\": 52, "
        "\"hash_ids\": [1, 2, {\"x\": \"]\"}]}\n"
        "\n"
        "{\"output_length\": 7, \"input_length\": 100, \"timestamp_ms\": 1500, \"note\": null}\n",
        "m.jsonl");
    REQUIRE(t.requests.size() == 2);
    CHECK(t.requests[0].prompt_tokens == 6955);
    CHECK(t.requests[0].output_tokens == 52);
    CHECK(t.requests[1].total_tokens() == 107);
    CHECK(t.requests[1].arrival.in(seconds) == Approx(1.5));  // 1500 ms
    // Numeric timestamps in another unit by option: 1500 read as ms.
    const Trace v = parse_trace(
        "{\"timestamp\": 0, \"prompt_tokens\": 1, \"output_tokens\": 1}\n"
        "{\"timestamp\": 1500, \"prompt_tokens\": 1, \"output_tokens\": 1}\n",
        "v.jsonl", {.numeric_time_unit = milliseconds});
    CHECK(v.requests[1].arrival.in(seconds) == Approx(1.5));
}

TEST_CASE("bad trace data names the file, line, field, expected and found", "[trace][errors]") {
    CHECK_THROWS_MATCHES(
        parse_trace_csv("ContextTokens,GeneratedTokens\n10,5\n12,x5\n", "bad.csv"), InvalidInput,
        Catch::Matchers::Message(
            "bad.csv:3: GeneratedTokens: expected a whole number of tokens >= 0, found 'x5'"));
    CHECK_THROWS_WITH(parse_trace_csv("ContextTokens,GeneratedTokens\n-3,5\n", "neg.csv"),
                      Catch::Contains("neg.csv:2: ContextTokens") && Catch::Contains("found '-3'"));
    CHECK_THROWS_WITH(parse_trace_csv("time,tokens\n1,2\n", "hdr.csv"),
                      Catch::Contains("hdr.csv: header: expected columns for prompt tokens") &&
                          Catch::Contains("found 'time,tokens'"));
    CHECK_THROWS_WITH(parse_trace_csv("ContextTokens,GeneratedTokens\n1,2,3\n", "n.csv"),
                      Catch::Contains("n.csv:2: record: expected 2 fields, found 3"));
    CHECK_THROWS_WITH(parse_trace_jsonl("{\"prompt_tokens\": 3}\n", "j.jsonl"),
                      Catch::Contains("j.jsonl:1: generated tokens"));
    CHECK_THROWS_WITH(parse_trace_jsonl("{\"prompt_tokens\": 3, \"output_tokens\": 2\n", "k.jsonl"),
                      Catch::Contains("k.jsonl:1: JSON: expected ',' or '}'"));
    CHECK_THROWS_WITH(
        parse_trace_csv("timestamp,prompt_tokens,output_tokens\n0,1,1\n,1,1\n", "gap.csv"),
        Catch::Contains("gap.csv:3: timestamp: expected seconds"));
    CHECK_THROWS_WITH(parse_trace_csv("prompt_tokens,output_tokens\n", "empty.csv"),
                      Catch::Contains("empty.csv: requests: expected at least one request"));
    CHECK_THROWS_WITH(load_trace("no/such/trace.csv"),
                      "no/such/trace.csv: file: expected an existing trace, found no such file");
}

TEST_CASE("the bundled Azure conversation sample matches independently computed figures",
          "[trace][azure]") {
    // Azure LLM inference trace 2023 (conversation), first 1,000 requests. CC-BY 4.0; Patel et al.,
    // "Splitwise: Efficient generative LLM inference using phase splitting", ISCA 2024.
    // Figures computed separately with Python's csv module: sort prompt + generated, take
    // v[ceil(p/100 x n) - 1]; arrival span from the TIMESTAMP strings with Decimal seconds.
    const Trace t = load_trace(KVPLAN_TEST_DATA_DIR "/traces/azure-conv-2023-first1000.csv");
    REQUIRE(t.requests.size() == 1000);
    const TraceLengths l = trace_lengths(t);
    CHECK(l.total.p50 == 1395);
    CHECK(l.total.p95 == 4129);
    CHECK(l.total.p99 == 4172);
    CHECK(l.total.max == 4292);
    CHECK(l.output.p50 == 203);
    CHECK(l.mean_output == Approx(247.262));
    // Replay at TTFT 0.5 s, TPOT 50 ms, 16-token blocks of Llama-3-8B (2 MiB each): span
    // 216.027393 s, rate 999 / span = 4.62441 /s, W = 0.5 + 0.05 x 247.262 = 12.8631 s,
    // L = 59.484; peak 87 requests in flight, holding 7,644 blocks = 7644 x 2 MiB.
    const std::vector<Bytes> held = kv_per_request(t, llama_3_8b, KvDtype::bf16, 16);
    const auto c = trace_concurrency(t, {0.5 * seconds, 0.05 * seconds}, held);
    REQUIRE(c);
    CHECK(c->arrival_span.in(seconds) == Approx(216.027393));
    CHECK(c->rate_per_s == Approx(4.62441).epsilon(1e-5));
    CHECK(c->mean_time_in_system.in(seconds) == Approx(12.8631));
    CHECK(c->littles_law == Approx(59.484).epsilon(1e-4));
    CHECK(c->peak_requests == 87);
    CHECK(c->peak_kv == 7644 * (2 * MiB));
    // The replay's time-weighted mean and Little's law estimate the same quantity; over a short
    // window they agree only roughly (edge effects at the start and the end of the replay).
    CHECK(c->mean_requests == Approx(c->littles_law).epsilon(0.1));
}

TEST_CASE("the smallest replica that holds a trace's replayed peak", "[trace][replica]") {
    // The replay above (TTFT 0.5 s, TPOT 0.125 s), prompts of 1 token: totals 13, 21, 13, 1, 77
    // tokens, so 1, 2, 1, 1 and 5 blocks of 16. Llama-3-8B: a block is 16 x 128 KiB = 2 MiB on one
    // GPU, 1 MiB per GPU at tp 2 (4 of its 8 KV heads each).
    // Blocks in use: [0,1) 1, [1,2) 3, [2,3) 3, [3,3.5) 4, [3.5,4) 3, [4,5) 0, [5,15) 5.
    // Peak 5 blocks; time-weighted p95 (14.25 s of 15) is also 5 (10 s at 5 blocks).
    const Trace t = parse_trace_csv(
        "arrival_time,prompt_tokens,output_tokens\n0,1,12\n1,1,20\n2,1,12\n3,1,0\n5,1,76\n", "r");
    const ServiceTimes times{0.5 * seconds, 0.125 * seconds};
    const Replica base{
        .model = llama_3_8b, .gpu = {}, .parallel = {}, .weights = {}, .kv = KvDtype::bf16};
    const auto six_mib = [](const Replica&, const Layout&, std::uint32_t) { return 6 * MiB; };
    // One GPU: peak 10 MiB > 6 MiB; two such replicas would hold it: ceil(10 / 6) = 2.
    const auto one = trace_on_replica(t, base, times, 16, six_mib);
    REQUIRE(one);
    CHECK(one->peak_kv == 10 * MiB);
    CHECK(one->p95_kv == 10 * MiB);
    CHECK(one->peak_requests == 3);
    CHECK_FALSE(one->holds_peak);
    CHECK_FALSE(one->holds_p95);
    CHECK(one->replicas_for_peak == 2);
    // Two GPUs at tp 2: 5 MiB per GPU fits 6 MiB. Found before pp 2, at two GPUs.
    const auto best = smallest_replica_for_trace(t, base, times, 16, six_mib);
    REQUIRE(best);
    CHECK(best->parallel.tp == 2);
    CHECK(best->parallel.pp == 1);
    CHECK(best->peak_kv == 5 * MiB);
    CHECK(best->holds_peak);
    CHECK(best->replicas_for_peak == 1);
    // No arrival times: no replay, no replica.
    const Trace flat = parse_trace_csv(twenty_csv, "twenty.csv");
    CHECK_FALSE(smallest_replica_for_trace(flat, base, times, 16, six_mib).has_value());
}

TEST_CASE("the trace call sizes the replica that holds a replay by hand", "[trace]") {
    // The replay above on Llama-3-8B in bf16, vLLM's blocks of 16 tokens x 128 KiB = 2 MiB: the
    // requests hold 13, 21, 13, 1 and 77 tokens, so 1, 2, 1, 1 and 5 blocks: A 2, B 4, C 2, E 2
    // and D 10 MiB on the one GPU. In flight, [3, 3.5) holds B + C + E = 8 MiB and [5, 15) D's 10
    // MiB alone: the peak is 10 MiB, at 5 s.
    const Trace t = parse_trace_csv(
        "arrival_time,prompt_tokens,output_tokens\n0,1,12\n1,1,20\n2,1,12\n3,1,0\n5,1,76\n", "r");
    TraceSizing s{.model = llama_3_8b, .times = {0.5 * seconds, 0.125 * seconds}};
    s.serving.kv_memory_per_gpu = 9 * MiB;
    const TraceAnswer a = analyze_trace(t, s);
    CHECK(a.block_size == 16);
    CHECK(a.busiest_stage == 0);
    // max_model_len: the model's max_position_embeddings when not given.
    CHECK(a.max_model_len == 8192);
    CHECK(a.whole.exact.max == 77 * (128 * KiB));
    CHECK(a.per_gpu.paged.max == 10 * MiB);
    REQUIRE(a.concurrency);
    CHECK(a.concurrency->littles_law == Approx(2.8));  // 0.8 /s x 3.5 s, as above
    CHECK(a.concurrency->peak_kv == 10 * MiB);
    // 9 MiB per GPU does not hold the 10 MiB peak: ceil(10 / 9) = 2 replicas of one GPU.
    REQUIRE(a.replica_sized);
    REQUIRE(a.on_replica);
    CHECK(a.on_replica->kv_budget == 9 * MiB);
    CHECK_FALSE(a.on_replica->holds_peak);
    CHECK(a.on_replica->replicas_for_peak == 2);
    // tp 2 halves each request's KV per GPU (4 of the 8 KV heads): a 5 MiB peak holds.
    REQUIRE(a.smallest);
    CHECK(a.smallest->parallel.tp == 2);
    CHECK(a.smallest->parallel.pp == 1);
    CHECK(a.smallest->gpus == 2);  // tp 2 x pp 1, as the library returns it
    CHECK(a.smallest->peak_kv == 5 * MiB);
    // A contiguous reservation of 1,024 tokens: 5 x 1,024 x 128 KiB.
    s.max_model_len = 1024;
    CHECK(analyze_trace(t, s).waste.contiguous == 5 * 1024 * (128 * KiB));
    // Neither a GPU nor a KV memory: the replica is not sized.
    s.serving.kv_memory_per_gpu.reset();
    const TraceAnswer none = analyze_trace(t, s);
    CHECK_FALSE(none.replica_sized);
    CHECK_FALSE(none.on_replica);
}

TEST_CASE("the trace call says whether the GPUs deployed hold the replay's peak", "[trace]") {
    // The replay above: a 10 MiB peak on one GPU of 9 MiB needs ceil(10 / 9) = 2 replicas of one
    // GPU, arrivals split evenly. One GPU deployed is one replica, short; two GPUs hold it.
    const Trace t = parse_trace_csv(
        "arrival_time,prompt_tokens,output_tokens\n0,1,12\n1,1,20\n2,1,12\n3,1,0\n5,1,76\n", "r");
    TraceSizing s{.model = llama_3_8b, .times = {0.5 * seconds, 0.125 * seconds}};
    s.serving.kv_memory_per_gpu = 9 * MiB;
    CHECK_FALSE(analyze_trace(t, s).given_holds_peak);  // no GPUs named
    s.gpus = 1;
    const TraceAnswer one = analyze_trace(t, s);
    CHECK((one.gpus_given == 1 && one.replicas_given == 1));
    REQUIRE(one.given_holds_peak);
    CHECK_FALSE(*one.given_holds_peak);
    s.gpus = 2;
    const TraceAnswer two = analyze_trace(t, s);
    CHECK(two.replicas_given == 2);
    REQUIRE(two.given_holds_peak);
    CHECK(*two.given_holds_peak);
    // At tp 2 a replica is 2 GPUs: 3 GPUs are not whole replicas.
    s.tp = 2;
    s.gpus = 3;
    CHECK_THROWS_AS(analyze_trace(t, s), InvalidLayout);
    // GPUs deployed need a GPU or a KV memory to be sized on.
    s.tp = 1;
    s.gpus = 2;
    s.serving.kv_memory_per_gpu.reset();
    CHECK_THROWS_WITH(analyze_trace(t, s), Catch::Contains("gpus: expected a GPU or a KV memory"));
    // A drafter is refused, not ignored: the replay holds the model's KV alone.
    s.gpus = 0;
    s.serving.speculation = {.method = DraftMethod::eagle, .tokens = 2};
    CHECK_THROWS_WITH(analyze_trace(t, s), Catch::Contains("speculation: expected none (the "
                                                           "replay holds each request's KV"));
}

// libFuzzer harness: a kvplan-policy/1 file (kvplan check), read and, when it maps, judged on a
// bundled model the way its requirements ask: budgets, decode bounds, sizes and weights; the
// paths it names are put through the confinement to its folder.

#include <kvplan/policy.hpp>
#include <kvplan/presets.hpp>

#include "fuzz_support.hpp"

namespace {

using namespace kvplan;

const GpuSpec& gpu_named(std::string_view id) {
    for (const GpuSpec* g : gpus::all)
        if (g->id == id) return *g;
    return gpus::h100_sxm;
}

void judge(const Policy& p, const Model& m) {
    const PolicyReplica& pr = p.replica;
    WeightOptions weights;
    if (pr.weight_dtype) weights.format = *pr.weight_dtype;
    const Replica r{.model = m,
                    .gpu = gpu_named(pr.gpu),
                    .parallel = {.tp = pr.tp, .pp = pr.pp},
                    .weights = weights,
                    .kv = pr.kv_dtype};
    const BudgetOptions o{.utilization = pr.gpu_memory_utilization.value_or(0.9)};
    const std::uint32_t block = pr.block_size.value_or(default_block_size);
    for (const Requirement& q : p.requirements) {
        fuzz::expect_errors_only([&] {
            switch (q.kind) {
                case RequirementKind::min_concurrency: {
                    const ReplicaBudget b = replica_budget(r,
                                                           {.context = q.context_tokens,
                                                            .concurrency = q.sequences,
                                                            .block_size = block},
                                                           o);
                    KVPLAN_FUZZ_CHECK(b.fits == (b.max_concurrency >= q.sequences));
                    break;
                }
                case RequirementKind::max_tpot: {
                    const DecodePoint d = decode_point(decode_costs(r), q.batch, q.context_tokens);
                    KVPLAN_FUZZ_CHECK(std::isfinite(d.tpot.in(seconds)) && d.tpot >= d.step);
                    break;
                }
                case RequirementKind::max_kv_bytes_per_token:
                    static_cast<void>(kv_bytes_per_token(m, r.kv) <= q.size);
                    break;
                case RequirementKind::max_weights_per_gpu:
                    static_cast<void>(max_weight_bytes_per_rank(m, r.layout(), weights) <= q.size);
                    break;
                case RequirementKind::min_context: {
                    const ReplicaBudget b = replica_budget(
                        r, {.context = q.tokens, .concurrency = q.sequences, .block_size = block},
                        o);
                    if (b.fits) KVPLAN_FUZZ_CHECK(!b.max_context || *b.max_context >= q.tokens);
                    break;
                }
            }
        });
    }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const Json doc = Json::parse(fuzz::as_text(data, size), nullptr, /*allow_exceptions=*/false);
    if (doc.is_discarded()) return 0;
    fuzz::expect_errors_only([&] {
        const Policy p = policy_from_json(doc, "fuzz.json");
        // The paths it names, confined to its folder: only looked at (stat), never read.
        fuzz::expect_errors_only([&] {
            if (p.model) static_cast<void>(policy_file(p, "model", *p.model, "config.json"));
        });
        fuzz::expect_errors_only(
            [&] { static_cast<void>(policy_file(p, "replica.gpu", p.replica.gpu)); });
        // A dense GQA model and an MoE MLA one.
        judge(p, presets::llama_3_70b);
        judge(p, presets::deepseek_v3);
    });
    return 0;
}

// libFuzzer harness: a kvplan-policy/1 file (kvplan check), parsed as load_policy parses it and,
// when it maps, judged by the library on bundled models the way `kvplan check` judges it
// (check_policy, with and without a baseline); the lines of its requirements are looked up in its
// text, and the paths it names are put through the confinement to its folder.

#include <kvplan/plan/check.hpp>
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

/// What must hold of any result: one outcome per requirement and replica, in order, the counts
/// adding up, and each status agreeing with its figures.
void check_result(const Policy& p, const CheckResult& r, bool with_baseline) {
    KVPLAN_FUZZ_CHECK(r.outcomes.size() == p.requirements.size() * p.replicas.size());
    std::size_t failed = 0, skipped = 0;
    for (std::size_t i = 0; i < r.outcomes.size(); ++i) {
        const CheckOutcome& o = r.outcomes[i];
        KVPLAN_FUZZ_CHECK(o.requirement == i / p.replicas.size());
        KVPLAN_FUZZ_CHECK(o.replica == i % p.replicas.size());
        const Requirement& q = p.requirements[o.requirement];
        KVPLAN_FUZZ_CHECK(o.figure == figure_of(q));
        failed += o.status == CheckStatus::failed ? 1 : 0;
        skipped += o.status == CheckStatus::skipped ? 1 : 0;
        KVPLAN_FUZZ_CHECK((o.status == CheckStatus::skipped) ==
                          (q.kind == RequirementKind::max_regression && !with_baseline));
        if (o.measured) KVPLAN_FUZZ_CHECK(o.measured->figure == o.figure);
        if (o.change_percent) KVPLAN_FUZZ_CHECK(std::isfinite(*o.change_percent));
        if (o.status == CheckStatus::passed && o.measured && !o.measured->unbounded) {
            const FigureValue& v = *o.measured;
            switch (q.kind) {
                case RequirementKind::min_concurrency:
                    KVPLAN_FUZZ_CHECK(v.count >= q.sequences);
                    break;
                case RequirementKind::max_tpot:
                    KVPLAN_FUZZ_CHECK(v.time <= q.tpot);
                    break;
                case RequirementKind::max_kv_bytes_per_token:
                case RequirementKind::max_weights_per_gpu:
                    KVPLAN_FUZZ_CHECK(v.count <= q.size.count());
                    break;
                case RequirementKind::min_context:
                    KVPLAN_FUZZ_CHECK(v.count >= q.tokens);
                    break;
                case RequirementKind::max_regression:
                    break;
            }
        }
        // A TPOT exists only where the engine starts.
        if (o.figure == CheckFigure::tpot && o.answer && !o.answer->starts())
            KVPLAN_FUZZ_CHECK(!o.measured && o.status != CheckStatus::passed);
    }
    KVPLAN_FUZZ_CHECK(failed == r.failed && skipped == r.skipped);
    KVPLAN_FUZZ_CHECK(r.passed() == (failed == 0));
}

void judge(const Policy& p, const Model& m, const Model& baseline) {
    std::vector<GpuSpec> gpus;
    for (const PolicyReplica& r : p.replicas) gpus.push_back(gpu_named(r.gpu));
    fuzz::expect_errors_only([&] { check_result(p, check_policy(p, m, gpus), false); });
    fuzz::expect_errors_only([&] { check_result(p, check_policy(p, m, gpus, &baseline), true); });
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string_view text = fuzz::as_text(data, size);
    fuzz::expect_errors_only([&] {
        // The parser load_policy uses: duplicate keys, nesting and NULs refused there.
        const Json doc = parse_json_text(text, "fuzz.json");
        Policy p = policy_from_json(doc, "fuzz.json");
        set_policy_lines(p, text);
        // The text parsed, so every requirement and replica is found in it, on a line it has.
        const auto lines =
            1 + static_cast<std::uint32_t>(std::count(text.begin(), text.end(), '\n'));
        for (const Requirement& q : p.requirements)
            KVPLAN_FUZZ_CHECK(q.line >= 1 && q.line <= lines);
        for (const PolicyReplica& r : p.replicas) KVPLAN_FUZZ_CHECK(r.line >= 1 && r.line <= lines);
        // The paths it names, confined to its folder: only looked at (stat), never read.
        fuzz::expect_errors_only([&] {
            if (p.model) static_cast<void>(policy_file(p, "model", *p.model, "config.json"));
        });
        for (const PolicyReplica& r : p.replicas)
            fuzz::expect_errors_only(
                [&] { static_cast<void>(policy_file(p, r.path + ".gpu", r.gpu)); });
        // A dense GQA model against another, and an MoE MLA one against a dense one.
        judge(p, presets::llama_3_70b, presets::llama_3_8b);
        judge(p, presets::deepseek_v3, presets::llama_3_70b);
    });
    return 0;
}

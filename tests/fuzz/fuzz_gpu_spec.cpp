// libFuzzer harness: a kvplan-gpu/1 spec file, loaded and, when it maps, used to budget replicas.

#include <kvplan/gpu_spec.hpp>
#include <kvplan/presets.hpp>

#include "fuzz_support.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    using namespace kvplan;
    const Json doc = Json::parse(fuzz::as_text(data, size), nullptr, /*allow_exceptions=*/false);
    if (doc.is_discarded()) return 0;
    fuzz::expect_errors_only([&] {
        const GpuSpecFile g = gpu_spec_from_json(doc, "fuzz.json");
        // A dense model, a windowed one and an MLA one: every branch of the budget.
        for (const Model* m : {&presets::llama_3_70b, &presets::gemma_2_27b, &presets::deepseek_v3})
            fuzz::probe_budget(*m, g.spec);
    });
    return 0;
}

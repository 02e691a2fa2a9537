// libFuzzer harness: a Hugging Face config.json, imported and, when it maps, sized.

#include <kvplan/hf_config.hpp>

#include "fuzz_support.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    using namespace kvplan;
    // JSON syntax is nlohmann's to check: text that does not parse is skipped, not an error of
    // ours.
    const Json doc = Json::parse(fuzz::as_text(data, size), nullptr, /*allow_exceptions=*/false);
    if (doc.is_discarded()) return 0;
    fuzz::expect_errors_only([&] {
        const Model m = model_from_hf_json(doc, "fuzz.json");
        fuzz::probe_model(m);
        fuzz::probe_budget(m, gpus::h100_sxm);
    });
    return 0;
}

// libFuzzer harness: the two config.json revisions `kvplan check --baseline` and `kvplan diff`
// compare, as "<before>\n@@\n<after>" (one document alone is compared with {}). Each is parsed by
// the one JSON parser of every reader (parse_json_text: depth, duplicate keys, NULs), the fields
// that changed are listed (json_field_changes), and each document that maps to a model is sized.

#include <kvplan/hf_config.hpp>
#include <kvplan/json.hpp>

#include "fuzz_support.hpp"

namespace {

using namespace kvplan;

/// The value at `steps` in `doc`, or nullptr.
const Json* at(const Json& doc, const std::vector<std::string>& steps) {
    const Json* v = &doc;
    for (const std::string& k : steps) {
        if (!v->is_object()) return nullptr;
        const auto it = v->find(k);
        if (it == v->end()) return nullptr;
        v = &*it;
    }
    return v;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string_view text = fuzz::as_text(data, size);
    const std::size_t sep = text.find("\n@@\n");
    const std::string_view first = text.substr(0, sep);
    const std::string_view second =
        sep == std::string_view::npos ? std::string_view("{}") : text.substr(sep + 4);
    fuzz::expect_errors_only([&] {
        const Json before = parse_json_text(first, "before.json", JsonNumbers::python);
        const Json after = parse_json_text(second, "after.json", JsonNumbers::python);
        const std::vector<JsonFieldChange> changes = json_field_changes(before, after);
        // Each change names a field whose values differ, found where it says; none when equal.
        KVPLAN_FUZZ_CHECK(changes.empty() == (before == after));
        for (const JsonFieldChange& c : changes) {
            KVPLAN_FUZZ_CHECK(c.before != nullptr || c.after != nullptr);
            KVPLAN_FUZZ_CHECK(c.before == nullptr || c.after == nullptr || *c.before != *c.after);
            KVPLAN_FUZZ_CHECK(at(before, c.steps) == c.before);
            KVPLAN_FUZZ_CHECK(at(after, c.steps) == c.after);
        }
        for (const Json* doc : {&before, &after})
            fuzz::expect_errors_only(
                [&] { fuzz::probe_model(model_from_hf_json(*doc, "config.json", "fuzz")); });
    });
    return 0;
}

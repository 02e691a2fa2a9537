// An installed kvplan's opt-in targets: kvplan::json reads a bundled config.json, kvplan::format
// prints the size with its unit. argv[1]: the installed share/kvplan folder.
#include <fmt/format.h>

#include <kvplan/format.hpp>
// The config importer is compiled in this one translation unit.
#define KVPLAN_HF_CONFIG_IMPLEMENTATION
#include <kvplan/hf_config.hpp>
#include <kvplan/kv_bytes.hpp>

int main(int argc, char** argv) {
    if (argc < 2) return 2;
    const kvplan::Model m = kvplan::load_bundled_model(argv[1], "llama-3-8b");
    const kvplan::Bytes b = kvplan::kv_bytes_per_token(m, kvplan::KvDtype::bf16);
    fmt::print("{}: {} per token ({} B)\n", m.name(), b, fmt::group_digits(b.count()));
}

#include <cstdio>
#include <kvplan/kvplan.hpp>

int main() {
    using namespace kvplan;
    constexpr Bytes per_token = kv_bytes_per_token(presets::llama_3_70b, KvDtype::bf16);
    static_assert(per_token == 320 * KiB);
    std::printf("%.*s: %llu B per token\n", static_cast<int>(presets::llama_3_70b.name().size()),
                presets::llama_3_70b.name().data(),
                static_cast<unsigned long long>(per_token.count()));
}

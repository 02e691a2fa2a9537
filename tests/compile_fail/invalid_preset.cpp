// A model with zero KV heads must fail validation at compile time.
#include <kvplan/model.hpp>
using namespace kvplan;
#ifdef KVPLAN_CF_TWIN
constexpr std::uint32_t heads = 8;
#else
constexpr std::uint32_t heads = 0;
#endif
[[maybe_unused]] constexpr Model m{
    ModelConfig{.layers = LayerStack::uniform(4, full_attention(heads, 64)),
                .num_heads = 8,
                .hidden_size = 512,
                .intermediate_size = 1024,
                .vocab_size = 100}};

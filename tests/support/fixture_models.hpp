#pragma once

// Models that tests of several families share and that no bundled config holds: written once, so
// that every test of the same log reads the same shape.

#include <array>
#include <kvplan/model.hpp>

namespace kvplan::testing {

/// The 40-layer hybrid of a vLLM v0.17.0 log (three linear-attention layers to one full layer, 2
/// KV heads of 256; tests/engine/test_engine.cpp derives its figures): "Setting attention block
/// size to 2096 tokens", "GPU KV cache size: 159,296 tokens" at 6.08 GiB of fp8 KV. An attention
/// block of 2,096 = 16 x 131 tokens pins a state of 130 x 16,384 < state <= 131 x 16,384 B; any
/// state in that range gives the log's figures, 2,140,000 B is one.
inline Model hybrid_40() {
    const CacheSpec linear = constant_state(Bytes::exactly(2'140'000));
    return Model{ModelConfig{.name = "hybrid-40",
                             .layers = LayerStack::periodic(
                                 40, std::array{linear, linear, linear, full_attention(2, 256)}),
                             .num_heads = 16,
                             .head_dim = 256,
                             .hidden_size = 2048,
                             .intermediate_size = 512,
                             .vocab_size = 248320,
                             .max_position_embeddings = 262144}};
}

}  // namespace kvplan::testing

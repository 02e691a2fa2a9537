#pragma once

// What a Hugging Face config.json does not say and the import must be told.

#include <cstdint>
#include <string>

namespace kvplan {

/// Choices the config file does not make: how wide the values of Mamba and linear-attention
/// state are, as vLLM's --mamba-cache-dtype and --mamba-ssm-cache-dtype choose them
/// (MambaStateDtypeCalculator in vllm/model_executor/layers/mamba/mamba_utils.py).
struct HfImportOptions {
    /// Bytes per value of the convolution state, and of the recurrent (SSM) state unless
    /// ssm_state_element_bytes says otherwise (2: bf16, vLLM's "auto" for a bf16 model).
    std::uint32_t state_element_bytes = 2;
    /// Bytes per value of the recurrent (SSM) state; 0: as state_element_bytes (vLLM's "auto").
    std::uint32_t ssm_state_element_bytes = 0;
    /// A transformers model_type to import the file as, whatever it says (for a config whose own
    /// model_type kvplan does not know); empty: the file's own.
    std::string model_type{};
};

}  // namespace kvplan

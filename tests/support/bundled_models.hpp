#pragma once

// The bundled model configs (configs/models/) and the official figures (tests/data/) as the
// config.json import tests read them.

#include <cstdint>
#include <filesystem>
#include <kvplan/gpu_spec.hpp>
#include <kvplan/hf_config.hpp>
#include <kvplan/kv_bytes.hpp>
#include <string>
#include <string_view>

namespace kvplan::testing {

inline const std::filesystem::path config_dir{KVPLAN_CONFIG_DIR};
inline const std::filesystem::path data_dir{KVPLAN_TEST_DATA_DIR};

/// A bundled config by id, imported with the default options.
inline Model bundled(std::string_view id) { return load_bundled_model(config_dir, id); }

/// A bundled GPU spec by id (configs/gpus/<id>.json).
inline GpuSpec bundled_gpu(std::string_view id) {
    return load_gpu_spec(config_dir / "gpus" / (std::string(id) + ".json")).spec;
}

/// A bundled config's JSON, to edit into a bad variant.
inline Json bundled_json(std::string_view id) {
    return read_json_file(config_dir / "models" / (std::string(id) + ".json"));
}

/// KV bytes per token of the whole model in bf16.
inline std::uint64_t kv_token(const Model& m) {
    return kv_bytes_per_token(m, KvDtype::bf16).count();
}

}  // namespace kvplan::testing

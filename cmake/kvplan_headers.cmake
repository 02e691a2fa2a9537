# Every public header, by target. The build names its headers (no glob): a test checks that every
# header under include/ is listed here exactly once (tests/headers_listed.cmake).

# The core: what <kvplan/core.hpp> and <kvplan/presets.hpp> reach; light standard headers only.
set(KVPLAN_CORE_HEADERS
  kvplan/admission.hpp
  kvplan/admission/admission.hpp
  kvplan/admission/block_pool.hpp
  kvplan/capacity.hpp
  kvplan/core.hpp
  kvplan/detail/checked.hpp
  kvplan/detail/enum_table.hpp
  kvplan/detail/message.hpp
  kvplan/dtype.hpp
  kvplan/error.hpp
  kvplan/fixed_array.hpp
  kvplan/kv_bytes.hpp
  kvplan/layout.hpp
  kvplan/model.hpp
  kvplan/optional.hpp
  kvplan/paging.hpp
  kvplan/presets.hpp
  kvplan/units.hpp
  kvplan/version.hpp
  kvplan/weight_format.hpp
)

# Planning: weights, GPUs, budgets, engines, rooflines, traces, fleets, calibration, charts; standard
# library only. Part of kvplan::kvplan with the core.
set(KVPLAN_PLANNING_HEADERS
  kvplan/admission/engine_pools.hpp
  kvplan/budget.hpp
  kvplan/budget/budget.hpp
  kvplan/budget/replica.hpp
  kvplan/budget/reserve.hpp
  kvplan/budget/search.hpp
  kvplan/calibrate.hpp
  kvplan/calibrate/latency.hpp
  kvplan/detail/flat_json.hpp
  kvplan/detail/nearest.hpp
  kvplan/detail/scale.hpp
  kvplan/detail/text.hpp
  kvplan/engine.hpp
  kvplan/engine/ideal.hpp
  kvplan/engine/kind.hpp
  kvplan/engine/release.hpp
  kvplan/engine/report.hpp
  kvplan/engine/sglang.hpp
  kvplan/engine/trtllm.hpp
  kvplan/engine/vllm.hpp
  kvplan/engine/vllm_backend.hpp
  kvplan/fleet.hpp
  kvplan/gpu.hpp
  kvplan/json_position.hpp
  kvplan/kv_support.hpp
  kvplan/kvplan.hpp
  kvplan/plain_decoder.hpp
  kvplan/plan.hpp
  kvplan/plan/check.hpp
  kvplan/plan/commands.hpp
  kvplan/plan/curves.hpp
  kvplan/plan/deployment.hpp
  kvplan/plan/disaggregated.hpp
  kvplan/plan/evaluate.hpp
  kvplan/plan/review.hpp
  kvplan/plan/search.hpp
  kvplan/plan/speculation.hpp
  kvplan/plan/tiers.hpp
  kvplan/policy/requirements.hpp
  kvplan/roofline.hpp
  kvplan/roofline/attention_io.hpp
  kvplan/roofline/decode.hpp
  kvplan/roofline/estimate.hpp
  kvplan/roofline/prefill.hpp
  kvplan/roofline/step_cost.hpp
  kvplan/svg.hpp
  kvplan/trace.hpp
  kvplan/trace/distributions.hpp
  kvplan/trace/reading.hpp
  kvplan/trace/replay.hpp
  kvplan/transfer.hpp
  kvplan/weights.hpp
  kvplan/weights/bytes.hpp
  kvplan/weights/format.hpp
  kvplan/weights/tensors.hpp
)

# kvplan::json: the headers that include nlohmann_json.
set(KVPLAN_JSON_HEADERS
  kvplan/calibrate/bench_result.hpp
  kvplan/gpu_spec.hpp
  kvplan/hf_config.hpp
  kvplan/hf_config/checkpoint.hpp
  kvplan/hf_config/context_limit.hpp
  kvplan/hf_config/deci.hpp
  kvplan/hf_config/families.hpp
  kvplan/hf_config/fields.hpp
  kvplan/hf_config/import.hpp
  kvplan/hf_config/import_impl.hpp
  kvplan/hf_config/layer_kinds.hpp
  kvplan/hf_config/moe.hpp
  kvplan/hf_config/options.hpp
  kvplan/hf_config/quant_modules.hpp
  kvplan/hf_config/recurrent.hpp
  kvplan/hf_config/state_space.hpp
  kvplan/hf_config/vision.hpp
  kvplan/json.hpp
  kvplan/policy.hpp
  kvplan/policy/read.hpp
  kvplan/price_file.hpp
)

# kvplan::format: fmt formatters.
set(KVPLAN_FORMAT_HEADERS
  kvplan/format.hpp
)

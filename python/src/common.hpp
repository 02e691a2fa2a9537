#pragma once

// What the files of the kvplan Python module share: the conversions from Python values to the
// library's types, the errors, the resolved model and GPU, and the deployment its classes and
// functions hold. The module binds the library (include/kvplan) and nothing else: no command line
// code, no flag text, no JSON in the path of a call.
//
// Every argument is checked here before it reaches the library: a broken precondition there ends
// the process (KVPLAN_EXPECTS), which a Python caller must never see. Bad values raise
// kvplan.UsageError ("field: expected X, found Y"); the library's errors (kvplan::Error and its
// subclasses) raise kvplan.InvalidInputError and its subclasses, carrying the library's message.

#include <fmt/format.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cstdint>
#include <filesystem>
#include <kvplan/calibrate.hpp>
#include <kvplan/dtype.hpp>
#include <kvplan/engine.hpp>
#include <kvplan/format.hpp>
#include <kvplan/gpu.hpp>
#include <kvplan/hf_config.hpp>
#include <kvplan/model.hpp>
#include <kvplan/plan/deployment.hpp>
#include <kvplan/plan/evaluate.hpp>
#include <kvplan/plan/size.hpp>
#include <kvplan/plan/tiers.hpp>
#include <kvplan/roofline.hpp>
#include <kvplan/trace/reading.hpp>
#include <kvplan/units.hpp>
#include <kvplan/weights.hpp>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace kvplan::python {

namespace py = pybind11;

// ---------------------------------------------------------------------------------------------
// Errors (convert.cpp).

/// An argument the module cannot take: kvplan.UsageError.
class UsageError : public std::runtime_error {
    using std::runtime_error::runtime_error;
};

/// kvplan::Error and its subclasses, and UsageError, as the classes of kvplan/_errors.py.
void translate(std::exception_ptr p);

/// "field: expected X, found Y", the shape of every kvplan message, as a kvplan.UsageError.
[[noreturn]] void usage(std::string_view field, std::string_view expected, std::string_view found);

/// A value of the wrong Python type: TypeError "field: expected X, found <type>".
[[noreturn]] void wrong_type(std::string_view field, std::string_view expected, py::handle found);

// ---------------------------------------------------------------------------------------------
// Python values as the library's types (convert.cpp). `field` is the keyword, named in errors.

/// Where the bundled configs are: set by kvplan/__init__.py (config_dir()).
std::filesystem::path& config_dir();

/// A whole number >= `min`: an int (not a bool).
std::uint64_t to_count(py::handle h, std::string_view field, std::string_view unit,
                       std::uint64_t min = 1);
/// A whole number in [min, max].
std::uint32_t to_u32(py::handle h, std::string_view field, std::string_view unit, std::uint32_t max,
                     std::uint32_t min = 1);
/// A token count: an int, or a string as vLLM's --max-model-len reads one ("8k" = 8,000,
/// "8K" = 8,192).
std::uint64_t to_tokens(py::handle h, std::string_view field);
/// A count of bytes: an int, or a string naming its unit ("5.38GiB", "80GB").
Bytes to_size(py::handle h, std::string_view field);
/// A fraction in (0, 1]: a float or an int.
double to_fraction(py::handle h, std::string_view field);
/// A share in [0, 1]: a float or an int.
double to_share(py::handle h, std::string_view field);
/// A positive real number.
double to_positive(py::handle h, std::string_view field);
/// A switch whose default is someone else's: True or False, or None (nullopt: the default).
std::optional<bool> to_switch(py::handle h, std::string_view field);
/// A str.
std::string to_text(py::handle h, std::string_view field);
/// An id or a path: str or os.PathLike.
std::string path_text(py::handle h, std::string_view field);

KvFormat to_kv_format(py::handle h, std::string_view field);
/// to_kv_format, or nullopt for None: what the engine's "auto" stores for the checkpoint, which
/// the library resolves (served_kv).
std::optional<KvFormat> to_kv_choice(py::handle h, std::string_view field);
Engine to_engine(py::handle h, std::string_view field);
WeightFormat to_weight_format(py::handle h, std::string_view field);
std::optional<ComputeDtype> to_compute_dtype(py::handle h, std::string_view field);

/// "12,345".
std::string grouped(std::uint64_t n);

// ---------------------------------------------------------------------------------------------
// Model and Gpu (inputs.cpp): a bundled id is read once and cached.

struct PyModel {
    std::string id;      ///< what it was resolved from: a bundled id or a path
    std::string source;  ///< where its numbers come from
    Model model;
    std::vector<std::string> notes{};  ///< what the import assumed that the file does not say

    [[nodiscard]] const Model& get() const { return model; }
};

struct PyGpu {
    std::string id;      ///< the canonical id (h100-sxm)
    std::string source;  ///< the spec file
    GpuSpec spec{};
    std::vector<std::string> aliases{};
};

/// A kvplan.Model, or what its constructor takes (a bundled id, a preset, a path).
std::shared_ptr<PyModel> as_model(py::handle h, const HfImportOptions& import = {});
/// A kvplan.Gpu, or what its constructor takes (a bundled id or alias, a path).
std::shared_ptr<PyGpu> as_gpu(py::handle h);
/// The import options of vLLM's --mamba-cache-dtype and --mamba-ssm-cache-dtype.
HfImportOptions import_options(py::handle mamba, py::handle ssm);

// ---------------------------------------------------------------------------------------------
// Deployment and its answer (deployment.cpp).

struct PyDeployment {
    std::shared_ptr<PyModel> model;
    std::shared_ptr<PyGpu> gpu;
    Deployment deployment;
    /// What no GPU or demand changes (the layout, each stage's weights and matmul shapes, the
    /// drafter), computed once: evaluate() pays only for what a demand changes.
    PreparedLayout prepared;
    std::uint64_t default_context = 0;  ///< the model's limit
    std::string profile_path{};         ///< profile=
    std::uint32_t replica_gpus = 1;     ///< GPUs of one replica (dp x tp x pp under vLLM's rules)
    std::uint32_t gpus = 1;             ///< every GPU deployed
    std::uint32_t replicas = 1;
    /// The decode bound's batch- and context-free costs (detail::decode_costs_with, as evaluate()
    /// builds them each call from the same inputs), built once: an evaluation then pays for
    /// decode_point alone. Unset: evaluate() computes the bound itself (a GPU without the figures,
    /// or a deployment evaluated once: kvplan.fit's, a search's candidates).
    std::optional<DecodeCosts> decode_costs{};
    /// The figures no demand changes (the serving knobs resolved, the start-up check, the loaded
    /// weights, each stage's memory), built once with decode_costs. Unset: evaluate() computes
    /// them each call (kvplan.fit's deployment, evaluated once).
    std::optional<PreparedEngine> engine{};
};

/// The decode costs of `d`'s step as evaluate() builds them with the default roofline options:
/// of the model's own step when a drafter's layers are appended (plan/evaluate.hpp). Unset when
/// the GPU lacks the figures, or the roofline refuses the replica (evaluate() then says why).
std::optional<DecodeCosts> prepare_decode(const Deployment& d, const PreparedLayout& prepared);

/// evaluate() as Deployment.evaluate runs it: the longest contexts left out (searched when read).
inline constexpr EvaluateOptions fast_options{.contexts = false};
/// The same, the decode bound left to PyDeployment::decode_costs.
inline constexpr EvaluateOptions prepared_options{.contexts = false, .decode = false};
/// The longest contexts alone.
inline constexpr EvaluateOptions contexts_options{
    .contexts = true, .decode = false, .estimate = false};
/// Nothing but the budget: what a check of the deployment itself needs.
inline constexpr EvaluateOptions budget_options{
    .contexts = false, .decode = false, .estimate = false};

struct PyAnswer {
    ReplicaAnswer a;
    std::shared_ptr<const PyDeployment> dep;
    bool searched = false;
    /// The KV tiers beside the GPUs the call asked for (host_kv ... remote_kv) and their
    /// figures (kvplan::kv_tiers); unset: none asked.
    TierSizes tiers{};
    std::optional<TierAnswer> tier_answer{};

    PyAnswer(ReplicaAnswer answer, std::shared_ptr<const PyDeployment> d, bool contexts = false)
        : a(std::move(answer)), dep(std::move(d)), searched(contexts) {}
    /// The answer `make()` returns, built in place: no copy of its 13 KB, and no zeroing of them
    /// first, which GCC does for an aggregate built with new.
    template <class Make>
    PyAnswer(std::in_place_t, Make&& make, std::shared_ptr<const PyDeployment> d)
        : a(std::forward<Make>(make)()), dep(std::move(d)) {}

    /// The longest contexts, searched on first read (a binary search over the engine's cache).
    const ReplicaAnswer& contexts();
};

/// The latency estimate and the parameters it ran with (kvplan.LatencyEstimate).
struct PyEstimate {
    LatencyEstimate e;
    EstimateParams params;
};

/// kvplan.Size: a model's KV bytes (kvplan::size), with the model sized.
struct PySize {
    std::shared_ptr<PyModel> model;
    SizeAnswer a;
};

/// A decode bound at one batch and context (kvplan.DecodePoint).
struct PyDecodePoint {
    DecodePoint p;
};

/// The keywords of a deployment (kvplan.Deployment's), as a call gave them: each a borrowed
/// handle, the keyword's default where the call left it out (deployment_keywords(), the one
/// table of their names, defaults and docs). Read by the functions below, each with the keyword's
/// name in its errors.
struct DeploymentArgs {
    py::handle model, gpu, tp, pp, dp, ep, dcp, gpus, kv_dtype, weight_dtype, expert_dtype, engine,
        engine_version, block_size, gpu_memory_utilization, kv_memory, max_num_seqs,
        max_num_batched_tokens, num_gpu_blocks_override, allow_long_context, enforce_eager,
        speculative_method, num_speculative_tokens, draft_model, profile, chunked_local_hybrid,
        without_flashinfer, max_loras, max_lora_rank, fully_sharded_loras, max_cpu_loras,
        lora_target_modules, limit_mm_per_prompt, skip_mm_profiling, redundant_experts;
};

// ---------------------------------------------------------------------------------------------
// Keywords and signatures (keywords.cpp): every function that takes deployment keywords reads
// them from one table through its Signature, so that a keyword is named, defaulted and
// documented once.

/// A deployment keyword: its name, the field it fills, its default, and what it is.
struct Keyword {
    std::string_view name;
    py::handle DeploymentArgs::*field;
    py::handle value;      ///< the default, kept for the module's life; null: required
    std::string_view doc;  ///< one sentence, for the docstrings
};

/// The table: the deployment keywords in the order the signatures list them (model and gpu
/// first, required).
const std::vector<Keyword>& deployment_keywords();
/// Every deployment keyword but model and gpu: kvplan.Deployment's and kvplan.fit's.
std::vector<std::string_view> every_deployment_keyword();

/// `names` and the keywords of a replica's budget: the engine and its knobs (engine ...
/// without_flashinfer), the LoRA slots and a vision model's images (max_loras ...
/// skip_mm_profiling), which every function with a KV budget takes as kvplan fit does.
std::vector<std::string_view> with_budget_keywords(std::vector<std::string_view> names);

/// A parameter of a function: its name, its default (null: required) and, for a deployment
/// keyword, the field it fills.
struct Param {
    std::string name;
    py::object value{};
    py::handle DeploymentArgs::*field = nullptr;
};

/// A parameter of the function's own.
Param own(std::string name);                    ///< required
Param own(std::string name, py::object value);  ///< with its default
/// A deployment keyword (model, gpu) with the table's default, or another one.
Param deploy(std::string_view name);
Param deploy(std::string_view name, py::object value);

/// What a function takes: its parameters in order, the first `positional` of them by position or
/// by name, the rest by name alone, then the deployment keywords named, in the table's order.
class Signature {
   public:
    Signature(std::string function, std::size_t positional, std::vector<Param> params,
              const std::vector<std::string_view>& deployment = {}, bool method = false);

    /// "fit(model, gpu, *, context=None, ...)\n--\n\n" + body: the docstring, whose first line
    /// inspect.signature and help() read.
    [[nodiscard]] std::string doc(std::string_view body) const;
    [[nodiscard]] const std::string& function() const { return function_; }
    [[nodiscard]] const std::vector<Param>& params() const { return params_; }
    [[nodiscard]] std::size_t positional() const { return positional_; }
    /// The index of `name`; a name the signature lacks is the module's bug (std::logic_error).
    [[nodiscard]] std::size_t index(std::string_view name) const;

   private:
    std::string function_;
    std::size_t positional_;
    std::vector<Param> params_;
    bool method_;
};

/// One call's arguments bound to a signature as Python binds them: a TypeError naming the
/// keyword for one the function does not take, a value given twice, a required one missing or
/// too many by position.
class Call {
   public:
    Call(const Signature& s, const py::args& args, const py::kwargs& kwargs);
    /// The value of `name` (given or its default): a borrowed handle.
    [[nodiscard]] py::handle operator[](std::string_view name) const;
    /// The deployment keywords: the table's defaults, those the call gave over them.
    [[nodiscard]] DeploymentArgs deployment() const;

   private:
    const Signature& s_;
    std::vector<py::handle> values_;
};

/// The deployment keywords' docs, one line each ("tp=1: ..."), for a docstring.
std::string keyword_docs(const std::vector<std::string_view>& names);

/// True or False (or what converts to them, as pybind11 reads a bool: None is False).
bool to_flag(py::handle h, std::string_view field);

/// The speculative decoding the keywords state (speculative_method, num_speculative_tokens,
/// draft_model) under `engine`, checked as the command line checks its flags; a draft model is
/// read with `import`.
Speculation speculation_of(const DeploymentArgs& x, Engine engine, const HfImportOptions& import);

/// The parallel layout the keywords state (tp, pp, dp, ep, dcp).
ParallelConfig parallel_of(const DeploymentArgs& x);
/// Every GPU deployed (gpus=; 0: one replica).
std::uint32_t gpu_count_of(const DeploymentArgs& x);

/// The weights' formats the keywords name (weight_dtype, expert_dtype); nullopt: neither given,
/// the checkpoint's own.
std::optional<WeightOptions> weights_of(const DeploymentArgs& x);

/// The engine and its knobs the keywords state (engine ... allow_long_context, enforce_eager).
Serving serving_of(const DeploymentArgs& x);

/// The Deployment the keywords state, its model and GPU resolved (cached by name).
Deployment deployment_of(const DeploymentArgs& x, std::shared_ptr<PyModel>& model,
                         std::shared_ptr<PyGpu>& gpu, std::string& profile_path);

/// A prepared kvplan.Deployment, checked at a demand that cannot fail.
std::shared_ptr<PyDeployment> deployment_from(const DeploymentArgs& x);

/// A demand: context (None: the split's sum, else the model's limit) and concurrency; the shared
/// prefix given in tokens or as a share of the prompt (prefix_hit_rate, the library's
/// shared_prefix_of_hit_rate); the run the estimate times (length_spread, num_prompts and
/// fixed_lengths, as --length-spread, --num-prompts and --fixed-lengths: the library's RunShape).
Demand demand_of(std::uint64_t default_context, py::handle context, py::handle concurrency,
                 py::handle prompt_tokens = py::none(), py::handle output_tokens = py::none(),
                 py::handle shared_prefix_tokens = py::none(),
                 py::handle prefix_hit_rate = py::none(), py::handle length_spread = py::none(),
                 py::handle num_prompts = py::none(), py::handle fixed_lengths = py::none());

/// time_unit= (trace.cpp): the unit of a trace's numeric arrival times, as --time-unit reads it.
TraceOptions trace_options_of(py::handle h);

/// Deployment.roofline (roofline.cpp): a kvplan.Roofline.
py::object make_roofline(const std::shared_ptr<PyDeployment>& d, py::handle compute_dtype);
/// Deployment.block_pool (block_pool.cpp): a kvplan.BlockPool.
py::object engine_pool(const std::shared_ptr<PyDeployment>& d, py::handle context,
                       const std::string& policy);

// ---------------------------------------------------------------------------------------------
// The families, each binding its classes and functions into the module.

void bind_inputs(py::module_& m);
void bind_deployment(py::module_& m);
void bind_roofline(py::module_& m);
void bind_block_pool(py::module_& m);
void bind_plan(py::module_& m);
void bind_trace(py::module_& m);
void bind_calibrate(py::module_& m);
void bind_check(py::module_& m);

}  // namespace kvplan::python

// The deployment keywords, named, defaulted and documented once, and each function's signature
// bound as Python binds one: the functions that take a deployment's keywords (Deployment, fit,
// compare, plan, disagg, fleet, roofline, trace, diff, calibrate) take py::args and py::kwargs
// and read them through a Signature, instead of a parameter list each.

#include <algorithm>
#include <stdexcept>

#include "common.hpp"

namespace kvplan::python {

namespace {

/// A default kept for the module's life: never given back, so that no interpreter shutdown
/// frees it under a static.
py::handle kept(py::object o) { return o.release(); }

/// The table's entry for `name`, or null.
const Keyword* find_keyword(std::string_view name) {
    for (const Keyword& k : deployment_keywords())
        if (k.name == name) return &k;
    return nullptr;
}

const Keyword& keyword(std::string_view name) {
    const Keyword* k = find_keyword(name);
    if (!k) throw std::logic_error(fmt::format("no deployment keyword '{}'", name));
    return *k;
}

}  // namespace

const std::vector<Keyword>& deployment_keywords() {
    using D = DeploymentArgs;
    // Built on first use, when the interpreter runs (module import), and never freed.
    static const auto* table = new std::vector<Keyword>{
        {"model", &D::model, {}, "a kvplan.Model, or what its constructor takes"},
        {"gpu", &D::gpu, {}, "a kvplan.Gpu, or what its constructor takes"},
        {"tp", &D::tp, kept(py::int_(1)), "tensor-parallel GPUs (--tp)"},
        {"pp", &D::pp, kept(py::int_(1)), "pipeline stages (--pp)"},
        {"dp", &D::dp, kept(py::int_(1)),
         "attention data-parallel ranks (vLLM --data-parallel-size, a replica of dp x tp x pp "
         "GPUs; SGLang --dp-size with --enable-dp-attention, within the tp GPUs)"},
        {"ep", &D::ep, kept(py::int_(1)),
         "GPUs the routed experts spread over (vLLM --enable-expert-parallel: dp x tp)"},
        {"dcp", &D::dcp, kept(py::int_(1)),
         "ranks a sequence's tokens split over (vLLM --decode-context-parallel-size)"},
        {"gpus", &D::gpus, kept(py::none()),
         "every GPU deployed, a multiple of a replica's GPUs: gpus / replica_gpus replicas share "
         "the concurrency (None: one replica)"},
        {"kv_dtype", &D::kv_dtype, kept(py::none()),
         "the KV cache's dtype (None: what the engine's auto stores for the checkpoint)"},
        {"weight_dtype", &D::weight_dtype, kept(py::none()),
         "the weights' format (None: the checkpoint's)"},
        {"expert_dtype", &D::expert_dtype, kept(py::none()),
         "the routed experts' format (None: weight_dtype's)"},
        {"engine", &D::engine, kept(py::str("vllm")), "vllm, sglang, trtllm or ideal"},
        {"engine_version", &D::engine_version, kept(py::none()),
         "the vLLM release whose defaults apply, as X.Y (None: the newest)"},
        {"block_size", &D::block_size, kept(py::none()), "tokens per KV block"},
        {"gpu_memory_utilization", &D::gpu_memory_utilization, kept(py::none()),
         "the fraction of GPU memory the engine takes"},
        {"kv_memory", &D::kv_memory, kept(py::none()),
         "KV memory per GPU instead of a fraction: an int of bytes or a string naming its unit, "
         "'5.38GiB'"},
        {"max_num_seqs", &D::max_num_seqs, kept(py::none()), "the engine's sequence cap"},
        {"max_num_batched_tokens", &D::max_num_batched_tokens, kept(py::none()),
         "tokens of one scheduler step"},
        {"num_gpu_blocks_override", &D::num_gpu_blocks_override, kept(py::none()),
         "vLLM's block count, instead of the one its profile gives"},
        {"allow_long_context", &D::allow_long_context, kept(py::bool_(false)),
         "contexts past the model's limit (VLLM_ALLOW_LONG_MAX_MODEL_LEN)"},
        {"enforce_eager", &D::enforce_eager, kept(py::bool_(false)),
         "vLLM's --enforce-eager: no CUDA graphs and no all-reduce fusion workspace charged, "
         "refused under another engine"},
        {"speculative_method", &D::speculative_method, kept(py::none()),
         "vLLM's speculative_config method: ngram, eagle, eagle3, mtp or draft_model"},
        {"num_speculative_tokens", &D::num_speculative_tokens, kept(py::none()),
         "the tokens drafted per step"},
        {"draft_model", &D::draft_model, kept(py::none()),
         "with speculative_method='draft_model': a kvplan.Model or what its constructor takes"},
        {"profile", &D::profile, kept(py::none()),
         "a calibration profile's path, as --profile (Calibration.write_profile)"},
        {"chunked_local_hybrid", &D::chunked_local_hybrid, kept(py::none()),
         "True or False for --chunked-local-hybrid 1 or 0 (None: the release's default)"},
        {"without_flashinfer", &D::without_flashinfer, kept(py::none()),
         "True or False for --without-flashinfer 1 or 0 (None: the release's default)"},
        {"max_loras", &D::max_loras, kept(py::none()), "LoRA adapter slots (--max-loras)"},
        {"max_lora_rank", &D::max_lora_rank, kept(py::none()), "their rank (--max-lora-rank)"},
        {"fully_sharded_loras", &D::fully_sharded_loras, kept(py::bool_(false)),
         "vLLM's --fully-sharded-loras"},
        {"max_cpu_loras", &D::max_cpu_loras, kept(py::none()),
         "adapters held in host memory (--max-cpu-loras)"},
        {"lora_target_modules", &D::lora_target_modules, kept(py::none()),
         "SGLang's --lora-target-modules, a comma-separated list"},
        {"limit_mm_per_prompt", &D::limit_mm_per_prompt, kept(py::none()),
         "images per prompt of a vision model: an int or {'image': N}"},
        {"skip_mm_profiling", &D::skip_mm_profiling, kept(py::bool_(false)),
         "vLLM's --skip-mm-profiling"},
        {"redundant_experts", &D::redundant_experts, kept(py::none()),
         "EPLB's physical experts beyond the routed ones"},
    };
    return *table;
}

std::vector<std::string_view> every_deployment_keyword() {
    std::vector<std::string_view> out;
    for (const Keyword& k : deployment_keywords())
        if (k.name != "model" && k.name != "gpu") out.push_back(k.name);
    return out;
}

std::vector<std::string_view> with_budget_keywords(std::vector<std::string_view> names) {
    for (const std::string_view n :
         {"engine", "engine_version", "block_size", "gpu_memory_utilization", "kv_memory",
          "max_num_seqs", "max_num_batched_tokens", "num_gpu_blocks_override", "allow_long_context",
          "enforce_eager", "chunked_local_hybrid", "without_flashinfer", "max_loras",
          "max_lora_rank", "fully_sharded_loras", "max_cpu_loras", "lora_target_modules",
          "limit_mm_per_prompt", "skip_mm_profiling"})
        names.push_back(n);
    return names;
}

Param own(std::string name) { return Param{std::move(name)}; }

Param own(std::string name, py::object value) { return Param{std::move(name), std::move(value)}; }

Param deploy(std::string_view name) {
    const Keyword& k = keyword(name);
    return Param{std::string(name), py::reinterpret_borrow<py::object>(k.value), k.field};
}

Param deploy(std::string_view name, py::object value) {
    return Param{std::string(name), std::move(value), keyword(name).field};
}

Signature::Signature(std::string function, std::size_t positional, std::vector<Param> params,
                     const std::vector<std::string_view>& deployment, bool method)
    : function_(std::move(function)),
      positional_(positional),
      params_(std::move(params)),
      method_(method) {
    // The deployment keywords in the table's order, whatever order they are named in.
    for (const Keyword& k : deployment_keywords())
        if (std::find(deployment.begin(), deployment.end(), k.name) != deployment.end())
            params_.push_back(deploy(k.name));
    for (const std::string_view n : deployment) (void)keyword(n);
    for (std::size_t i = 0; i < params_.size(); ++i)
        for (std::size_t j = 0; j < i; ++j)
            if (params_[i].name == params_[j].name)
                throw std::logic_error(
                    fmt::format("{}: parameter '{}' twice", function_, params_[i].name));
    if (positional_ > params_.size())
        throw std::logic_error(function_ + ": more positional parameters than parameters");
}

std::string Signature::doc(std::string_view body) const {
    // "Deployment.__init__" is named so in errors, as Python names it; its docstring's signature
    // is the method's own name.
    const std::size_t dot = function_.rfind('.');
    std::string s = function_.substr(dot == std::string::npos ? 0 : dot + 1);
    s += method_ ? "(self, /" : "(";
    for (std::size_t i = 0; i < params_.size(); ++i) {
        if (i > 0 || method_) s += ", ";
        if (i == positional_) s += "*, ";
        s += params_[i].name;
        if (params_[i].value) s += "=" + std::string(py::repr(params_[i].value));
    }
    s += ")\n--\n\n";
    s += body;
    return s;
}

std::size_t Signature::index(std::string_view name) const {
    for (std::size_t i = 0; i < params_.size(); ++i)
        if (params_[i].name == name) return i;
    throw std::logic_error(fmt::format("{}: no parameter '{}'", function_, name));
}

namespace {

[[noreturn]] void call_error(const Signature& s, const std::string& what) {
    throw py::type_error(fmt::format("{}() {}", s.function(), what));
}

/// ", did you mean 'concurrency'?" for a keyword near one the function takes, else "".
std::string near_miss(const Signature& s, py::handle given) {
    py::list names;
    for (const Param& p : s.params()) names.append(py::str(p.name));
    const py::list close =
        py::module_::import("difflib").attr("get_close_matches")(given, names, 1);
    if (close.empty()) return "";
    return fmt::format(" (did you mean '{}'?)", py::str(close[0]).cast<std::string>());
}

}  // namespace

Call::Call(const Signature& s, const py::args& args, const py::kwargs& kwargs) : s_(s) {
    const std::vector<Param>& params = s.params();
    const std::size_t given = args.size();
    if (given > s.positional())
        call_error(s, fmt::format("takes {} positional argument{} but {} were given",
                                  s.positional(), s.positional() == 1 ? "" : "s", given));
    values_.reserve(params.size());
    for (const Param& p : params) values_.push_back(p.value);  // null: not given yet
    std::vector<bool> set(params.size(), false);
    for (std::size_t i = 0; i < given; ++i) {
        values_[i] = PyTuple_GET_ITEM(args.ptr(), static_cast<Py_ssize_t>(i));
        set[i] = true;
    }
    for (const auto& [key, value] : kwargs) {
        Py_ssize_t n = 0;
        const char* text = PyUnicode_AsUTF8AndSize(key.ptr(), &n);
        if (!text) throw py::error_already_set();
        const std::string_view name(text, static_cast<std::size_t>(n));
        std::size_t i = 0;
        while (i < params.size() && params[i].name != name) ++i;
        if (i == params.size())
            call_error(s, fmt::format("got an unexpected keyword argument '{}'{}", name,
                                      near_miss(s, key)));
        if (set[i]) call_error(s, fmt::format("got multiple values for argument '{}'", name));
        values_[i] = value;
        set[i] = true;
    }
    for (std::size_t i = 0; i < params.size(); ++i)
        if (!values_[i])
            call_error(s, fmt::format("missing required argument '{}'", params[i].name));
}

py::handle Call::operator[](std::string_view name) const { return values_[s_.index(name)]; }

DeploymentArgs Call::deployment() const {
    // The table's defaults, built once (a required keyword's is None).
    static const DeploymentArgs defaults = [] {
        DeploymentArgs d;
        for (const Keyword& k : deployment_keywords())
            d.*k.field = k.value ? k.value : py::handle(Py_None);
        return d;
    }();
    DeploymentArgs x = defaults;
    const std::vector<Param>& params = s_.params();
    for (std::size_t i = 0; i < params.size(); ++i)
        if (params[i].field) x.*params[i].field = values_[i];
    return x;
}

std::string keyword_docs(const std::vector<std::string_view>& names) {
    // "  name=default: doc", its words wrapped at 92 columns under a four-space indent.
    constexpr std::size_t width = 92;
    std::string s;
    for (const std::string_view n : names) {
        const Keyword& k = keyword(n);
        std::string line = fmt::format(
            "  {}={}:", k.name, k.value ? std::string(py::repr(k.value)) : std::string("required"));
        std::string_view rest = k.doc;
        while (!rest.empty()) {
            const std::size_t space = rest.find(' ');
            const std::string_view word = rest.substr(0, space);
            if (line.size() + 1 + word.size() > width) {
                s += line + "\n";
                line = "   ";
            }
            line += " ";
            line += word;
            rest = space == std::string_view::npos ? std::string_view{} : rest.substr(space + 1);
        }
        s += line + "\n";
    }
    return s;
}

bool to_flag(py::handle h, std::string_view field) {
    // As pybind11 read these keywords when they were bool parameters.
    py::detail::make_caster<bool> c;
    if (!c.load(h, true)) wrong_type(field, "True or False", h);
    return static_cast<bool>(c);
}

}  // namespace kvplan::python

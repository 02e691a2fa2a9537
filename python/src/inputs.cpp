// Model and Gpu: a bundled id, a preset or a path, resolved as the command line resolves --model
// and --gpu, through the library's readers (hf_config, gpu_spec). A bundled id is read once per
// config folder and kept: a call that names "llama-3-70b" again pays a look-up, not a parse.

#define KVPLAN_HF_CONFIG_IMPLEMENTATION  // this file compiles the config.json import
#include <kvplan/hf_config.hpp>
//
#include <algorithm>
#include <cctype>
#include <kvplan/detail/nearest.hpp>
#include <kvplan/gpu_spec.hpp>
#include <kvplan/kv_bytes.hpp>
#include <kvplan/plain_decoder.hpp>
#include <kvplan/presets.hpp>
#include <kvplan/weights.hpp>
#include <map>
#include <utility>

#include "common.hpp"

namespace kvplan::python {

namespace {

namespace fs = std::filesystem;

std::string lower(std::string_view s) {
    std::string out(s);
    std::transform(out.begin(), out.end(), out.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    return out;
}

const Model* find_preset(std::string_view id) {
    for (const Model* m : presets::all)
        if (lower(std::string_view(m->name())) == lower(id)) return m;
    return nullptr;
}

std::string bundled_source(const fs::path& file) {
    std::error_code ec;
    const fs::path rel = fs::relative(file, config_dir(), ec);
    return "bundled " + (ec || rel.empty() ? file : rel).generic_string();
}

/// The bundled GPU specs of the current config folder, read once per folder.
const GpuRegistry& registry() {
    static std::map<fs::path, GpuRegistry> loaded;
    const auto it = loaded.find(config_dir());
    if (it != loaded.end()) return it->second;
    return loaded.emplace(config_dir(), GpuRegistry::load(config_dir())).first->second;
}

/// A path wins, then a bundled config, then a preset (as --model): nullptr when `arg` names none.
std::shared_ptr<PyModel> read_model(const std::string& arg, const HfImportOptions& import,
                                    bool& cacheable) {
    std::error_code ec;
    const fs::path p{arg};
    cacheable = false;
    if (fs::exists(p, ec) || p.extension() == ".json" || arg.find('/') != std::string::npos) {
        fs::path file = p;
        if (fs::is_directory(file, ec)) file /= "config.json";
        HfImport m = import_hf_config(p, import);
        return std::make_shared<PyModel>(
            PyModel{arg, file.string(), std::move(m.model), std::move(m.notes)});
    }
    cacheable = true;
    if (const auto file = find_bundled_model(config_dir(), arg)) {
        HfImport m = import_bundled_model(config_dir(), arg, import);
        return std::make_shared<PyModel>(
            PyModel{arg, bundled_source(*file), std::move(m.model), std::move(m.notes)});
    }
    if (const Model* m = find_preset(arg))
        return std::make_shared<PyModel>(PyModel{
            arg, "built-in preset " + std::string(m->name()) + " (kvplan/presets.hpp)", *m});
    std::vector<std::string> known = bundled_model_ids(config_dir());
    std::string ids;
    std::size_t more = 0;
    for (const std::string& id : known) {
        if (ids.size() <= 600)
            ids += (ids.empty() ? "" : ", ") + id;
        else
            ++more;
    }
    if (more != 0) ids += " and " + std::to_string(more) + " more (kvplan.Model.bundled())";
    const std::string near = detail::did_you_mean(arg, known);
    detail::throw_field_error<InvalidInput>(
        "model", "source",
        "a bundled model id (" + (near.empty() ? ids : std::string("kvplan.Model.bundled()")) +
            ") or a path to a config.json",
        "'" + arg + "'" + near);
}

std::shared_ptr<PyModel> model_from(py::handle source, py::handle mamba, py::handle ssm,
                                    py::handle model_type) {
    HfImportOptions import = import_options(mamba, ssm);
    if (!model_type.is_none()) import.model_type = to_text(model_type, "model_type");
    return as_model(source, import);
}

std::shared_ptr<PyModel> model_from_fields(const std::string& name, std::uint32_t layers,
                                           std::uint64_t hidden, std::uint32_t heads,
                                           std::uint32_t kv_heads, std::uint32_t head_dim,
                                           std::uint64_t vocab, std::uint64_t intermediate,
                                           std::uint32_t experts, std::uint32_t experts_per_tok,
                                           std::uint64_t moe_intermediate, std::uint64_t window,
                                           std::uint64_t max_position, bool tie) {
    if (name.size() > ModelName::max_size)
        usage("name", fmt::format("at most {} characters", ModelName::max_size),
              std::to_string(name.size()) + " characters");
    const PlainDecoder p{.name = ModelName(std::string_view(name)),
                         .num_hidden_layers = layers,
                         .hidden_size = hidden,
                         .num_attention_heads = heads,
                         .num_key_value_heads = kv_heads,
                         .head_dim = head_dim,
                         .vocab_size = vocab,
                         .intermediate_size = intermediate,
                         .num_experts = experts,
                         .num_experts_per_tok = experts_per_tok,
                         .moe_intermediate_size = moe_intermediate,
                         .sliding_window = window,
                         .max_position_embeddings = max_position,
                         .tie_word_embeddings = tie};
    return std::make_shared<PyModel>(PyModel{name.empty() ? "inline model" : name,
                                             "inline fields (kvplan.Model.from_fields)",
                                             plain_decoder(p)});
}

std::string bytes_text(Bytes b) { return fmt::format("{}", b); }

std::string model_repr(const PyModel& m) {
    const Model& x = m.get();
    return fmt::format("<kvplan.Model '{}': {}, {} layers, limit {} tokens ({})>", m.id,
                       x.name().empty() ? m.id : std::string(x.name()), x.num_layers(),
                       grouped(context_limit(x.config()).tokens), m.source);
}

std::string gpu_repr(const PyGpu& g) {
    return fmt::format("<kvplan.Gpu '{}': {}, {}, {} ({})>", g.id, std::string(g.spec.name),
                       bytes_text(g.spec.memory_total), fmt::format("{}", g.spec.memory_bandwidth),
                       g.source);
}

namespace docs {

constexpr const char* model_doc = R"(A model, resolved as kvplan's --model resolves it.

source is a bundled id ("llama-3-70b", see Model.bundled()), a built-in preset, or a path
(str or os.PathLike) to a Hugging Face config.json or to a folder holding one. The two
keywords are vLLM's flags for the state of Mamba and linear-attention layers.
Model.from_fields(...) builds a plain decoder from its config.json numbers instead.

Raises kvplan.InvalidInputError for an unknown id (with the nearest one) or a file that
cannot be read, parsed or mapped, and kvplan.InvalidModelError for numbers no model has.)";

constexpr const char* gpu_doc = R"(A GPU, resolved as kvplan's --gpu resolves it.

source is a bundled id or alias ("h100-sxm", "h100"; see Gpu.bundled()) or a path to a GPU
spec JSON (configs/gpus/README.md). Raises kvplan.InvalidInputError for an unknown id (with
the nearest one) or a bad spec file.)";

}  // namespace docs

}  // namespace

HfImportOptions import_options(py::handle mamba, py::handle ssm) {
    // vLLM's MambaDType spellings, and ours; "auto" keeps the importer's default.
    const auto bytes_of = [](py::handle h, std::string_view field) -> std::uint32_t {
        const std::string t = lower(to_text(h, field));
        if (t == "auto") return 0;
        if (t == "float32" || t == "fp32") return 4;
        if (t == "float16" || t == "fp16" || t == "bfloat16" || t == "bf16") return 2;
        usage(field, "auto, bfloat16, float16 or float32", std::string(py::repr(h)));
    };
    HfImportOptions import;
    if (const std::uint32_t b = bytes_of(mamba, "mamba_cache_dtype"); b != 0)
        import.state_element_bytes = b;
    import.ssm_state_element_bytes = bytes_of(ssm, "mamba_ssm_cache_dtype");
    return import;
}

std::shared_ptr<PyModel> as_model(py::handle h, const HfImportOptions& import) {
    if (py::isinstance<PyModel>(h)) return py::cast<std::shared_ptr<PyModel>>(h);
    const std::string arg = path_text(h, "model");
    if (arg.empty()) usage("model", "a model id or a path to a config.json", "''");
    // Keyed by the folder, the name and the import options: the same name under other options
    // or another folder is another model.
    static std::map<std::string, std::shared_ptr<PyModel>> cache;
    const std::string key =
        fmt::format("{}\n{}\n{}\n{}\n{}", config_dir().string(), arg, import.state_element_bytes,
                    import.ssm_state_element_bytes, import.model_type);
    if (const auto it = cache.find(key); it != cache.end()) return it->second;
    bool cacheable = false;
    std::shared_ptr<PyModel> m = read_model(arg, import, cacheable);
    // A path is read again each time: the file is the caller's and may change.
    if (cacheable) cache.emplace(key, m);
    return m;
}

std::shared_ptr<PyGpu> as_gpu(py::handle h) {
    if (py::isinstance<PyGpu>(h)) return py::cast<std::shared_ptr<PyGpu>>(h);
    const std::string arg = path_text(h, "gpu");
    if (arg.empty()) usage("gpu", "a GPU id or a path to a GPU spec JSON", "''");
    std::error_code ec;
    const fs::path p{arg};
    if (p.extension() == ".json" || fs::is_regular_file(p, ec)) {
        GpuSpecFile f = load_gpu_spec(p);
        return std::make_shared<PyGpu>(
            PyGpu{std::string(f.spec.id), f.file.string(), f.spec, std::move(f.aliases)});
    }
    static std::map<std::string, std::shared_ptr<PyGpu>> cache;
    const std::string key = config_dir().string() + "\n" + lower(arg);
    if (const auto it = cache.find(key); it != cache.end()) return it->second;
    const GpuRegistry& reg = registry();
    const GpuSpecFile* f = reg.find_file(arg);
    if (f == nullptr) {
        std::string known;
        for (const std::string& id : reg.ids()) known += (known.empty() ? "" : ", ") + id;
        const std::string near = detail::did_you_mean(arg, reg.names());
        detail::throw_field_error<InvalidInput>(
            "gpu", "source",
            "a bundled GPU id or alias (" +
                (near.empty() ? known : std::string("kvplan.Gpu.bundled()")) +
                ") or a path to a spec JSON",
            "'" + arg + "'" + near);
    }
    auto g = std::make_shared<PyGpu>(
        PyGpu{std::string(f->spec.id), bundled_source(f->file), f->spec, f->aliases});
    cache.emplace(key, g);
    return g;
}

void bind_inputs(py::module_& m) {
    using namespace docs;
    // Model --------------------------------------------------------------------------------
    py::class_<PyModel, std::shared_ptr<PyModel>>(m, "Model", model_doc)
        .def(py::init(&model_from), py::arg("source"), py::kw_only(),
             py::arg("mamba_cache_dtype") = "auto", py::arg("mamba_ssm_cache_dtype") = "auto",
             py::arg("model_type") = py::none(),
             "__init__(self, /, source, *, mamba_cache_dtype='auto', "
             "mamba_ssm_cache_dtype='auto', model_type=None)\n--\n\nThe model `source` names: a "
             "bundled id, a preset, or a path to a config.json or its folder; model_type imports "
             "the file as that transformers model_type.")
        .def_static(
            "from_fields", &model_from_fields, py::kw_only(), py::arg("name") = "",
            py::arg("num_hidden_layers"), py::arg("hidden_size"), py::arg("num_attention_heads"),
            py::arg("num_key_value_heads") = 0, py::arg("head_dim") = 0, py::arg("vocab_size"),
            py::arg("intermediate_size") = 0, py::arg("num_experts") = 0,
            py::arg("num_experts_per_tok") = 0, py::arg("moe_intermediate_size") = 0,
            py::arg("sliding_window") = 0, py::arg("max_position_embeddings") = 0,
            py::arg("tie_word_embeddings") = false,
            R"(from_fields(*, name='', num_hidden_layers, hidden_size, num_attention_heads, num_key_value_heads=0, head_dim=0, vocab_size, intermediate_size=0, num_experts=0, num_experts_per_tok=0, moe_intermediate_size=0, sliding_window=0, max_position_embeddings=0, tie_word_embeddings=False)
--

A plain decoder from the config.json fields it mirrors.

A Llama-like decoder (gated MLP, RMSNorm, no biases) with optional grouped-query attention
(num_key_value_heads, 0: as many as the attention heads), an optional sliding window on
every layer and optional mixture-of-experts MLPs (num_experts, num_experts_per_tok,
moe_intermediate_size). head_dim 0: hidden_size / num_attention_heads.
Raises kvplan.InvalidModelError naming the field no model could have.)")
        .def_static(
            "bundled",
            [] {
                std::vector<std::string> ids;
                for (const std::string& id : bundled_model_ids(config_dir())) ids.push_back(id);
                for (const Model* p : presets::all) {
                    const std::string id = lower(std::string_view(p->name()));
                    if (!find_bundled_model(config_dir(), id)) ids.push_back(id);
                }
                return ids;
            },
            "bundled()\n--\n\nThe ids of the bundled models and built-in presets.")
        .def_property_readonly(
            "id", [](const PyModel& m) { return m.id; },
            "What it was resolved from: a bundled id or a path (the name for an inline model).")
        .def_property_readonly(
            "source", [](const PyModel& m) { return m.source; },
            "Where its numbers come from: a file, a built-in preset, inline fields.")
        .def_property_readonly(
            "name", [](const PyModel& m) { return std::string(m.get().name()); },
            "The model's name, as its config states it.")
        .def_property_readonly(
            "num_layers", [](const PyModel& m) { return m.get().num_layers(); }, "Layers.")
        .def_property_readonly("hidden_size",
                               [](const PyModel& m) { return m.get().config().hidden_size; })
        .def_property_readonly("num_attention_heads",
                               [](const PyModel& m) { return m.get().config().num_heads; })
        .def_property_readonly("vocab_size",
                               [](const PyModel& m) { return m.get().config().vocab_size; })
        .def_property_readonly(
            "context_limit_tokens",
            [](const PyModel& m) { return context_limit(m.get().config()).tokens; },
            "The longest context the model takes (vLLM's max_model_len rule, rope scaling "
            "applied).")
        .def_property_readonly(
            "num_params", [](const PyModel& m) { return total_params(m.get()); },
            "Parameters of every tensor, tied embeddings once.")
        .def(
            "kv_bytes_per_token",
            [](const PyModel& m, py::handle kv_dtype) {
                return kv_bytes_per_token(m.get(), to_kv_format(kv_dtype, "kv_dtype")).count();
            },
            py::arg("kv_dtype") = "bf16",
            "kv_bytes_per_token($self, /, kv_dtype='bf16')\n--\n\nKV bytes one token takes over "
            "the whole model (kvplan size's kv_bytes_per_token).")
        .def(
            "kv_bytes_per_sequence",
            [](const PyModel& m, py::handle context, py::handle kv_dtype) {
                return kv_bytes_per_sequence(m.get(), to_kv_format(kv_dtype, "kv_dtype"),
                                             to_tokens(context, "context"))
                    .count();
            },
            py::arg("context"), py::arg("kv_dtype") = "bf16",
            "kv_bytes_per_sequence($self, /, context, kv_dtype='bf16')\n--\n\nKV bytes of one "
            "sequence of `context` tokens, windows and fixed state included "
            "(kvplan size's kv_bytes_per_sequence).")
        .def_property_readonly(
            "notes", [](const PyModel& m) { return m.notes; },
            "What the import assumed that the file does not say.")
        .def("__repr__", &model_repr);

    // Gpu ----------------------------------------------------------------------------------
    py::class_<PyGpu, std::shared_ptr<PyGpu>>(m, "Gpu", gpu_doc)
        .def(py::init([](py::handle source) { return as_gpu(source); }), py::arg("source"),
             "__init__(self, /, source)\n--\n\nThe GPU `source` names: a bundled id or alias, "
             "or a path to a spec JSON.")
        .def_static(
            "bundled",
            [] {
                std::vector<std::string> ids;
                return registry().ids();
            },
            "bundled()\n--\n\nThe ids of the bundled GPUs.")
        .def_property_readonly(
            "id", [](const PyGpu& g) { return g.id; }, "The canonical id.")
        .def_property_readonly(
            "name", [](const PyGpu& g) { return std::string(g.spec.name); },
            "The vendor's product name.")
        .def_property_readonly(
            "source", [](const PyGpu& g) { return g.source; }, "The spec file.")
        .def_property_readonly("aliases", [](const PyGpu& g) { return g.aliases; })
        .def_property_readonly(
            "memory_bytes", [](const PyGpu& g) { return g.spec.memory_total.count(); },
            "Memory as the CUDA runtime reports its total, in bytes: where every budget starts.")
        .def_property_readonly(
            "memory_bytes_stated", [](const PyGpu& g) { return g.spec.memory_stated.count(); },
            "The vendor's figure, read in SI units (80 GB = 80e9 bytes), as `kvplan list gpus` "
            "names it.")
        .def_property_readonly(
            "memory_stated_bytes", [](const PyGpu& g) { return g.spec.memory_stated.count(); },
            "The earlier name of memory_bytes_stated.")
        .def_property_readonly(
            "memory_bandwidth_bytes_per_s",
            [](const PyGpu& g) { return g.spec.memory_bandwidth.in(B_per_s); },
            "Peak memory bandwidth, bytes per second.")
        .def(
            "dense_flops_per_s",
            [](const PyGpu& g, py::handle compute_dtype) -> py::object {
                const ComputeDtype d =
                    to_compute_dtype(compute_dtype, "compute_dtype").value_or(ComputeDtype::bf16);
                const auto f = g.spec.dense(d);
                return f ? py::object(py::float_(f->in(FLOP_per_s))) : py::none();
            },
            py::arg("compute_dtype") = "bf16",
            "dense_flops_per_s($self, /, compute_dtype='bf16')\n--\n\nPeak dense tensor FLOP/s in "
            "a compute type, or None when the GPU has none.")
        .def("__repr__", &gpu_repr);
}

}  // namespace kvplan::python

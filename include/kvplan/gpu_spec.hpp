#pragma once

// GPU spec files (schema `kvplan-gpu/1`, configs/gpus/README.md) -> kvplan::GpuSpec, and a registry
// over a folder of them. The budget starts from memory.runtime_total_bytes (the total the CUDA or
// HIP runtime reports: cudaMemGetInfo, torch.cuda.mem_get_info, the figure vLLM logs as "Free
// memory on device (free/total GiB)"), never from the vendor's "80GB" nor from nvidia-smi's total,
// which still counts the memory the driver reserves for itself. Every figure is read with its unit
// as the key names it: TB_per_s and GB_per_s_per_direction are decimal, dense_tflops are 10^12
// FLOP/s (dense, not sparse); null means "unsupported" or "no such link".
//
// A spec needs only what sizing and the roofline use: id, name, memory (the runtime's total, else
// the driver's, else the vendor's stated figure), memory bandwidth and one dense FLOP/s figure.
// Everything else (schema, aliases, vendor, sources, links, TDP, notes) is optional; an absent link
// is zero, which the roofline refuses only when it needs that link. Every object is strict: a key
// the schema does not name is an error naming its path and the nearest known key. Ids and aliases
// are lower case, unique across the folder, and a file's id is its file name without .json;
// look-ups ignore case.

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "error.hpp"
#include "gpu.hpp"
#include "json.hpp"
#include "units.hpp"

namespace kvplan {

/// Which memory figure of a spec file the budget starts from.
enum class MemoryBasis : std::uint8_t {
    runtime,  ///< runtime_total_bytes: what the CUDA/HIP runtime reports, as an engine sees it
    driver,   ///< driver_reported_bytes alone: overstates by the memory the driver reserves
    stated,   ///< stated_bytes alone: the vendor's figure read in SI units
};

/// A GPU spec file as loaded: the spec the core computes with, plus what only the file says.
struct GpuSpecFile {
    GpuSpec spec{};
    std::vector<std::string> aliases;  ///< other lower-case names of the SKU (may be none)
    std::string vendor;                ///< "nvidia" or "amd"; empty when the file names none
    std::optional<double> tdp_W{};     ///< maximum board power, watts, when the file states it
    MemoryBasis memory_basis = MemoryBasis::runtime;  ///< the figure memory_total was read from
    std::filesystem::path file;                       ///< where it was read from
};

namespace detail {

/// Why an accelerator a spec file names is not one kvplan models: a Google TPU or an Intel (Habana)
/// Gaudi, found by its vendor, product name or architecture; empty for anything else. kvplan's
/// budgets start from the CUDA or HIP runtime's total and follow the vLLM, SGLang and
/// TensorRT-LLM allocators on NVIDIA and AMD GPUs; neither device runs those.
[[nodiscard]] inline std::string unmodelled_accelerator(std::string_view vendor,
                                                        std::string_view name,
                                                        std::string_view arch) {
    std::string all = std::string(vendor) + ' ' + std::string(name) + ' ' + std::string(arch);
    for (char& c : all) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    const auto has = [&](std::string_view w) { return all.find(w) != std::string::npos; };
    if (has("tpu") || has("google") || has("trillium") || has("ironwood"))
        return "an NVIDIA or AMD GPU: a Google TPU is not modelled (kvplan budgets from the CUDA "
               "or HIP runtime's total and sizes the KV cache as vLLM, SGLang and TensorRT-LLM "
               "allocate it on GPUs; the TPU's HBM as XLA reserves it and vLLM's TPU backend "
               "(tpu-inference: its own KV page layout and padded head sizes) are not)";
    if (has("gaudi") || has("habana") || has("intel") || has("hpu"))
        return "an NVIDIA or AMD GPU: an Intel Gaudi is not modelled (kvplan budgets from the CUDA "
               "or HIP runtime's total and sizes the KV cache as vLLM, SGLang and TensorRT-LLM "
               "allocate it on GPUs; the HPU's memory as its runtime reserves it and vllm-gaudi's "
               "bucketed HPU graphs and KV blocks are not)";
    return {};
}

inline bool is_lower_id(std::string_view s) {
    if (s.empty()) return false;
    return std::all_of(s.begin(), s.end(), [](char c) {
        return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '.' || c == '_';
    });
}

/// `value` in `unit`, refusing a figure that overflows a double in base units: an infinite rate
/// would make every time zero and every throughput infinite.
template <class Tag>
[[nodiscard]] inline Real<Tag> finite_rate(const JsonReader& r, std::string_view key, double value,
                                           RealUnit<Tag> unit) {
    if (!std::isfinite(value * unit.scale)) {
        char found[32];
        std::snprintf(found, sizeof found, "%g ", value);
        r.fail(key, "a figure below 1.8e308 in base units", found + std::string(unit.symbol));
    }
    return value * unit;
}

/// An optional citation string: non-empty when present.
inline void optional_source(const JsonReader& r, std::string_view key) {
    if (const auto s = r.optional_string(key); s && s->empty())
        r.fail(key, "a citation (or no such key)", "an empty string");
}

/// Whether compute capability `c` belongs to architecture `a` (unknown: any): Ampere SM 8.0 to
/// 8.7, Ada 8.9, Hopper 9.x, Blackwell 10.x to 12.x (NVIDIA's CUDA GPUs list), CDNA3 gfx94x,
/// CDNA4 gfx950 (ROCm's GPU hardware specifications, "LLVM target name").
[[nodiscard]] constexpr bool capability_of(ComputeCapability c, GpuArch a) noexcept {
    using I = ComputeCapability::Isa;
    switch (a) {
        case GpuArch::unknown:
            return true;
        case GpuArch::ampere:
            return c.isa == I::sm && c.major == 8 && c.minor <= 7;
        case GpuArch::ada:
            return c == sm(8, 9);
        case GpuArch::hopper:
            return c.isa == I::sm && c.major == 9;
        case GpuArch::blackwell:
            return c.isa == I::sm && c.major >= 10 && c.major <= 12;
        case GpuArch::cdna3:
            return c.isa == I::gfx && c.major == 9 && c.minor == 4;
        case GpuArch::cdna4:
            return c.isa == I::gfx && c.major == 9 && c.minor == 5;
    }
    return true;
}

/// The compute_capability object {"value": "9.0" or "gfx942", "source": ...} of a GPU spec of
/// `vendor` and architecture `arch`: an SM for NVIDIA, a gfx target for AMD, one of the
/// architecture's.
[[nodiscard]] inline ComputeCapability read_capability(const JsonReader& c,
                                                       const std::string& vendor, GpuArch arch) {
    c.only_keys({"value", "source"}, "compute_capability", {{"sm", "value"}, {"gfx", "value"}});
    optional_source(c, "source");
    const std::string v = c.string("value");
    const auto cap = parse_compute_capability(v);
    const std::string found = "\"" + printable(v) + "\"";
    if (!cap)
        c.fail("value",
               "an NVIDIA compute capability (\"9.0\", \"12.0\") or an AMD gfx target "
               "(\"gfx942\")",
               found);
    if (vendor == "nvidia" && cap->isa != ComputeCapability::Isa::sm)
        c.fail("value", "an NVIDIA compute capability such as \"9.0\" (vendor nvidia)", found);
    if (vendor == "amd" && cap->isa != ComputeCapability::Isa::gfx)
        c.fail("value", "an AMD gfx target such as \"gfx942\" (vendor amd)", found);
    if (!capability_of(*cap, arch))
        c.fail("value",
               std::string("a compute capability of architecture ") + std::string(name(arch)) +
                   " (ampere SM 8.0-8.7, ada 8.9, hopper 9.x, blackwell 10.x-12.x, cdna3 gfx94x, "
                   "cdna4 gfx950)",
               found);
    return *cap;
}

}  // namespace detail

/// Maps a parsed `kvplan-gpu/1` document to a GpuSpecFile. `source` names it in messages; when
/// `expected_id` is non-empty the id must equal it (the file name rule). Throws InvalidInput
/// naming the source, the JSON path, the expected and the found.
[[nodiscard]] inline GpuSpecFile gpu_spec_from_json(const Json& root, const std::string& source,
                                                    std::string_view expected_id = {}) {
    const JsonReader r(root, source);
    r.only_keys({"schema", "id", "aliases", "name", "vendor", "architecture", "compute_capability",
                 "memory", "memory_bandwidth", "dense_tflops", "scale_up", "pcie", "node",
                 "compute_units", "tdp_W", "notes"},
                "a GPU spec",
                {{"bandwidth", "memory_bandwidth"},
                 {"hbm_bandwidth", "memory_bandwidth"},
                 {"flops", "dense_tflops"},
                 {"tflops", "dense_tflops"},
                 {"nvlink", "scale_up"},
                 {"comment", "notes"},
                 {"_comment", "notes"},
                 {"tdp", "tdp_W"}});
    GpuSpecFile out;
    if (const auto schema = r.optional_string("schema"); schema && *schema != "kvplan-gpu/1")
        r.fail("schema", "\"kvplan-gpu/1\"", "\"" + detail::printable(*schema) + "\"");

    const std::string id = r.string("id");
    if (id.size() > 64) r.fail("id", "at most 64 characters", std::to_string(id.size()));
    if (!detail::is_lower_id(id))
        r.fail("id", "a lower-case id (a-z, 0-9, '-', '.', '_')",
               "\"" + detail::printable(id) + "\"");
    if (!expected_id.empty() && id != expected_id)
        r.fail("id", "the file name without .json (\"" + std::string(expected_id) + "\")",
               "\"" + id + "\"");
    if (const auto aliases = r.optional_string_array("aliases")) out.aliases = *aliases;
    for (std::size_t i = 0; i < out.aliases.size(); ++i)
        if (!detail::is_lower_id(out.aliases[i]))
            r.fail(JsonReader::element("aliases", i), "a lower-case name",
                   "\"" + detail::printable(out.aliases[i]) + "\"");
    out.spec.id = std::string_view(id);
    const std::string product = r.string("name");
    if (product.empty() || product.size() > 95)
        r.fail("name", "the product name (1 to 95 characters)",
               std::to_string(product.size()) + " characters");
    out.spec.name = std::string_view(product);
    out.vendor = r.optional_string("vendor").value_or("");
    {
        const std::string arch = r.optional_string("architecture").value_or("");
        const std::string why = detail::unmodelled_accelerator(out.vendor, product, arch);
        if (!why.empty()) {
            // The field that names the device: the vendor, else the name, else the architecture.
            const bool by_vendor = !detail::unmodelled_accelerator(out.vendor, "", "").empty();
            const bool by_name = !detail::unmodelled_accelerator("", product, "").empty();
            const char* field = by_vendor ? "vendor" : by_name ? "name" : "architecture";
            const std::string found = by_vendor ? out.vendor : by_name ? product : arch;
            r.fail(field, why, "\"" + detail::printable(found) + "\"");
        }
    }
    if (r.has("vendor") && out.vendor != "nvidia" && out.vendor != "amd")
        r.fail("vendor", "\"nvidia\" or \"amd\" (or no such key)",
               "\"" + detail::printable(out.vendor) + "\"");

    if (const auto arch = r.optional_string("architecture")) {
        const auto a = parse_gpu_arch(*arch);
        if (!a || *a == GpuArch::unknown) {
            std::vector<std::string> known;
            for (const auto& n : gpu_arch_names)
                if (n.value != GpuArch::unknown) known.emplace_back(n.name);
            r.fail("architecture", "ampere, ada, hopper, blackwell, cdna3 or cdna4",
                   "\"" + detail::printable(*arch) + "\"" + detail::did_you_mean(*arch, known));
        }
        out.spec.arch = *a;
    }
    if (r.has("compute_capability"))
        out.spec.capability =
            detail::read_capability(r.object("compute_capability"), out.vendor, out.spec.arch);

    const JsonReader mem = r.object("memory");
    mem.only_keys(
        {"stated", "stated_bytes", "runtime_total_bytes", "driver_reported_bytes", "source"},
        "memory",
        {{"bytes", "runtime_total_bytes"},
         {"total_bytes", "runtime_total_bytes"},
         {"cuda_total_bytes", "runtime_total_bytes"},
         {"driver_bytes", "driver_reported_bytes"}});
    (void)mem.optional_string("stated");
    const auto stated = mem.optional_positive_integer("stated_bytes");
    const auto runtime = mem.optional_positive_integer("runtime_total_bytes");
    const auto driver = mem.optional_positive_integer("driver_reported_bytes");
    if (!stated && !runtime && !driver)
        mem.fail("runtime_total_bytes",
                 "the total the CUDA or HIP runtime reports, in bytes (or driver_reported_bytes, "
                 "or stated_bytes, the vendor's figure)",
                 "nothing (the field is missing)");
    // The runtime's total is below the driver's, which the driver's reservation is part of.
    if (runtime && driver && *runtime > *driver)
        mem.fail("runtime_total_bytes",
                 "at most driver_reported_bytes (" + std::to_string(*driver) + ")",
                 std::to_string(*runtime));
    if (stated) out.spec.memory_stated = Bytes::exactly(*stated);
    if (driver) out.spec.memory_driver = Bytes::exactly(*driver);
    out.spec.memory_total = Bytes::exactly(runtime ? *runtime : driver ? *driver : *stated);
    out.memory_basis = runtime  ? MemoryBasis::runtime
                       : driver ? MemoryBasis::driver
                                : MemoryBasis::stated;
    detail::optional_source(mem, "source");

    const JsonReader bw = r.object("memory_bandwidth");
    bw.only_keys({"TB_per_s", "source"}, "memory_bandwidth");
    out.spec.memory_bandwidth =
        detail::finite_rate(bw, "TB_per_s", bw.positive_number("TB_per_s"), TB_per_s);
    detail::optional_source(bw, "source");

    const JsonReader flops = r.object("dense_tflops");
    flops.only_keys({"tf32", "bf16", "fp16", "fp8", "int8", "fp4", "source"}, "dense_tflops",
                    {{"bfloat16", "bf16"}, {"float16", "fp16"}, {"fp8_e4m3", "fp8"}});
    bool any = false;
    for (ComputeDtype d : all_compute_dtypes)
        if (const auto tf = flops.optional_positive_number(name(d))) {
            out.spec.set_dense(d, detail::finite_rate(flops, name(d), *tf, TFLOP_per_s));
            any = true;
        }
    detail::optional_source(flops, "source");
    if (!any)
        flops.fail("bf16",
                   "one dense figure in TFLOP/s (bf16, fp16, fp8, int8, fp4 or tf32; the roofline "
                   "uses the one --compute-dtype names)",
                   "none");

    if (const auto up = r.optional_object("scale_up")) {
        up->only_keys({"name", "GB_per_s_per_direction", "source"}, "scale_up",
                      {{"GB_per_s", "GB_per_s_per_direction"}});
        const auto link = up->optional_string("name");
        const auto up_bw = up->optional_positive_number("GB_per_s_per_direction");
        // A named link states its bandwidth; "none" states that there is no link.
        if (link && (*link == "none") != !up_bw)
            up->fail("GB_per_s_per_direction",
                     *link == "none" ? "null (the link is \"none\")"
                                     : "a number > 0 for " + detail::printable(*link),
                     up_bw ? detail::number_text(*up_bw) : "null");
        if (up_bw)
            out.spec.scale_up_bandwidth =
                detail::finite_rate(*up, "GB_per_s_per_direction", *up_bw, GB_per_s);
        detail::optional_source(*up, "source");
    }

    if (const auto pcie = r.optional_object("pcie")) {
        pcie->only_keys({"gen", "lanes", "GB_per_s_per_direction", "source"}, "pcie",
                        {{"GB_per_s", "GB_per_s_per_direction"}, {"generation", "gen"}});
        (void)pcie->optional_positive_integer("gen", 16);
        (void)pcie->optional_positive_integer("lanes", 64);
        if (const auto v = pcie->optional_positive_number("GB_per_s_per_direction"))
            out.spec.pcie_bandwidth =
                detail::finite_rate(*pcie, "GB_per_s_per_direction", *v, GB_per_s);
        detail::optional_source(*pcie, "source");
    }

    // Optional: the node the GPU sits in and the scale-up domain it belongs to. Without it, 8 GPUs
    // per node, one scale-up domain per node and no scale-out figure.
    if (const auto node = r.optional_object("node")) {
        node->only_keys({"gpus", "scale_up_gpus", "scale_out", "GB_per_s_per_direction", "source"},
                        "node", {{"nvlink_domain", "scale_up_gpus"}, {"domain", "scale_up_gpus"}});
        out.spec.gpus_per_node =
            static_cast<std::uint32_t>(node->positive_integer("gpus", 1'000'000));
        if (const auto domain = node->optional_positive_integer("scale_up_gpus", 1'000'000)) {
            const std::uint64_t n = out.spec.gpus_per_node;
            // A fabric joins part of one node (NVLink-bridged pairs) or whole nodes (an NVL72
            // rack of 4-GPU trays), never a node and a piece of another.
            if (n % *domain != 0 && *domain % n != 0)
                node->fail("scale_up_gpus",
                           "a divisor or a multiple of node.gpus (" + std::to_string(n) + ")",
                           std::to_string(*domain));
            const bool linked = out.spec.scale_up_bandwidth > BytesPerSecond{};
            if (!linked && *domain != 1)
                node->fail("scale_up_gpus", "1 (no scale_up link joins the GPUs)",
                           std::to_string(*domain));
            out.spec.scale_up_gpus = static_cast<std::uint32_t>(*domain);
        }
        (void)node->optional_string("scale_out");
        if (const auto out_bw = node->positive_number_or_null("GB_per_s_per_direction"))
            out.spec.scale_out_bandwidth =
                detail::finite_rate(*node, "GB_per_s_per_direction", *out_bw, GB_per_s);
        detail::optional_source(*node, "source");
    }

    if (const auto units = r.optional_object("compute_units")) {
        units->only_keys({"count", "source"}, "compute_units", {{"sm", "count"}, {"sms", "count"}});
        out.spec.compute_units =
            static_cast<std::uint32_t>(units->positive_integer("count", 1'000'000));
        detail::optional_source(*units, "source");
    }

    out.tdp_W = r.optional_positive_number("tdp_W");
    (void)r.optional_string("notes");
    return out;
}

/// Loads one GPU spec file; its id must be its file name without .json. Throws InvalidInput.
[[nodiscard]] inline GpuSpecFile load_gpu_spec(const std::filesystem::path& file) {
    GpuSpecFile g = gpu_spec_from_json(read_json_file(file), file.string(), file.stem().string());
    g.file = file;
    return g;
}

/// The GPU spec files of a folder, looked up by id or alias, ignoring case.
class GpuRegistry {
   public:
    /// Loads every *.json under `config_dir`/gpus (or `config_dir` itself when it has no gpus
    /// folder). Throws InvalidInput on a bad file or on an id or alias used twice.
    [[nodiscard]] static GpuRegistry load(const std::filesystem::path& config_dir) {
        std::error_code ec;
        const std::filesystem::path sub = config_dir / "gpus";
        const std::filesystem::path dir = std::filesystem::is_directory(sub, ec) ? sub : config_dir;
        if (!std::filesystem::is_directory(dir, ec))
            detail::throw_field_error<InvalidInput>(dir.string(), "folder",
                                                    "a folder of GPU spec files", "no such folder");
        std::vector<std::filesystem::path> files;
        for (const auto& e : std::filesystem::directory_iterator(dir, ec))
            if (e.is_regular_file() && e.path().extension() == ".json") files.push_back(e.path());
        std::sort(files.begin(), files.end());
        GpuRegistry reg;
        for (const auto& f : files) reg.add(load_gpu_spec(f));
        return reg;
    }

    /// Adds a loaded spec; throws InvalidInput if its id or an alias is already taken.
    void add(GpuSpecFile g) {
        const auto check = [&](const std::string& name, const std::string& field) {
            if (const GpuSpecFile* other = find_file(name))
                detail::throw_field_error<InvalidInput>(
                    g.file.string(), field, "a name no other GPU spec uses",
                    "\"" + name + "\", already used by " + other->file.string());
        };
        check(std::string(g.spec.id), "id");
        for (std::size_t i = 0; i < g.aliases.size(); ++i)
            check(g.aliases[i], JsonReader::element("aliases", i));
        entries_.push_back(std::move(g));
    }

    /// The file whose id or alias is `name` (case-insensitive), or nullptr.
    [[nodiscard]] const GpuSpecFile* find_file(std::string_view name) const {
        const std::string want = detail::lower_ascii(name);
        for (const GpuSpecFile& g : entries_) {
            if (detail::lower_ascii(g.spec.id.c_str()) == want) return &g;
            for (const std::string& a : g.aliases)
                if (detail::lower_ascii(a) == want) return &g;
        }
        return nullptr;
    }

    /// The spec whose id or alias is `name` (case-insensitive): "h100", "H100-SXM5-80GB".
    [[nodiscard]] std::optional<GpuSpec> find(std::string_view name) const {
        const GpuSpecFile* g = find_file(name);
        return g ? std::optional<GpuSpec>(g->spec) : std::nullopt;
    }

    /// A spec by id or alias, or from a path to a user's own file (a path that exists wins).
    /// Throws InvalidInput listing the known ids when neither matches.
    [[nodiscard]] GpuSpec resolve(std::string_view id_alias_or_path) const {
        std::error_code ec;
        const std::filesystem::path p{std::string(id_alias_or_path)};
        if (p.extension() == ".json" || std::filesystem::is_regular_file(p, ec))
            if (std::filesystem::exists(p, ec)) return load_gpu_spec(p).spec;
        if (const auto g = find(id_alias_or_path)) return *g;
        std::string known;
        for (const std::string& id : ids()) known += (known.empty() ? "" : ", ") + id;
        detail::throw_field_error<InvalidInput>(
            "gpu", "id", "a GPU id or alias (" + known + ") or a path to a spec file",
            "\"" + detail::printable(id_alias_or_path) + "\"" +
                detail::did_you_mean(id_alias_or_path, names()));
    }

    /// Every id and alias, ids first: what a mistyped name is matched against.
    [[nodiscard]] std::vector<std::string> names() const {
        std::vector<std::string> out = ids();
        for (const GpuSpecFile& g : entries_)
            out.insert(out.end(), g.aliases.begin(), g.aliases.end());
        return out;
    }

    /// Every id, sorted.
    [[nodiscard]] std::vector<std::string> ids() const {
        std::vector<std::string> out;
        for (const GpuSpecFile& g : entries_) out.emplace_back(g.spec.id.c_str());
        std::sort(out.begin(), out.end());
        return out;
    }

    /// Every loaded file, in id order.
    [[nodiscard]] const std::vector<GpuSpecFile>& files() const noexcept { return entries_; }

   private:
    std::vector<GpuSpecFile> entries_;
};

}  // namespace kvplan

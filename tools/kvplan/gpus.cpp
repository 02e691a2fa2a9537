#include <cctype>
#include <filesystem>
#include <kvplan/detail/nearest.hpp>
#include <kvplan/error.hpp>
#include <kvplan/gpu_spec.hpp>

#include "parse.hpp"
#include "replica.hpp"

namespace kvplan::cli {

namespace fs = std::filesystem;

ResolvedGpu resolve_gpu(const std::string& arg, const Context& ctx, std::string_view flag) {
    if (arg.empty()) usage_error(flag, "a GPU id or a path to a GPU spec JSON", arg);
    std::error_code ec;
    const fs::path p{arg};
    if (p.extension() == ".json" || fs::is_regular_file(p, ec)) {
        const GpuSpecFile f = load_gpu_spec(p);  // a missing file throws InvalidInput naming it
        return {std::string(f.spec.id), f.file.string(), f.spec, f.aliases};
    }
    // An id is its file's name: read that one file rather than every spec (a CLI call stays a
    // few milliseconds). Aliases need the whole folder.
    std::string lower = arg;
    for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    const fs::path direct = ctx.config_dir / "gpus" / (lower + ".json");
    if (lower.find('/') == std::string::npos && fs::is_regular_file(direct, ec)) {
        const GpuSpecFile f = load_gpu_spec(direct);
        return {std::string(f.spec.id), bundled_source(ctx, f.file), f.spec, f.aliases};
    }
    const GpuRegistry reg = GpuRegistry::load(ctx.config_dir);
    if (const GpuSpecFile* f = reg.find_file(arg))
        return {std::string(f->spec.id), bundled_source(ctx, f->file), f->spec, f->aliases};
    std::string known;
    for (const std::string& id : reg.ids()) known += (known.empty() ? "" : ", ") + id;
    // With a near name the list gives way to it: messages are cut at 1023 characters.
    const std::string near = detail::did_you_mean(arg, reg.names());
    detail::throw_field_error<InvalidInput>(std::string(flag), "gpu",
                                            "a bundled GPU id or alias (" +
                                                (near.empty() ? known : "kvplan list gpus") +
                                                ") or a path to a spec JSON",
                                            "'" + arg + "'" + near);
}

std::vector<ResolvedGpu> bundled_gpus(const Context& ctx) {
    const GpuRegistry reg = GpuRegistry::load(ctx.config_dir);
    std::vector<ResolvedGpu> out;
    for (const std::string& id : reg.ids()) {
        const GpuSpecFile* f = reg.find_file(id);
        out.push_back({id, bundled_source(ctx, f->file), f->spec, f->aliases});
    }
    return out;
}

std::vector<ResolvedGpu> resolve_gpu_list(const std::string& flag, const Context& ctx) {
    if (flag.empty()) return bundled_gpus(ctx);
    std::vector<ResolvedGpu> out;
    for (const std::string& g : split_list(flag, "--gpu")) out.push_back(resolve_gpu(g, ctx));
    return out;
}

}  // namespace kvplan::cli

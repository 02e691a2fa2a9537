// kvplan list models|gpus: what --model and --gpu accept by name.

#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <filesystem>
#include <kvplan/format.hpp>
#include <kvplan/kv_bytes.hpp>
#include <memory>

#include "commands.hpp"
#include "inputs.hpp"
#include "replica.hpp"
#include "report.hpp"

namespace kvplan::cli {

namespace {

struct ListOptions {
    std::string what;
    CommonOptions common;
};

void list_models(const ListOptions& o, Context& ctx) {
    Report r;
    r.command = "list models";
    r.heading = "Bundled models (--model ID); KV per token at bf16, whole model";
    Table t;
    t.key = "models";
    t.columns = {{"id", "id"},
                 {"name", "name"},
                 {"layers", "layers"},
                 {"attention", "cache kinds"},
                 {"kv_bytes_per_token_bf16", "KV per token (bf16)"},
                 {"max_position_embeddings", "max context"},
                 {"source", "source"}};
    for (const ModelListing& l : bundled_models(ctx)) {
        const ResolvedModel rm = resolve_model(l.id, ctx);
        const Model& m = rm.get();
        std::string kinds;
        for (std::uint32_t k = 0; k < m.layers().num_specs; ++k) {
            if (!kinds.empty()) kinds += "+";
            kinds += name(m.layers().specs[k].kind);
        }
        t.rows.push_back({cell_text(l.id), cell_text(display_name(rm)),
                          cell_count(m.num_layers(), ""), cell_text(kinds),
                          cell_exact(kv_bytes_per_token(m, KvDtype::bf16)),
                          m.config().max_position_embeddings == 0
                              ? cell_null()
                              : cell_count(m.config().max_position_embeddings, "tokens"),
                          cell_text(l.source)});
    }
    r.tables.push_back(std::move(t));
    r.csv_table = 0;
    render(r, o.common.format, false, *ctx.out);
}

void list_gpus(const ListOptions& o, Context& ctx) {
    Report r;
    r.command = "list gpus";
    r.heading =
        "Bundled GPUs (--gpu ID or alias); memory as the CUDA or HIP runtime reports it, beside "
        "the vendor's figure; dense peaks";
    Table t;
    t.key = "gpus";
    t.columns = {{"id", "id"},
                 {"aliases", "aliases"},
                 {"name", "name"},
                 {"memory_bytes", "memory"},
                 {"memory_bytes_stated", "stated"},
                 {"memory_bandwidth_bytes_per_s", "bandwidth"},
                 {"bf16_flops_per_s", "bf16 dense"},
                 {"fp8_flops_per_s", "fp8 dense"},
                 {"scale_up_bytes_per_s", "scale-up (one way)"},
                 {"gpus_per_node", "GPUs/node"},
                 {"scale_up_gpus", "GPUs/scale-up"},
                 {"source", "source"}};
    for (const ResolvedGpu& g : bundled_gpus(ctx)) {
        std::string aliases;
        for (const std::string& a : g.aliases) aliases += (aliases.empty() ? "" : " ") + a;
        // The vendor's figure in the vendor's unit (80 GB), beside the runtime's in GiB.
        const auto stated = [](Bytes b) {
            return Cell{fmt::format("{:.0f} GB", b.in(GB)), b.count()};
        };
        const auto flops = [&](ComputeDtype d) {
            const auto f = g.spec.dense(d);
            return f ? cell(*f) : cell_null();
        };
        t.rows.push_back(
            {cell_text(g.id), cell_text(aliases), cell_text(std::string(g.spec.name)),
             cell(g.spec.memory_total),
             g.spec.memory_stated.is_zero() ? cell_null() : stated(g.spec.memory_stated),
             cell(g.spec.memory_bandwidth), flops(ComputeDtype::bf16), flops(ComputeDtype::fp8),
             g.spec.scale_up_bandwidth > BytesPerSecond{} ? cell(g.spec.scale_up_bandwidth)
                                                          : cell_null("none"),
             cell_count(g.spec.gpus_per_node, ""), cell_count(g.spec.scale_up_domain(), ""),
             cell_text(g.source)});
    }
    r.tables.push_back(std::move(t));
    r.csv_table = 0;
    render(r, o.common.format, false, *ctx.out);
}

}  // namespace

void register_list(CLI::App& app, Context& ctx) {
    auto o = std::make_shared<ListOptions>();
    CLI::App* sub = app.add_subcommand("list", "List the bundled models or GPUs");
    sub->add_option("what", o->what, "models or gpus")
        ->required()
        ->check(CLI::IsMember({"models", "gpus"}));
    add_options(*sub, o->common, opt_output);
    sub->callback([o, &ctx] {
        if (o->what == "models")
            list_models(*o, ctx);
        else
            list_gpus(*o, ctx);
    });
}

}  // namespace kvplan::cli

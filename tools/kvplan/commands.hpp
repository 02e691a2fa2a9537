#pragma once

// Every subcommand registers itself on the app; main.cpp lists them. One source file each:
// cmd_<name>.cpp defines register_<name>.

namespace CLI {
class App;
}

namespace kvplan::cli {

struct Context;

void register_size(CLI::App& app, Context& ctx);
void register_list(CLI::App& app, Context& ctx);
void register_fit(CLI::App& app, Context& ctx);
void register_check(CLI::App& app, Context& ctx);
void register_plan(CLI::App& app, Context& ctx);
void register_compare(CLI::App& app, Context& ctx);
void register_diff(CLI::App& app, Context& ctx);
void register_roofline(CLI::App& app, Context& ctx);
void register_trace(CLI::App& app, Context& ctx);
void register_fleet(CLI::App& app, Context& ctx);
void register_calibrate(CLI::App& app, Context& ctx);
void register_disagg(CLI::App& app, Context& ctx);

}  // namespace kvplan::cli

// kvplan: exact KV-cache sizing and serving capacity planning from the command line.
// Exit codes: 0 ok, 1 a check failed, 2 usage error, 3 invalid input (see README, "Command line").

#include <CLI/CLI.hpp>

#include <exception>
#include <iostream>

#include <kvplan/error.hpp>
#include <kvplan/version.hpp>

#include "commands.hpp"
#include "context.hpp"

int main(int argc, char** argv) {
    using namespace kvplan::cli;
    Context ctx;
    ctx.config_dir = find_config_dir(argc > 0 ? argv[0] : nullptr);
    ctx.out = &std::cout;

    CLI::App app{"Exact KV-cache sizing and serving capacity planning for LLM inference.",
                 "kvplan"};
    app.set_version_flag("--version", kvplan::version_string);
    app.require_subcommand(1);
    app.fallthrough(false);
    register_size(app, ctx);
    register_fit(app, ctx);
    register_plan(app, ctx);
    register_compare(app, ctx);
    register_diff(app, ctx);
    register_check(app, ctx);
    register_roofline(app, ctx);
    register_list(app, ctx);
    register_trace(app, ctx);
    register_fleet(app, ctx);
    register_calibrate(app, ctx);

    try {
        app.parse(argc, argv);
    } catch (const CLI::CallForHelp& e) {
        return app.exit(e);
    } catch (const CLI::CallForAllHelp& e) {
        return app.exit(e);
    } catch (const CLI::CallForVersion& e) {
        return app.exit(e);
    } catch (const CLI::ParseError& e) {
        std::cerr << "kvplan: error: " << e.what() << " (see kvplan --help)\n";
        return exit_usage;
    } catch (const UsageError& e) {
        std::cerr << "kvplan: error: " << e.what() << "\n";
        return exit_usage;
    } catch (const kvplan::Error& e) {
        // Bad data: the message names the file (or model), the field, the expected and the found.
        std::cerr << "kvplan: invalid input: " << e.what() << "\n";
        return exit_invalid_input;
    }
    std::cout.flush();
    return ctx.exit_code;
}

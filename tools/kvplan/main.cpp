// kvplan: exact KV-cache sizing and serving capacity planning from the command line.
// Exit codes: 0 ok, 1 a check failed, 2 usage error, 3 invalid input (see README, "Command line").

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cctype>
#include <exception>
#include <iostream>
#include <kvplan/detail/nearest.hpp>
#include <kvplan/error.hpp>
#include <kvplan/version.hpp>
#include <optional>
#include <regex>
#include <string>
#include <string_view>
#include <vector>

#include "commands.hpp"
#include "context.hpp"
#include "report.hpp"

namespace {

/// "kvplan fit": the command path of `app`, for messages.
std::string command_path(const CLI::App* app) {
    std::string path;
    for (; app != nullptr; app = app->get_parent())
        path = app->get_name() + (path.empty() ? "" : " ") + path;
    return path;
}

/// A command line CLI11 refused, explained by its first word that no command or option of the
/// command it reached knows, with the nearest known word: "unknown option '--conccurency' of
/// kvplan fit; did you mean '--concurrency'?". CLI11 2.1 lists the words it could not place
/// ("The following arguments were not expected: 4 --conccurency") or, for an unknown command,
/// only says that one is required. nullopt when every word is known (a bad value, a missing
/// option), where CLI11's own message says what is wrong.
std::optional<std::string> explain_unknown(const CLI::App& root, int argc, char** argv) {
    const CLI::App* cur = &root;
    const auto of = [&](const CLI::App* app) {
        return app == &root ? std::string() : " of " + command_path(app);
    };
    int values = 0;  // words still owed to the option before
    for (int i = 1; i < argc; ++i) {
        const std::string word = argv[i];
        if (word == "--") break;
        // "-4" and "-.5" are values (CLI11 reads them so), not options.
        const bool dashed = word.size() > 1 && word[0] == '-' &&
                            !(std::isdigit(static_cast<unsigned char>(word[1])) || word[1] == '.');
        if (values > 0 && !dashed) {
            --values;
            continue;
        }
        values = 0;
        if (dashed) {
            // --name=value, -n value, -nvalue
            const bool is_long = word[1] == '-';
            const std::string name = is_long ? word.substr(0, word.find('=')) : word.substr(0, 2);
            const CLI::Option* opt = cur->get_option_no_throw(name);
            if (opt == nullptr) {
                std::vector<std::string> known;
                for (const CLI::Option* o : cur->get_options()) {
                    for (const std::string& l : o->get_lnames()) known.push_back("--" + l);
                    for (const std::string& s : o->get_snames()) known.push_back("-" + s);
                }
                return "unknown option '" + name + "'" + of(cur) +
                       kvplan::detail::did_you_mean(name, known) + " (see " + command_path(cur) +
                       " --help)";
            }
            const bool attached = is_long ? word.find('=') != std::string::npos : word.size() > 2;
            if (opt->get_expected_min() > 0 && !attached) values = opt->get_expected_min();
            continue;
        }
        const auto subs = cur->get_subcommands([](const CLI::App*) { return true; });
        if (subs.empty()) continue;  // a positional argument
        const CLI::App* next = nullptr;
        std::vector<std::string> names;
        for (const CLI::App* s : subs) {
            if (s->check_name(word)) next = s;
            names.push_back(s->get_name());
        }
        if (next == nullptr)
            return "unknown command '" + word + "'" + of(cur) +
                   kvplan::detail::did_you_mean(word, names) + " (see " + command_path(cur) +
                   " --help)";
        cur = next;
    }
    return std::nullopt;
}

/// CLI11's "VALUE not in {a,b}" (a value a CLI::IsMember check refused), with the nearest member.
std::string with_nearest_member(std::string message) {
    static const std::regex not_in{R"((\S+) not in \{([^}]*)\})"};
    std::smatch m;
    if (!std::regex_search(message, m, not_in)) return message;
    std::vector<std::string> members;
    const std::string list = m[2];
    for (std::size_t start = 0; start <= list.size();) {
        const std::size_t end = std::min(list.find(',', start), list.size());
        members.push_back(list.substr(start, end - start));
        start = end + 1;
    }
    return message + kvplan::detail::did_you_mean(m[1].str(), members);
}

}  // namespace

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
    register_disagg(app, ctx);

    // Every failure is one line on stderr, valid UTF-8, and a documented exit code.
    const auto fail = [](std::string_view kind, std::string_view what, int code) {
        std::cerr << "kvplan: " << kind << ": " << utf8_escaped(what) << "\n";
        return code;
    };
    try {
        app.parse(argc, argv);
    } catch (const CLI::CallForHelp& e) {
        return app.exit(e);
    } catch (const CLI::CallForAllHelp& e) {
        return app.exit(e);
    } catch (const CLI::CallForVersion& e) {
        return app.exit(e);
    } catch (const CLI::ParseError& e) {
        if (const auto unknown = explain_unknown(app, argc, argv))
            return fail("error", *unknown, exit_usage);
        return fail("error", with_nearest_member(e.what()) + " (see kvplan --help)", exit_usage);
    } catch (const UsageError& e) {
        return fail("error", e.what(), exit_usage);
    } catch (const kvplan::Error& e) {
        // Bad data: the message names the file (or model), the field, the expected and the found.
        return fail("invalid input", e.what(), exit_invalid_input);
    } catch (const std::exception& e) {
        // Anything else the input provoked (a file name the system cannot convert, a failed
        // write): still one line and exit 3, never an abort.
        return fail("invalid input", e.what(), exit_invalid_input);
    } catch (...) {
        return fail("invalid input", "an unexpected failure", exit_invalid_input);
    }
    std::cout.flush();
    return ctx.exit_code;
}

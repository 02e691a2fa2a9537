// The kvplan command line as a function (app.hpp): the CLI11 app with every subcommand, did you
// mean on parse errors, and one catch of every exception, each failure one line with its exit code.

#include "app.hpp"

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <exception>
#include <kvplan/detail/nearest.hpp>
#include <kvplan/error.hpp>
#include <kvplan/version.hpp>
#include <memory>
#include <optional>
#include <ostream>
#include <regex>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "commands.hpp"
#include "context.hpp"
#include "report.hpp"

namespace kvplan::cli {

namespace {

/// "kvplan fit": the command path of `app`, for messages.
std::string command_path(const CLI::App* app) {
    std::string path;
    for (; app != nullptr; app = app->get_parent())
        path = app->get_name() + (path.empty() ? "" : " ") + path;
    return path;
}

/// Every option of `app`, its option groups' first (options.cpp puts each family of flags in a
/// group of its own), in the order they were added; CLI11's get_options lists its own only.
std::vector<const CLI::Option*> all_options(const CLI::App& app) {
    std::vector<const CLI::Option*> out;
    for (const CLI::App* g :
         app.get_subcommands([](const CLI::App* s) { return s->get_name().empty(); })) {
        const auto more = all_options(*g);
        out.insert(out.end(), more.begin(), more.end());
    }
    const auto own = app.get_options();
    out.insert(out.end(), own.begin(), own.end());
    return out;
}

/// Help that lists an option group's flags under its heading, as a command's own flags are
/// listed, rather than in CLI11's indented "[Option Group: ...]" block.
class GroupedHelp : public CLI::Formatter {
   public:
    std::string make_expanded(const CLI::App* group) const override {
        return make_groups(group, CLI::AppFormatMode::Sub);
    }
};

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
                for (const CLI::Option* o : all_options(*cur)) {
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
        // Commands only: an option group is a nameless subcommand to CLI11.
        const auto subs =
            cur->get_subcommands([](const CLI::App* s) { return !s->get_name().empty(); });
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

/// Refuses an empty value of every option of `app` and of its commands, as a usage error: an empty
/// value would read as the option left out (`check --baseline ''` would skip every regression
/// rule and pass), a flag silently ignored.
void refuse_empty_values(CLI::App& app) {
    static const CLI::Validator non_empty(
        [](const std::string& v) {
            return v.empty() ? std::string("expected a value, found ''") : std::string();
        },
        "");
    for (CLI::Option* o : app.get_options())
        if (o->get_expected_min() > 0) o->transform(non_empty);  // first, before any check
    for (CLI::App* sub : app.get_subcommands([](const CLI::App*) { return true; }))
        refuse_empty_values(*sub);
}

struct Command {
    std::string_view name;
    void (*add)(CLI::App&, Context&);
};

constexpr Command commands[] = {
    {"size", register_size},           {"fit", register_fit},
    {"plan", register_plan},           {"compare", register_compare},
    {"diff", register_diff},           {"check", register_check},
    {"roofline", register_roofline},   {"list", register_list},
    {"trace", register_trace},         {"fleet", register_fleet},
    {"calibrate", register_calibrate}, {"disagg", register_disagg},
};

/// The command a command line names: its first word that is not an option, when that word is a
/// command; empty otherwise (no command, a typo, --help or --version alone).
std::string_view named_command(std::span<const std::string> args) {
    const auto first = std::find_if(args.begin(), args.end(),
                                    [](const std::string& a) { return !a.starts_with('-'); });
    if (first == args.end()) return {};
    for (const Command& c : commands)
        if (c.name == *first) return c.name;
    return {};
}

/// The app with the command `only` registered on `ctx` (none when `only` names none), or every
/// command when `only` is empty.
/// Registering one command instead of all twelve is most of what a call saves: CLI11 checks each
/// new option's names against every option of its command, and the twelve hold about 600.
void build(CLI::App& app, Context& ctx, std::string_view only = {}) {
    app.formatter(std::make_shared<GroupedHelp>());  // before the commands, which copy it
    app.set_version_flag("--version", kvplan::version_string);
    app.require_subcommand(1);
    app.fallthrough(false);
    for (const Command& c : commands)
        if (only.empty() || c.name == only) c.add(app, ctx);
    refuse_empty_values(app);
}

constexpr const char* app_description =
    "Exact KV-cache sizing and serving capacity planning for LLM inference.";

}  // namespace

int run(std::span<const std::string> args, std::ostream& out, std::ostream& err,
        const std::filesystem::path& config_dir) {
    // Every failure is one line on `err`, valid UTF-8, and a documented exit code.
    const auto fail = [&err](std::string_view kind, std::string_view what, int code) {
        err << "kvplan: " << kind << ": " << text_field(what) << "\n";
        return code;
    };
    // Output lost (a full disk, a closed pipe) is a failure too: a gate must not pass on a report
    // nobody got. The stream is checked once written out, since a buffered write fails late.
    const auto written = [&out, &fail](int code) {
        errno = 0;
        out.flush();
        if (out) return code;
        const int e = errno;
        return fail("error",
                    "the output could not be written" +
                        (e != 0 ? std::string(" (") + std::strerror(e) + ")" : std::string()),
                    exit_invalid_input);
    };
    // Building the app allocates: even that failing is one line, never an escaping exception.
    try {
        Context ctx;
        ctx.config_dir = config_dir;
        ctx.out = &out;
        CLI::App app{app_description, "kvplan"};
        // `kvplan --version` needs no command: registering none keeps it as fast as a call.
        const bool version_only = args.size() == 1 && args[0] == "--version";
        build(app, ctx, version_only ? std::string_view("--version") : named_command(args));

        // CLI11 and explain_unknown read argv as main receives it.
        std::vector<std::string> words;
        words.reserve(args.size() + 1);
        words.emplace_back("kvplan");
        words.insert(words.end(), args.begin(), args.end());
        std::vector<char*> argv;
        argv.reserve(words.size() + 1);
        for (std::string& w : words) argv.push_back(w.data());
        argv.push_back(nullptr);
        const int argc = static_cast<int>(words.size());

        try {
            app.parse(argc, argv.data());
        } catch (const CLI::CallForHelp& e) {
            return written(app.exit(e, out, err));
        } catch (const CLI::CallForAllHelp& e) {
            return written(app.exit(e, out, err));
        } catch (const CLI::CallForVersion& e) {
            return written(app.exit(e, out, err));
        } catch (const CLI::ParseError& e) {
            if (const auto unknown = explain_unknown(app, argc, argv.data()))
                return fail("error", *unknown, exit_usage);
            return fail("error", with_nearest_member(e.what()) + " (see kvplan --help)",
                        exit_usage);
        }
        return written(ctx.exit_code);
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
}

std::vector<CommandInfo> describe() {
    Context ctx;
    CLI::App app{app_description, "kvplan"};
    build(app, ctx);
    std::vector<CommandInfo> out;
    for (const CLI::App* sub : app.get_subcommands([](const CLI::App*) { return true; })) {
        CommandInfo c{sub->get_name(), sub->get_description(), {}};
        for (const CLI::Option* o : all_options(*sub)) {
            const bool positional = o->get_lnames().empty();
            if (positional && !o->get_positional()) continue;  // a short name alone
            if (!positional && o->get_lnames()[0] == "help") continue;
            FlagInfo f;
            f.positional = positional;
            if (positional)
                f.names.push_back(o->get_name(true));
            else
                f.names = o->get_lnames();
            f.name = f.positional ? f.names[0] : "--" + f.names[0];
            f.description = o->get_description();
            f.default_value = o->get_default_str();
            f.takes_value = o->get_expected_min() > 0;
            f.required = o->get_required();
            c.flags.push_back(std::move(f));
        }
        out.push_back(std::move(c));
    }
    return out;
}

}  // namespace kvplan::cli

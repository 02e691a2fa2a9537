#pragma once

// What every subcommand shares: where the bundled configs are, where output goes, and the exit
// status the run ends with.

#include <filesystem>
#include <iosfwd>
#include <stdexcept>
#include <string>

namespace kvplan::cli {

/// The documented exit codes (README, "Command line").
enum ExitCode : int {
    exit_ok = 0,
    exit_check_failed = 1,   ///< `check` ran and a requirement failed
    exit_usage = 2,          ///< a flag, a value or a combination the command cannot take
    exit_invalid_input = 3,  ///< a file that cannot be read, parsed or mapped; an impossible layout
};

/// A command line that cannot be run as written: exit 2, one line on stderr.
class UsageError : public std::runtime_error {
    using std::runtime_error::runtime_error;
};

struct Context {
    std::filesystem::path config_dir;  ///< holds models/ and gpus/
    std::ostream* out = nullptr;
    int exit_code = exit_ok;
};

/// The bundled config directory: $KVPLAN_CONFIG_DIR, else <exe dir>/../share/kvplan when it
/// exists (an installed tree), else the source tree's configs/ this binary was built from.
[[nodiscard]] std::filesystem::path find_config_dir(const char* argv0);

}  // namespace kvplan::cli

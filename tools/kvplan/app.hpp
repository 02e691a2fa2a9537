#pragma once

// The kvplan command line as a function: main() calls run() on its arguments, and the Python module
// calls it in-process on keyword arguments turned into flags, so both get the same parse, the same
// figures and the same messages. describe() lists every subcommand's flags for the Python module's
// signatures and docstrings.

#include <filesystem>
#include <iosfwd>
#include <span>
#include <string>
#include <vector>

namespace kvplan::cli {

/// Runs the command line `args` (the words after the program name) with the bundled configs of
/// `config_dir`: the answer goes to `out`, a failure to `err` as one line, and the exit code is
/// returned (0 ok, 1 a check failed, 2 usage error, 3 invalid input). Never throws.
[[nodiscard]] int run(std::span<const std::string> args, std::ostream& out, std::ostream& err,
                      const std::filesystem::path& config_dir);

/// One flag or positional argument of a subcommand, as --help shows it.
struct FlagInfo {
    std::string name;                ///< "--context", or a positional's name ("log")
    std::vector<std::string> names;  ///< every long name: {"batch", "concurrency"}
    std::string description;
    std::string default_value;  ///< "" when none is shown
    bool positional = false;
    bool takes_value = true;  ///< false: a switch (--explain)
    bool required = false;
};

/// A subcommand: its name, its one-line description and its flags, in --help order.
struct CommandInfo {
    std::string name;
    std::string description;
    std::vector<FlagInfo> flags;
};

/// Every subcommand of the command line, in the order `kvplan --help` lists them.
[[nodiscard]] std::vector<CommandInfo> describe();

}  // namespace kvplan::cli

#pragma once

// Runs the built kvplan binary and captures its exit code, stdout and stderr.

#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

struct CliRun {
    int code = -1;
    std::string out;
    std::string err;
};

/// kvplan <args> (a shell-quoted argument string), with extra environment assignments.
CliRun run_kvplan(const std::string& args, const std::string& env = "");

#ifdef KVPLAN_STRACE
/// A run under strace, with each file it opened outside the system's folders (the loader, the C
/// and C++ runtimes, the locale), by canonical path, and how many times.
struct TracedRun {
    CliRun run;
    std::map<std::filesystem::path, int> opens;
};

/// kvplan <args> under strace, its trace written to `trace_file` and read back.
TracedRun run_kvplan_traced(const std::string& args, const std::string& trace_file);
#endif

/// The path of a fixture under tests/data, shell-quoted.
std::string data_file(const std::string& name);

/// Parses CSV into rows of fields (RFC 4180 quoting).
std::vector<std::vector<std::string>> parse_csv(const std::string& text);

/// The column of `header` in a CSV's first row; throws if absent.
std::size_t csv_column(const std::vector<std::vector<std::string>>& rows,
                       const std::string& header);

#include "cli_runner.hpp"

#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <sstream>
#include <stdexcept>

#ifdef KVPLAN_STRACE
TracedRun run_kvplan_traced(const std::string& args, const std::string& trace_file) {
    // LeakSanitizer cannot run under ptrace: leaks are looked for everywhere else.
    TracedRun t{run_kvplan(args, std::string("ASAN_OPTIONS=detect_leaks=0 '") + KVPLAN_STRACE +
                                     "' -f -qq -e trace=open,openat,creat -o '" + trace_file + "'"),
                {}};
    std::ifstream in(trace_file);
    for (std::string line; std::getline(in, line);) {
        const std::size_t open = line.find('"'), close = line.find('"', open + 1);
        if (open == std::string::npos || close == std::string::npos) continue;
        const std::filesystem::path file =
            std::filesystem::weakly_canonical(line.substr(open + 1, close - open - 1));
        const std::string s = file.string();
        bool system = false;
        for (const char* prefix : {"/lib", "/usr/", "/etc/", "/proc/", "/sys/", "/dev/"})
            system = system || s.rfind(prefix, 0) == 0;
        if (!system) ++t.opens[file];
    }
    return t;
}
#endif

CliRun run_kvplan(const std::string& args, const std::string& env) {
    static int counter = 0;
    // The process id keeps parallel test processes (ctest -j) apart. Appended piece by piece:
    // GCC 12 at -O2 warns falsely (-Warray-bounds) on a chain of operator+ from a literal.
    std::string err_file = KVPLAN_TEST_BINARY_DIR;
    err_file += "/cli_stderr_";
    err_file += std::to_string(getpid());
    err_file += '_';
    err_file += std::to_string(counter++);
    err_file += ".txt";
    const std::string cmd =
        env + " '" + KVPLAN_EXE + "' " + args + " 2>'" + err_file + "' </dev/null";
    CliRun r;
    FILE* p = popen(cmd.c_str(), "r");
    if (p == nullptr) throw std::runtime_error("popen failed: " + cmd);
    char buf[4096];
    std::size_t n = 0;
    while ((n = fread(buf, 1, sizeof buf, p)) > 0) r.out.append(buf, n);
    const int status = pclose(p);
    r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    std::ifstream e(err_file);
    std::stringstream ss;
    ss << e.rdbuf();
    r.err = ss.str();
    std::remove(err_file.c_str());
    return r;
}

std::string data_file(const std::string& name) {
    // Appended piece by piece: GCC 12 reports a false -Wrestrict on `"'" + std::string(...)`
    // once inlined at -O2 (GCC bug 105651).
    std::string quoted = "'";
    quoted += KVPLAN_TEST_DATA_DIR;
    quoted += '/';
    quoted += name;
    quoted += '\'';
    return quoted;
}

std::vector<std::vector<std::string>> parse_csv(const std::string& text) {
    std::vector<std::vector<std::string>> rows;
    std::vector<std::string> row;
    std::string field;
    bool quoted = false, any = false;
    for (std::size_t i = 0; i < text.size(); ++i) {
        const char c = text[i];
        if (quoted) {
            if (c == '"' && i + 1 < text.size() && text[i + 1] == '"') {
                field.push_back('"');
                ++i;
            } else if (c == '"') {
                quoted = false;
            } else {
                field.push_back(c);
            }
        } else if (c == '"') {
            quoted = true;
            any = true;
        } else if (c == ',') {
            row.push_back(field);
            field.clear();
            any = true;
        } else if (c == '\n') {
            row.push_back(field);
            rows.push_back(row);
            row.clear();
            field.clear();
            any = false;
        } else {
            field.push_back(c);
            any = true;
        }
    }
    if (any) {
        row.push_back(field);
        rows.push_back(row);
    }
    return rows;
}

std::size_t csv_column(const std::vector<std::vector<std::string>>& rows,
                       const std::string& header) {
    if (rows.empty()) throw std::runtime_error("empty CSV");
    for (std::size_t i = 0; i < rows[0].size(); ++i)
        if (rows[0][i] == header) return i;
    throw std::runtime_error("no CSV column " + header);
}

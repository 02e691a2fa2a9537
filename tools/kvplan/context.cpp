#include "context.hpp"

#include <cstdlib>
#include <system_error>

namespace kvplan::cli {

namespace fs = std::filesystem;

fs::path find_config_dir(const char* argv0) {
    if (const char* env = std::getenv("KVPLAN_CONFIG_DIR"); env != nullptr && *env != '\0')
        return fs::path(env);
    std::error_code ec;
    fs::path exe = fs::read_symlink("/proc/self/exe", ec);
    if (ec && argv0 != nullptr) exe = fs::weakly_canonical(fs::path(argv0), ec);
    if (!ec && !exe.empty()) {
        const fs::path installed = exe.parent_path().parent_path() / "share" / "kvplan";
        if (fs::is_directory(installed, ec)) return installed;
    }
    return fs::path(KVPLAN_CONFIG_DIR);
}

}  // namespace kvplan::cli

// kvplan: exact KV-cache sizing and serving capacity planning from the command line.
// Exit codes: 0 ok, 1 a check failed, 2 usage error, 3 invalid input (see README, "Command line").
// The command line itself is kvplan::cli::run (app.hpp), which the Python module calls too.

#include <iostream>
#include <string>
#include <vector>

#include "app.hpp"
#include "context.hpp"

int main(int argc, char** argv) {
    const std::vector<std::string> args(argv + (argc > 0 ? 1 : 0), argv + argc);
    return kvplan::cli::run(args, std::cout, std::cerr,
                            kvplan::cli::find_config_dir(argc > 0 ? argv[0] : nullptr));
}

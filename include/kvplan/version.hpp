#pragma once

/// kvplan's version, one source for the headers, CMake and the CLI.
#define KVPLAN_VERSION_MAJOR 0
#define KVPLAN_VERSION_MINOR 1
#define KVPLAN_VERSION_PATCH 0

namespace kvplan {

/// The library version as "major.minor.patch".
inline constexpr const char* version_string = "0.1.0";

}  // namespace kvplan

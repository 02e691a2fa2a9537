#pragma once

// The policy of `kvplan check` (schema "kvplan-policy/1"): its types (policy/requirements.hpp,
// standard library only) and the strict reader of policy files (policy/read.hpp, nlohmann_json).
// plan/check.hpp judges a policy through evaluate().

#include "policy/read.hpp"
#include "policy/requirements.hpp"

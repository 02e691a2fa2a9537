#pragma once

// The planning layer's one answer: a deployment and its demand (plan/deployment.hpp), every figure
// of a replica (plan/evaluate.hpp), the replica search (plan/search.hpp), and a policy's
// requirements judged on it (plan/check.hpp).

#include "plan/check.hpp"
#include "plan/deployment.hpp"
#include "plan/evaluate.hpp"
#include "plan/search.hpp"

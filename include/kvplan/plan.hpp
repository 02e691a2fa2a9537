#pragma once

// The planning layer's one answer: a deployment and its demand (plan/deployment.hpp), every figure
// of a replica (plan/evaluate.hpp), and the replica search (plan/search.hpp).

#include "plan/deployment.hpp"
#include "plan/evaluate.hpp"
#include "plan/search.hpp"
#include "plan/speculation.hpp"

#pragma once

// The planning layer's one answer: a deployment and its demand (plan/deployment.hpp), every figure
// of a replica (plan/evaluate.hpp), the replica search (plan/search.hpp), the engines' command
// lines (plan/commands.hpp), disaggregated prefill and decode pools (plan/disaggregated.hpp),
// a policy's requirements judged on a replica (plan/check.hpp), and the sizes of `kvplan size` and
// `kvplan compare` (plan/size.hpp, plan/compare.hpp).

#include "plan/check.hpp"
#include "plan/commands.hpp"
#include "plan/compare.hpp"
#include "plan/deployment.hpp"
#include "plan/disaggregated.hpp"
#include "plan/evaluate.hpp"
#include "plan/review.hpp"
#include "plan/search.hpp"
#include "plan/size.hpp"
#include "plan/speculation.hpp"
#include "plan/tiers.hpp"

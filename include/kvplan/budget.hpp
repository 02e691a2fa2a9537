#pragma once

// The replica budget: the replica and its workload, the non-KV reserve, the budget per stage and
// the smallest replica that fits. One header per concept under budget/.

#include "budget/budget.hpp"
#include "budget/replica.hpp"
#include "budget/reserve.hpp"
#include "budget/search.hpp"

#pragma once

// Request traces: what real traffic asks of the cache. A trace is a list of requests, each with its
// prompt and generated token counts and, where the trace records them, arrival times. From it:
//   - the distribution of KV per request (nearest-rank percentiles, stated below);
//   - the paged against contiguous waste over the whole trace;
//   - the concurrency the arrivals imply: Little's law, and a replay of arrivals and completions.
// Opt-in (not in kvplan.hpp): these headers read files and allocate.
//
// One header per concept, all included here:
//   trace/reading.hpp        the readers (CSV, JSON Lines) and the Trace they return
//   trace/distributions.hpp  counts per length, percentiles, KV per request, paged waste
//   trace/replay.hpp         arrivals replayed: concurrency over time, the replica that holds it

#include "trace/distributions.hpp"
#include "trace/reading.hpp"
#include "trace/replay.hpp"

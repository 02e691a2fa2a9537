// Every public header, compiled with -Wshadow -Werror under `using namespace kvplan`: no name of
// kvplan's (a unit symbol such as `s`) shadows or clashes with a user's own.
#include <kvplan/calibrate.hpp>
#include <kvplan/fleet.hpp>
#include <kvplan/format.hpp>
#include <kvplan/gpu_spec.hpp>
#include <kvplan/hf_config.hpp>
#include <kvplan/kvplan.hpp>
#include <kvplan/policy.hpp>
#include <kvplan/svg.hpp>
#include <kvplan/trace.hpp>
#include <kvplan/transfer.hpp>

using namespace kvplan;

// A user's own names, which a kvplan name of the same spelling would shadow.
[[maybe_unused]] static double user_code(double s, double ms) {
    const double us = s * 1e6 + ms * 1e3;
    return Seconds::in_base(us * 1e-6).in(milliseconds);
}

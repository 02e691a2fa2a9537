# The core stays cheap to include: the standard headers reachable from <kvplan/core.hpp> (and
# <kvplan/presets.hpp>, <kvplan/admission.hpp>) are only the light ones. A heavy one (<string>,
# <array>, <algorithm>, <optional>...) would add 80-500 ms to every translation unit of serving
# code that includes kvplan (bench/compile_cost.sh measures it); this test names the header that
# brought it in.
add_test(NAME "core: includes only light standard headers"
  COMMAND ${CMAKE_COMMAND}
    -DCXX=${CMAKE_CXX_COMPILER}
    -DINCLUDE_DIR=${PROJECT_SOURCE_DIR}/include
    -DWORK_DIR=${CMAKE_CURRENT_BINARY_DIR}/core_includes
    "-DALLOWED=cstddef;cstdint;exception;type_traits"
    -P ${CMAKE_CURRENT_SOURCE_DIR}/support/check_core_includes.cmake)

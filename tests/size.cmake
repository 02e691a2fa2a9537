# `kvplan size` and `kvplan compare` as library calls (plan/size.hpp, plan/compare.hpp), figures
# derived by hand (needs nlohmann_json to load bundled configs).
if(TARGET kvplan::json)
  kvplan_add_tests(kvplan_size_tests
    SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_size.cpp
    LIBS kvplan::json)
endif()

# The Python module (python/): pytest on tests/python/, one ctest per file, against the package
# assembled in the build tree and the built CLI; and the installed package, imported from the
# prefix "package: install" fills.
if(TARGET kvplan_python AND TARGET kvplan_cli)
  get_target_property(_kvplan_py kvplan_python KVPLAN_PYTHON_EXECUTABLE)
  get_target_property(_kvplan_py_path kvplan_python KVPLAN_PACKAGE_PARENT)
  get_target_property(_kvplan_py_site kvplan_python KVPLAN_PREFIX_SITE_DIR)
  execute_process(COMMAND "${_kvplan_py}" -c "import pytest"
                  RESULT_VARIABLE _kvplan_no_pytest OUTPUT_QUIET ERROR_QUIET)
  if(_kvplan_no_pytest AND KVPLAN_TESTS_REQUIRE_TOOLS)
    message(FATAL_ERROR "kvplan: ${_kvplan_py} has no pytest, which the Python tests need "
                        "(KVPLAN_TESTS_REQUIRE_TOOLS): install python3-pytest")
  elseif(_kvplan_no_pytest)
    message(STATUS "kvplan: no Python tests (${_kvplan_py} has no pytest: python3-pytest)")
  else()
    # No bytecode or pytest cache written into the source tree.
    set(_kvplan_py_env
      "PYTHONPATH=${_kvplan_py_path}"
      "PYTHONDONTWRITEBYTECODE=1"
      "KVPLAN_EXE=$<TARGET_FILE:kvplan_cli>"
      "KVPLAN_SOURCE_DIR=${PROJECT_SOURCE_DIR}")
    foreach(_file IN ITEMS test_functions.py test_classes.py test_block_pool.py test_docs.py
                         test_stubs.py test_keywords.py)
      get_filename_component(_name "${_file}" NAME_WE)
      add_test(NAME "python: ${_name}"
        COMMAND "${_kvplan_py}" -m pytest -q -p no:cacheprovider
                "${CMAKE_CURRENT_SOURCE_DIR}/python/${_file}"
        WORKING_DIRECTORY "${CMAKE_CURRENT_BINARY_DIR}")
      set_tests_properties("python: ${_name}" PROPERTIES ENVIRONMENT "${_kvplan_py_env}")
    endforeach()
  endif()

  # The installed package finds the installed configs, not the source tree's.
  set(_kvplan_prefix "${CMAKE_CURRENT_BINARY_DIR}/package-prefix")
  add_test(NAME "python: installed package"
    COMMAND "${_kvplan_py}" -c
      "import kvplan; print(kvplan.__file__, kvplan.config_dir(), kvplan.fit(model='llama-3-70b', gpu='h100-sxm', tp=4, context='8k', concurrency=48).max_concurrency)"
    WORKING_DIRECTORY "${CMAKE_CURRENT_BINARY_DIR}")
  set_tests_properties("python: installed package" PROPERTIES
    FIXTURES_REQUIRED kvplan_installed
    ENVIRONMENT "PYTHONPATH=${_kvplan_prefix}/${_kvplan_py_site};PYTHONDONTWRITEBYTECODE=1"
    PASS_REGULAR_EXPRESSION
      "^${_kvplan_prefix}/${_kvplan_py_site}/kvplan/__init__.py ${_kvplan_prefix}/share/kvplan 61\n$")

  # pyproject.toml: pip builds the wheel offline with Debian's setuptools and pybind11, and the
  # wheel alone answers the headline fit (Llama-3-70B on 4 x H100 at 8k: 61 sequences).
  execute_process(COMMAND "${_kvplan_py}" -c "import setuptools, pybind11, wheel, pip"
                  RESULT_VARIABLE _kvplan_no_pip OUTPUT_QUIET ERROR_QUIET)
  if(_kvplan_no_pip AND KVPLAN_TESTS_REQUIRE_TOOLS)
    message(FATAL_ERROR "kvplan: ${_kvplan_py} lacks pip, setuptools, pybind11 or wheel, which "
                        "the wheel test needs: install python3-pip python3-setuptools "
                        "python3-pybind11 python3-wheel")
  elseif(NOT _kvplan_no_pip)
    add_test(NAME "python: pyproject.toml builds a wheel offline"
      COMMAND sh "${CMAKE_CURRENT_SOURCE_DIR}/python/wheel_build.sh" "${_kvplan_py}"
              "${PROJECT_SOURCE_DIR}" "${CMAKE_CURRENT_BINARY_DIR}/wheel-build")
    # COST: the longest test of the -O2 run (about a minute on two cores), started first by ctest.
    set_tests_properties("python: pyproject.toml builds a wheel offline" PROPERTIES
      TIMEOUT 1800 COST 90 PASS_REGULAR_EXPRESSION "\n${PROJECT_VERSION} True 61\n$")
  endif()
endif()

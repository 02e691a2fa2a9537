# A Debian package of everything `cmake --install` puts in place: the kvplan CLI, the headers, the
# CMake package (find_package(kvplan)) and the bundled model and GPU configs. From a build tree:
#   cpack -G DEB        ->  kvplan_<version>_<arch>.deb
#   apt-get install ./kvplan_<version>_<arch>.deb
# Included from the top-level CMakeLists.txt with the install rules.

set(CPACK_PACKAGE_NAME kvplan)
set(CPACK_PACKAGE_VENDOR kvplan)
set(CPACK_PACKAGE_VERSION "${PROJECT_VERSION}")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "${PROJECT_DESCRIPTION}")
set(CPACK_RESOURCE_FILE_LICENSE "${PROJECT_SOURCE_DIR}/LICENSE")
set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_STRIP_FILES ON)

set(KVPLAN_PACKAGE_MAINTAINER "kvplan maintainers <maintainers@kvplan.invalid>" CACHE STRING
    "The Maintainer field of the Debian package: a name and an e-mail address")
set(CPACK_DEBIAN_PACKAGE_MAINTAINER "${KVPLAN_PACKAGE_MAINTAINER}")
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)  # kvplan_<version>_<arch>.deb, as Debian names them
set(CPACK_DEBIAN_PACKAGE_SECTION devel)
set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)
# Description: CPack puts the summary on the first line and indents these lines under it (an
# empty line becomes the " ." that separates paragraphs).
set(CPACK_DEBIAN_PACKAGE_DESCRIPTION "\
kvplan sizes the KV cache of LLM inference to the byte (per token, per
sequence, per GPU under tensor and pipeline parallelism, paged or contiguous)
and plans serving capacity: memory budgets under vLLM, SGLang and
TensorRT-LLM, decode rooflines, fleets for a request rate and latency targets,
and request traces replayed.

This package holds the kvplan command-line tool with its bundled model and GPU
configs, the header-only C++20 library with its CMake package
(find_package(kvplan)), and, when built, the kvplan Python module.")
# Depends: what the CLI links, as dpkg-shlibdeps reads it from the binary (libfmt9, libstdc++6,
# libgcc-s1, libc6 on Debian 12), so the field follows the build rather than a list kept by hand.
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
# The headers that use nlohmann_json (kvplan::json) or fmt (kvplan::format) need their headers;
# the core and the CLI do not.
set(CPACK_DEBIAN_PACKAGE_SUGGESTS "nlohmann-json3-dev (>= 3.11), libfmt-dev (>= 9)")
# The Python module (python/), when built, is for one interpreter version.
if(KVPLAN_PYTHON_DEB_RECOMMENDS)
  set(CPACK_DEBIAN_PACKAGE_RECOMMENDS "${KVPLAN_PYTHON_DEB_RECOMMENDS}")
endif()

# What Debian policy asks of every package (lintian checks it in CI): the license in the
# machine-readable copyright format at /usr/share/doc/<package>/copyright, pointing at the
# system's copy of the Apache license, and a changelog; a native package's is changelog.gz,
# compressed as dh_compress does (gzip -9n: no name or time stamp, so the build is reproducible).
install(FILES "${PROJECT_SOURCE_DIR}/cmake/debian/copyright" DESTINATION "${CMAKE_INSTALL_DOCDIR}")
configure_file(cmake/debian/changelog.in "${PROJECT_BINARY_DIR}/debian/changelog" @ONLY)
execute_process(COMMAND gzip -9nf "${PROJECT_BINARY_DIR}/debian/changelog"
                COMMAND_ERROR_IS_FATAL ANY)
install(FILES "${PROJECT_BINARY_DIR}/debian/changelog.gz" DESTINATION "${CMAKE_INSTALL_DOCDIR}")

include(CPack)

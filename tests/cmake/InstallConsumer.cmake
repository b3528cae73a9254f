# Installs the build into a scratch prefix with `cmake --install`, then
# configures, builds and runs tests/install/consumer against it with
# find_package(sparsetile), the way a user's project would; then imports the
# installed Python package from <prefix>/lib/python (with PYTHON set).
#
# Run with: cmake -DBUILD=<build dir> -DSOURCE=<repo> -DSCRATCH=<dir>
#                 [-DPYTHON=<python3> -DLIBDIR=lib -DVERSION=<project version>]
#                 -P InstallConsumer.cmake
file(REMOVE_RECURSE "${SCRATCH}")
set(prefix "${SCRATCH}/prefix")
function(run what)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out
                  ERROR_VARIABLE out)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "${what} failed (${rc}):\n${out}")
  endif()
  set(last_output "${out}" PARENT_SCOPE)
endfunction()
run("cmake --install" "${CMAKE_COMMAND}" --install "${BUILD}" --prefix "${prefix}")
foreach(f include/sparsetile/Compiler.h include/sparsetile/runtime/JIT.h
          bin/stc bin/tile-opt lib/cmake/sparsetile/sparsetileConfig.cmake)
  if(NOT EXISTS "${prefix}/${f}")
    message(FATAL_ERROR "the install has no ${f}")
  endif()
endforeach()
# Versioned SONAMEs, and one copy of LLVM: libsparsetile.so links the
# compiler library instead of carrying its own (it was 79 MB beside it).
if(VERSION)
  string(REGEX MATCH "^[0-9]+" major "${VERSION}")
  foreach(l libsparsetile libsparsetile_compiler)
    foreach(f ${l}.so ${l}.so.${major} ${l}.so.${VERSION})
      if(NOT EXISTS "${prefix}/${LIBDIR}/${f}")
        message(FATAL_ERROR "the install has no ${LIBDIR}/${f}")
      endif()
    endforeach()
  endforeach()
  file(SIZE "${prefix}/${LIBDIR}/libsparsetile.so.${VERSION}" capi_size)
  if(capi_size GREATER 31457280)
    message(FATAL_ERROR "libsparsetile.so is ${capi_size} bytes: it carries "
            "its own LLVM again instead of loading libsparsetile_compiler.so")
  endif()
endif()
run("configuring the consumer" "${CMAKE_COMMAND}"
    -S "${SOURCE}/tests/install/consumer" -B "${SCRATCH}/consumer"
    "-DCMAKE_PREFIX_PATH=${prefix}" -DCMAKE_BUILD_TYPE=Release
    "-DSPARSETILE_EXAMPLES_DIR=${SOURCE}/dsl_examples")
run("building the consumer" "${CMAKE_COMMAND}" --build "${SCRATCH}/consumer")
run("running the consumer" "${SCRATCH}/consumer/consumer")
message(STATUS "${last_output}")
if(NOT last_output MATCHES "consumer: ok")
  message(FATAL_ERROR "the consumer did not report ok:\n${last_output}")
endif()
run("running the C consumer" "${SCRATCH}/consumer/consumer_c")
if(NOT last_output MATCHES "consumer_c: ok")
  message(FATAL_ERROR "the C consumer did not report ok:\n${last_output}")
endif()
run("the installed stc" "${prefix}/bin/stc" "${SOURCE}/dsl_examples/vector_add.tile" --emit=tile)
if(PYTHON)
  # The package and library are found relative to each other, not through
  # the test environment's PYTHONPATH or SPARSETILE_LIBRARY.
  run("the installed Python package" "${CMAKE_COMMAND}" -E env
      --unset=SPARSETILE_LIBRARY --unset=LD_LIBRARY_PATH
      "PYTHONPATH=${prefix}/${LIBDIR}/python" SPARSETILE_CACHE_DISABLE=1
      "${PYTHON}" "${SOURCE}/tests/install/import_installed.py" "${prefix}")
  message(STATUS "${last_output}")
endif()
file(REMOVE_RECURSE "${SCRATCH}")

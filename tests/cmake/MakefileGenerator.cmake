# Configures the source tree with CMake's default generator on this
# platform (Unix Makefiles) in a scratch folder and builds the TableGen
# targets, the step that needs generator-independent output folders
# (compiler/CMakeLists.txt creates them). The full Makefile build is what
# `cmake -S . -B build && cmake --build build` does; building it all again
# here would double the test time, and every later step is the same
# add_library/add_executable code Ninja already builds.
#
# Run with: cmake -DSOURCE=<repo> -DSCRATCH=<dir> [-DEXTRA=...] -P MakefileGenerator.cmake
file(REMOVE_RECURSE "${SCRATCH}")
execute_process(
  COMMAND "${CMAKE_COMMAND}" -S "${SOURCE}" -B "${SCRATCH}" -G "Unix Makefiles"
          -DCMAKE_BUILD_TYPE=Release ${EXTRA}
  RESULT_VARIABLE configured OUTPUT_VARIABLE out ERROR_VARIABLE out)
if(NOT configured EQUAL 0)
  message(FATAL_ERROR "configure with Unix Makefiles failed:\n${out}")
endif()
execute_process(
  COMMAND "${CMAKE_COMMAND}" --build "${SCRATCH}" --target SparsetileTileIncGen
          SparsetilePassIncGen SparsetileTransformsIncGen
  RESULT_VARIABLE built OUTPUT_VARIABLE out ERROR_VARIABLE out)
if(NOT built EQUAL 0)
  message(FATAL_ERROR "TableGen targets failed with Unix Makefiles:\n${out}")
endif()
foreach(f compiler/Dialect/Tile/TileOps.h.inc compiler/Transforms/Passes.h.inc)
  if(NOT EXISTS "${SCRATCH}/${f}")
    message(FATAL_ERROR "${f} was not generated")
  endif()
endforeach()
file(REMOVE_RECURSE "${SCRATCH}")

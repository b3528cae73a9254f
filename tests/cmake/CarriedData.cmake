# A build carried to another path or machine (scripts/gpu_run.sh runs one
# from a copy of the repository) must find the tests' data in the source tree
# given at run time, $SPARSETILE_SOURCE_DIR (tests/common/SourceTree.h), not
# at the build machine's path: the tests issue 46 found reading the build
# machine's tree run here from a copy of dsl_examples/ at another path, from
# another working directory, with the variable pointing at the copy. (That
# they read the copy and nothing else is held by the SourceTree tests of
# CompileApiTests and RuntimeJITTests.)
#
# Run with: cmake -DSOURCE=<repo> -DSCRATCH=<dir> -DCOMPILE_API=<exe>
#   -DSPARSE24=<exe> -P CarriedData.cmake
file(REMOVE_RECURSE "${SCRATCH}")
file(MAKE_DIRECTORY "${SCRATCH}/run")
file(COPY "${SOURCE}/dsl_examples" DESTINATION "${SCRATCH}/tree")
function(run_carried exe filter)
  execute_process(
    COMMAND "${CMAKE_COMMAND}" -E env --unset=SPARSETILE_EXAMPLES_DIR
            "SPARSETILE_SOURCE_DIR=${SCRATCH}/tree" "${exe}"
            "--gtest_filter=${filter}"
    WORKING_DIRECTORY "${SCRATCH}/run"
    RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "${exe} --gtest_filter=${filter} failed from the "
                        "carried tree (${rc}):\n${out}")
  endif()
  if(NOT out MATCHES "\\[  PASSED  \\] [1-9]")
    message(FATAL_ERROR "${exe} --gtest_filter=${filter} ran no test:\n${out}")
  endif()
endfunction()
# The tests issue 46 found reading the build machine's tree.
run_carried("${COMPILE_API}"
            "Stages/StageTest.*:CompiledKernel.*:ListKernels.Signatures:SourceTree.*")
run_carried("${SPARSE24}" "Sparse24Cpu.DslHalfTablesMatchTheDerivation")
file(REMOVE_RECURSE "${SCRATCH}")
message(STATUS "carried data: ok")

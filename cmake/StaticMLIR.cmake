# Links MLIR and LLVM statically into one target.
#
# Why: the GPU machines have no LLVM/MLIR, so the compiler must travel as one
# self-contained shared library (libsparsetile_compiler.so, ~45 MB stripped)
# that needs only libc, libm, libz and libzstd. MLIR's exported CMake targets
# link the *shared* libLLVM and reference libPolly, which Debian does not ship,
# so we do not link them; instead every MLIR/LLVM static archive goes into one
# linker group and the linker takes only the objects it needs.
function(sparsetile_link_static_mlir target)
  file(GLOB mlir_archives "${LLVM_LIBRARY_DIR}/libMLIR*.a")
  list(FILTER mlir_archives EXCLUDE REGEX "Test|/libMLIR(CAPI|Python|ExecutionEngine|JitRunner|Mlir(Opt|Lsp|Reduce|Query)|Tblgen|TableGen|Lsp)")
  file(GLOB llvm_archives "${LLVM_LIBRARY_DIR}/libLLVM*.a")
  list(FILTER llvm_archives EXCLUDE REGEX "TableGen|Exegesis|Orc|Jit|JIT|Interpreter|LTO|Debuginfod|Fuzz|Polly")
  # Debian's libzstd has no unversioned .so symlink; name the runtime file.
  find_library(ZSTD_LIB NAMES zstd libzstd.so.1 REQUIRED)
  find_library(Z_LIB NAMES z REQUIRED)
  target_link_libraries(${target} PRIVATE
    -Wl,--start-group ${mlir_archives} ${llvm_archives} -Wl,--end-group
    ${ZSTD_LIB} ${Z_LIB} pthread dl m
    # Keep MLIR/LLVM symbols out of the dynamic symbol table: users of the
    # library see only sparsetile's API, and a second LLVM in the process
    # (e.g. Triton's) cannot collide with ours.
    -Wl,--exclude-libs,ALL
    # Drop unreferenced functions: LLVM is built with -ffunction-sections.
    -Wl,--gc-sections)
  # The release library carries its own libstdc++ (it travels to the GPU
  # machine as one file). A sanitizer build keeps
  # the shared one: a static copy inside the library allocates with its own
  # operator new, which ASan then sees freed by the interposed free()
  # (alloc-dealloc-mismatch) and TSan cannot intercept.
  if(NOT SPARSETILE_SANITIZE)
    target_link_libraries(${target} PRIVATE -static-libstdc++ -static-libgcc)
  endif()
endfunction()

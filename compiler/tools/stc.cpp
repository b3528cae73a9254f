//===- stc.cpp - The sparsetile compiler driver ---------------------------===//
//
// Prints any stage of the pipeline for a .tile kernel; `stc --help` lists the
// options. The driver itself is compiler/Pipeline/StcMain.cpp, inside the
// compiler library, which carries the one copy of LLVM's command line.
//
//===----------------------------------------------------------------------===//

namespace sparsetile {
int stcMain(int argc, char **argv);
} // namespace sparsetile

int main(int argc, char **argv) { return sparsetile::stcMain(argc, argv); }

//===- tile-opt.cpp - mlir-opt for the tile dialect -----------------------===//
//
// Parses, verifies, transforms and prints tile-dialect IR. Used by the lit
// tests for round-trips, verifier errors and single-pass tests.
//
//===----------------------------------------------------------------------===//

namespace sparsetile {
int tileOptMain(int argc, char **argv);
} // namespace sparsetile

int main(int argc, char **argv) { return sparsetile::tileOptMain(argc, argv); }

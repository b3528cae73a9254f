//===- Canonicalize.cpp - MLIR's canonicalizer with bounded locations -----===//
//
// Implements createCanonicalizer() (Pipeline.h). MLIR's declarative (DRR)
// patterns give what they build the FusedLoc of every op they matched, and
// FusedLoc flattens nested ones. A chain that re-associates step by step,
// such as n lines of `x = x + 1;` (addi(addi(x, c0), c1) -> addi(x, c0 + c1)),
// therefore gives the k-th folded constant the locations of all k lines
// before it: quadratic memory that the context interns and never frees (20k
// lines took 1.6 GB and 60% of the compile building FusedLocs; 30k ran out
// of memory). A listener keeps only the first location of what a pattern
// builds (DRR puts the matched root first: the op's own line), so every
// fusion starts again from a plain location and the chain stays linear.
//
//===----------------------------------------------------------------------===//

#include "Pipeline/Pipeline.h"

#include "mlir/IR/Location.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"
#include "mlir/Transforms/Passes.h"

using namespace mlir;

namespace {
class OneLocation final : public RewriterBase::Listener {
  void notifyOperationInserted(Operation *op,
                               OpBuilder::InsertPoint) override {
    if (auto fused = dyn_cast<FusedLoc>(op->getLoc());
        fused && !fused.getLocations().empty())
      op->setLoc(fused.getLocations().front());
  }
};
} // namespace

std::unique_ptr<Pass> sparsetile::createCanonicalizer() {
  // Stateless, so one instance serves every pass, compile and thread.
  static OneLocation listener;
  GreedyRewriteConfig config;
  config.setListener(&listener);
  return createCanonicalizerPass(config);
}

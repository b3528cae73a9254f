// AxisInfo of a shift by a negative constant (poison in the IR; the front
// end refuses one, but hand-written IR and later folds can hold it): the
// divisibility is left alone instead of being shifted by -1, undefined
// behaviour in the compiler (UBSan, AxisInfo.cpp; see
// fuzz/regressions/shift_by_minus_one.tile for the DSL form). The offsets
// are then unknown: scalar accesses.
// RUN: tile-opt %s --convert-tile-to-gpu | FileCheck %s
// CHECK-LABEL: gpu.func @negative_shift
// CHECK-NOT:   vector<4xf32>
// CHECK:       gpu.return
func.func @negative_shift(%x: !tile.ptr<f32> {tile.divisibility = 16 : i32})
    attributes {tile.kernel, tile.num_warps = 4 : i32} {
  %r = tile.arange 0, 128 : tensor<128xi32>
  %c4 = arith.constant dense<4> : tensor<128xi32>
  %m1 = arith.constant dense<-1> : tensor<128xi32>
  %r4 = arith.muli %r, %c4 : tensor<128xi32>
  %offs = arith.shli %r4, %m1 : tensor<128xi32>
  %xb = tile.splat %x : !tile.ptr<f32> -> tensor<128x!tile.ptr<f32>>
  %xp = tile.addptr %xb, %offs : tensor<128x!tile.ptr<f32>>, tensor<128xi32>
  %one = arith.constant dense<1.0> : tensor<128xf32>
  tile.store %xp, %one : tensor<128x!tile.ptr<f32>>, tensor<128xf32>
  return
}

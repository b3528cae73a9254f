// tile-expand-desc-load: a desc_load becomes the descriptor's plain fields
// and a masked load of the [R, C] block; rows and columns outside
// [0, rows) x [0, cols) read as zero (`other`), like a TMA copy.
// RUN: tile-opt %s --tile-expand-desc-load | FileCheck %s

// CHECK-LABEL: func.func @block
// CHECK-NOT:   tile.desc_load
// CHECK:       %[[BASE:.*]], %[[ROWS:.*]], %[[COLS:.*]], %[[LD:.*]] = tile.desc_fields %arg0
// CHECK:       tile.arange 0, 64 : tensor<64xi32>
// CHECK:       tile.arange 0, 32 : tensor<32xi32>
// CHECK:       arith.cmpi slt, {{.*}} : tensor<64x32xi32>
// CHECK:       arith.muli {{.*}} : tensor<64x32xi32>
// CHECK:       tile.addptr
// CHECK:       %[[V:.*]] = tile.load {{.*}}, {{.*}}, {{.*}} : tensor<64x32x!tile.ptr<bf16>>
// CHECK:       return %[[V]]
func.func @block(%d: !tile.desc<bf16>, %r: i32, %c: i32) -> tensor<64x32xbf16> {
  %b = tile.desc_load %d[%r, %c] : !tile.desc<bf16> -> tensor<64x32xbf16>
  return %b : tensor<64x32xbf16>
}

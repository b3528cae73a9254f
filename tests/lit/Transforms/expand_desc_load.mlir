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

// A desc_store without `tma` becomes the same fields and a masked store of
// the block: what falls outside [0, rows) x [0, cols) is dropped. One with
// `tma` (tile-pipeline-tma's, a TMA store) is left for convert-tile-to-gpu.
// CHECK-LABEL: func.func @store_block
// CHECK-NOT:   tile.desc_store %arg0
// CHECK:       tile.desc_fields %arg0
// CHECK:       arith.cmpi slt, {{.*}} : tensor<64x128xi32>
// CHECK:       tile.store {{.*}}, %arg3, {{.*}} : tensor<64x128x!tile.ptr<bf16>>, tensor<64x128xbf16>, tensor<64x128xi1>
// CHECK:       tile.desc_store %arg1[%arg2, %arg2], %arg3 {tma}
func.func @store_block(%d: !tile.desc<bf16>, %e: !tile.desc<bf16>, %r: i32,
                       %v: tensor<64x128xbf16>) {
  tile.desc_store %d[%r, %r], %v : !tile.desc<bf16>, tensor<64x128xbf16>
  tile.desc_store %e[%r, %r], %v {tma} : !tile.desc<bf16>, tensor<64x128xbf16>
  return
}

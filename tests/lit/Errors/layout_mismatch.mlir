// A tile whose type names another layout than the one its op produces (a
// hand-written or wrongly rewritten type) is an error at the op in
// convert-tile-to-gpu, not a kernel that reads the wrong registers: the sum
// along a [64, 4] tile's rows stays in each row's thread (a #tile.slice of
// the blocked layout), not blocked over 16 threads. A kernel with layouts on
// some tiles only is refused too.
// RUN: not tile-opt %s --split-input-file --convert-tile-to-gpu 2>&1 | FileCheck %s
// CHECK: error: 'tile.reduce' op is held in another layout than its type's #tile.blocked<vec = 4, threads = 16>
// CHECK: error: 'tile.arange' op has a tile without a layout in a kernel whose other tiles have one
#blocked = #tile.blocked<vec = 4, threads = 64>
#blocked1 = #tile.blocked<vec = 4, threads = 16>
module {
  func.func @row_sums(%arg0: !tile.ptr<f32>, %arg1: !tile.ptr<f32>) attributes {tile.kernel, tile.num_warps = 2 : i32} {
    %0 = tile.arange 0, 256 : tensor<256xi32, #blocked>
    %1 = tile.reshape %0 : tensor<256xi32, #blocked> -> tensor<64x4xi32, #blocked>
    %2 = tile.splat %arg0 : !tile.ptr<f32> -> tensor<64x4x!tile.ptr<f32>, #blocked>
    %3 = tile.addptr %2, %1 : tensor<64x4x!tile.ptr<f32>, #blocked>, tensor<64x4xi32, #blocked>
    %4 = tile.load %3 : tensor<64x4x!tile.ptr<f32>, #blocked> -> tensor<64x4xf32, #blocked>
    %5 = tile.reduce sum %4 {axis = 1 : i32} : tensor<64x4xf32, #blocked> -> tensor<64xf32, #blocked1>
    %6 = tile.arange 0, 64 : tensor<64xi32, #blocked1>
    %7 = tile.splat %arg1 : !tile.ptr<f32> -> tensor<64x!tile.ptr<f32>, #blocked1>
    %8 = tile.addptr %7, %6 : tensor<64x!tile.ptr<f32>, #blocked1>, tensor<64xi32, #blocked1>
    tile.store %8, %5 : tensor<64x!tile.ptr<f32>, #blocked1>, tensor<64xf32, #blocked1>
    return
  }
}


// -----

func.func @partly_laid_out(%py: !tile.ptr<f32>)
    attributes {tile.kernel, tile.num_warps = 2 : i32} {
  %r = tile.arange 0, 64 : tensor<64xi32>
  %y0 = tile.splat %py : !tile.ptr<f32> -> tensor<64x!tile.ptr<f32>, #tile.blocked<vec = 4, threads = 16>>
  %y1 = tile.splat %py : !tile.ptr<f32> -> tensor<64x!tile.ptr<f32>>
  %yp = tile.addptr %y1, %r : tensor<64x!tile.ptr<f32>>, tensor<64xi32>
  return
}

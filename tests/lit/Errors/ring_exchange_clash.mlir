// convert-tile-to-gpu refuses a kernel that moves data through shared
// memory while its ring's copies may still land there: unless the ring is
// `apart`, the exchanges reuse the stages' bytes. Here a loaded accumulator
// is converted to wgmma's layout after the ring's first fill (the IR of
// `stc --emit=layouts` for a dot outside loops with the convert moved;
// tile-assign-layouts puts it before tile.ring_init).
// RUN: not tile-opt %s --convert-tile-to-gpu 2>&1 | FileCheck %s
// CHECK: error: moves data through shared memory while the ring's copies may still land there
#blocked = #tile.blocked<vec = 8, threads = 8>
#blocked1 = #tile.blocked<vec = 8, threads = 16>
#blocked2 = #tile.blocked<vec = 1, threads = 64>
#blocked3 = #tile.blocked<vec = 8, threads = 128>
#wgmma = #tile.wgmma<groups = 1>
module {
  func.func @bias_dot(%arg0: !tile.ptr<bf16> {tile.divisibility = 16 : i32}, %arg1: !tile.ptr<bf16> {tile.divisibility = 16 : i32}, %arg2: !tile.ptr<f32> {tile.divisibility = 16 : i32}, %arg3: !tile.ptr<f32> {tile.divisibility = 16 : i32}, %arg4: i32) attributes {tile.kernel, tile.num_warps = 4 : i32, tile.ring = #tile.ring<stages = 2, stage_bytes = 24576, thread_copies = 2>} {
    %c-1_i32 = arith.constant -1 : i32
    %c0_i32 = arith.constant 0 : i32
    %c128_i32 = arith.constant 128 : i32
    %c64_i32 = arith.constant 64 : i32
    %0 = tile.arange 0, 64 : tensor<64xi32, #blocked>
    %1 = tile.arange 0, 128 : tensor<128xi32, #blocked1>
    %2 = tile.expand_dims %0 {axis = 1 : i32} : tensor<64xi32, #blocked> -> tensor<64x1xi32, #blocked2>
    %3 = tile.splat %c128_i32 : i32 -> tensor<64x1xi32, #blocked2>
    %4 = arith.muli %2, %3 : tensor<64x1xi32, #blocked2>
    %5 = tile.splat %arg3 : !tile.ptr<f32> -> tensor<64x1x!tile.ptr<f32>, #blocked2>
    %6 = tile.addptr %5, %4 : tensor<64x1x!tile.ptr<f32>, #blocked2>, tensor<64x1xi32, #blocked2>
    %7 = tile.expand_dims %1 {axis = 0 : i32} : tensor<128xi32, #blocked1> -> tensor<1x128xi32, #blocked1>
    %8 = tile.broadcast %6 : tensor<64x1x!tile.ptr<f32>, #blocked2> -> tensor<64x128x!tile.ptr<f32>, #blocked3>
    %9 = tile.broadcast %7 : tensor<1x128xi32, #blocked1> -> tensor<64x128xi32, #blocked3>
    %10 = tile.addptr %8, %9 : tensor<64x128x!tile.ptr<f32>, #blocked3>, tensor<64x128xi32, #blocked3>
    %11 = tile.load %10 : tensor<64x128x!tile.ptr<f32>, #blocked3> -> tensor<64x128xf32, #blocked3>
    %12 = tile.splat %c64_i32 : i32 -> tensor<64x1xi32, #blocked2>
    %13 = arith.muli %2, %12 : tensor<64x1xi32, #blocked2>
    %14 = tile.splat %arg0 : !tile.ptr<bf16> -> tensor<64x1x!tile.ptr<bf16>, #blocked2>
    %15 = tile.addptr %14, %13 : tensor<64x1x!tile.ptr<bf16>, #blocked2>, tensor<64x1xi32, #blocked2>
    %16 = tile.expand_dims %0 {axis = 0 : i32} : tensor<64xi32, #blocked> -> tensor<1x64xi32, #blocked>
    %17 = tile.broadcast %15 : tensor<64x1x!tile.ptr<bf16>, #blocked2> -> tensor<64x64x!tile.ptr<bf16>, #blocked3>
    %18 = tile.broadcast %16 : tensor<1x64xi32, #blocked> -> tensor<64x64xi32, #blocked3>
    %19 = tile.addptr %17, %18 : tensor<64x64x!tile.ptr<bf16>, #blocked3>, tensor<64x64xi32, #blocked3>
    %20 = tile.splat %arg1 : !tile.ptr<bf16> -> tensor<64x1x!tile.ptr<bf16>, #blocked2>
    %21 = tile.addptr %20, %4 : tensor<64x1x!tile.ptr<bf16>, #blocked2>, tensor<64x1xi32, #blocked2>
    %22 = tile.broadcast %21 : tensor<64x1x!tile.ptr<bf16>, #blocked2> -> tensor<64x128x!tile.ptr<bf16>, #blocked3>
    %23 = tile.addptr %22, %9 : tensor<64x128x!tile.ptr<bf16>, #blocked3>, tensor<64x128xi32, #blocked3>
    tile.ring_init
    tile.ring_copy_ptrs %19 -> stage %c0_i32 {cols = 64 : i64, layout = #tile.shared<swizzle = 128>, offset = 0 : i64, rows = 64 : i64} : tensor<64x64x!tile.ptr<bf16>, #blocked3>
    tile.ring_copy_ptrs %23 -> stage %c0_i32 {cols = 128 : i64, layout = #tile.shared<swizzle = 128>, offset = 8192 : i64, rows = 64 : i64} : tensor<64x128x!tile.ptr<bf16>, #blocked3>
    %24 = tile.convert_layout %11 : tensor<64x128xf32, #blocked3> -> tensor<64x128xf32, #wgmma>
    tile.ring_wait %c0_i32, %c0_i32
    %25 = tile.ring_dot %c0_i32, %c-1_i32, %24 {a_kmajor = false, a_layout = #tile.shared<swizzle = 128>, a_offset = 0 : i64, b_kmajor = false, b_layout = #tile.shared<swizzle = 128>, b_offset = 8192 : i64, k = 64 : i64, operand_type = bf16} : tensor<64x128xf32, #wgmma> -> tensor<64x128xf32, #wgmma>
    %26 = tile.ring_drain %25, %c-1_i32 : tensor<64x128xf32, #wgmma> -> tensor<64x128xf32, #wgmma>
    return
  }
}

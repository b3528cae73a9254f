// The shared-memory plan (Dialect/Tile/SharedMemory.h) as the kernel's
// launch attribute reports it. A ring of 2 stages of 32 KB takes
// 2 x (32768 + 16 bytes of mbarriers) + 1 KB of alignment slack = 66592
// bytes; a column sum across 4 warps exchanges 4 warps x 4 f32 = 64 bytes.
// The exchange reuses the ring's bytes (66592 in all), or follows them when
// the ring is `apart` (66656), and alone it is 64 bytes of static shared
// memory. Over 48 KB the kernel's shared memory is dynamic.
// RUN: tile-opt %s --split-input-file --convert-tile-to-gpu | FileCheck %s
//
// A warp-specialized, persistent kernel with a TMA store (the example
// matmul_store_block: 4 stages of 32 KB, 8 consumer warps, a 128 x 128 bf16
// block stored by TMA): the ring part is 4 x (32768 + 16) + 1024 = 132160,
// the tile queue 128 more; the TMA store's 32 KB staging starts at the next
// 1 KB boundary of the ring base (132096, + 1024 of slack), so it ends at
// 165888; the 8 consumer warps' store staging areas, 8 x 16 x 144 = 18432,
// fit after it: 184320 in all, the exchanges after that (none here).
// RUN: stc %examples/matmul.tile --kernel matmul_store_block --div16 all --emit=mlir | FileCheck %s --check-prefix=WS
// WS: tile.launch = #tile.launch<threads = 384, shared = 0, dynamic_shared = 184320, min_ptx = 0>
// CHECK: tile.launch = #tile.launch<threads = 128, shared = 0, dynamic_shared = 66592, min_ptx = 0>
// CHECK: tile.launch = #tile.launch<threads = 128, shared = 0, dynamic_shared = 66656, min_ptx = 0>
// CHECK: tile.launch = #tile.launch<threads = 128, shared = 64, dynamic_shared = 0, min_ptx = 0>

func.func @reuse(%p: !tile.ptr<f32>) attributes {tile.kernel, tile.num_warps = 4 : i32,
    tile.ring = #tile.ring<stages = 2, stage_bytes = 32768>} {
  tile.ring_init
  %0 = tile.arange 0, 512 : tensor<512xi32>
  %1 = tile.splat %p : !tile.ptr<f32> -> tensor<512x!tile.ptr<f32>>
  %2 = tile.addptr %1, %0 : tensor<512x!tile.ptr<f32>>, tensor<512xi32>
  %3 = tile.load %2 : tensor<512x!tile.ptr<f32>> -> tensor<512xf32>
  %4 = tile.reshape %3 : tensor<512xf32> -> tensor<128x4xf32>
  %5 = tile.reduce sum %4 {axis = 0 : i32} : tensor<128x4xf32> -> tensor<4xf32>
  %6 = tile.arange 0, 4 : tensor<4xi32>
  %7 = tile.splat %p : !tile.ptr<f32> -> tensor<4x!tile.ptr<f32>>
  %8 = tile.addptr %7, %6 : tensor<4x!tile.ptr<f32>>, tensor<4xi32>
  tile.store %8, %5 : tensor<4x!tile.ptr<f32>>, tensor<4xf32>
  return
}

// -----

func.func @apart(%p: !tile.ptr<f32>) attributes {tile.kernel, tile.num_warps = 4 : i32,
    tile.ring = #tile.ring<stages = 2, stage_bytes = 32768, apart = true>} {
  tile.ring_init
  %0 = tile.arange 0, 512 : tensor<512xi32>
  %1 = tile.splat %p : !tile.ptr<f32> -> tensor<512x!tile.ptr<f32>>
  %2 = tile.addptr %1, %0 : tensor<512x!tile.ptr<f32>>, tensor<512xi32>
  %3 = tile.load %2 : tensor<512x!tile.ptr<f32>> -> tensor<512xf32>
  %4 = tile.reshape %3 : tensor<512xf32> -> tensor<128x4xf32>
  %5 = tile.reduce sum %4 {axis = 0 : i32} : tensor<128x4xf32> -> tensor<4xf32>
  %6 = tile.arange 0, 4 : tensor<4xi32>
  %7 = tile.splat %p : !tile.ptr<f32> -> tensor<4x!tile.ptr<f32>>
  %8 = tile.addptr %7, %6 : tensor<4x!tile.ptr<f32>>, tensor<4xi32>
  tile.store %8, %5 : tensor<4x!tile.ptr<f32>>, tensor<4xf32>
  return
}

// -----

func.func @no_ring(%p: !tile.ptr<f32>) attributes {tile.kernel, tile.num_warps = 4 : i32} {
  %0 = tile.arange 0, 512 : tensor<512xi32>
  %1 = tile.splat %p : !tile.ptr<f32> -> tensor<512x!tile.ptr<f32>>
  %2 = tile.addptr %1, %0 : tensor<512x!tile.ptr<f32>>, tensor<512xi32>
  %3 = tile.load %2 : tensor<512x!tile.ptr<f32>> -> tensor<512xf32>
  %4 = tile.reshape %3 : tensor<512xf32> -> tensor<128x4xf32>
  %5 = tile.reduce sum %4 {axis = 0 : i32} : tensor<128x4xf32> -> tensor<4xf32>
  %6 = tile.arange 0, 4 : tensor<4xi32>
  %7 = tile.splat %p : !tile.ptr<f32> -> tensor<4x!tile.ptr<f32>>
  %8 = tile.addptr %7, %6 : tensor<4x!tile.ptr<f32>>, tensor<4xi32>
  tile.store %8, %5 : tensor<4x!tile.ptr<f32>>, tensor<4xf32>
  return
}

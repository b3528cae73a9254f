// The 1:N type conversion of convert-tile-to-gpu (TileToGPU/TypeConverter.h):
// a tile becomes, in each thread, the elements its layout gives that thread,
// and crosses scf.for and scf.if as that many values, 16-bit elements two to
// a vector<2 x T>; pointers become global pointers.
// RUN: tile-opt %s --split-input-file --convert-tile-to-gpu | FileCheck %s
//
// With 4 warps (128 threads): the 64 x 64 f32 accumulator in
// #tile.mma<warps_m = 4, warps_n = 1> is 8 fragments of 16 x 8 a warp, four
// elements a fragment: 32 f32 a thread. The 64 x 32 f16 A tile prefetched
// one iteration ahead is blocked (runs of 8 over 128 threads): 16 f16 a
// thread, 8 pairs. The row max, #tile.slice of the mma layout, keeps one
// value per row a thread holds (rows lane/4 and lane/4 + 8): 2 f32.
// CHECK-LABEL: gpu.func @carries(%{{.*}}: !llvm.ptr<1>, %{{.*}}: !llvm.ptr<1>, %{{.*}}: !llvm.ptr<1>, %{{.*}}: i32)
// CHECK:       scf.for {{.*}} -> ({{(f32, ){32}(vector<2xf16>, ){7}vector<2xf16>}}) : i32
// CHECK:       scf.if {{.*}} -> (f32, f32)
func.func @carries(%pa: !tile.ptr<f16>, %pb: !tile.ptr<f16>, %pc: !tile.ptr<f32>,
                   %n: i32) attributes {tile.kernel, tile.num_warps = 4 : i32} {
  %c0 = arith.constant 0 : i32
  %c32 = arith.constant 32 : i32
  %zero = arith.constant 0.0 : f32
  %r = tile.arange 0, 2048 : tensor<2048xi32>
  %ra = tile.reshape %r : tensor<2048xi32> -> tensor<64x32xi32>
  %rb = tile.reshape %r : tensor<2048xi32> -> tensor<32x64xi32>
  %a0 = tile.splat %pa : !tile.ptr<f16> -> tensor<64x32x!tile.ptr<f16>>
  %ap = tile.addptr %a0, %ra : tensor<64x32x!tile.ptr<f16>>, tensor<64x32xi32>
  %b0 = tile.splat %pb : !tile.ptr<f16> -> tensor<32x64x!tile.ptr<f16>>
  %bp = tile.addptr %b0, %rb : tensor<32x64x!tile.ptr<f16>>, tensor<32x64xi32>
  %z = tile.splat %zero : f32 -> tensor<64x64xf32>
  %a00 = tile.load %ap : tensor<64x32x!tile.ptr<f16>> -> tensor<64x32xf16>
  %acc:2 = scf.for %k = %c0 to %n step %c32 iter_args(%c = %z, %a = %a00) -> (tensor<64x64xf32>, tensor<64x32xf16>) : i32 {
    %b = tile.load %bp : tensor<32x64x!tile.ptr<f16>> -> tensor<32x64xf16>
    %d = tile.dot %a, %b, %c : tensor<64x32xf16>, tensor<32x64xf16>, tensor<64x64xf32> -> tensor<64x64xf32>
    %an = tile.load %ap : tensor<64x32x!tile.ptr<f16>> -> tensor<64x32xf16>
    scf.yield %d, %an : tensor<64x64xf32>, tensor<64x32xf16>
  }
  %mx = tile.reduce max %acc#0 {axis = 1 : i32} : tensor<64x64xf32> -> tensor<64xf32>
  %cond = arith.cmpi sgt, %n, %c32 : i32
  %sel = scf.if %cond -> (tensor<64xf32>) {
    scf.yield %mx : tensor<64xf32>
  } else {
    %mn = tile.reduce min %acc#0 {axis = 1 : i32} : tensor<64x64xf32> -> tensor<64xf32>
    scf.yield %mn : tensor<64xf32>
  }
  %r64 = tile.arange 0, 64 : tensor<64xi32>
  %m0 = tile.splat %pc : !tile.ptr<f32> -> tensor<64x!tile.ptr<f32>>
  %mp = tile.addptr %m0, %r64 : tensor<64x!tile.ptr<f32>>, tensor<64xi32>
  tile.store %mp, %sel : tensor<64x!tile.ptr<f32>>, tensor<64xf32>
  return
}

// -----

// Replicated and odd counts: 64 f32 whose loads are one element a thread
// (#tile.blocked<vec = 1, threads = 64>: threads 64-127 hold copies) are 1
// f32 a thread; a one-element f16 tile is 1 f16, an odd count, not paired.
// CHECK-LABEL: gpu.func @small
// CHECK:       scf.for {{.*}} -> (f32, f16) : i32
func.func @small(%p: !tile.ptr<f32>, %h: !tile.ptr<f16>, %n: i32)
    attributes {tile.kernel, tile.num_warps = 4 : i32} {
  %c0 = arith.constant 0 : i32
  %c1 = arith.constant 1 : i32
  %zero = arith.constant 0.0 : f32
  %hz = arith.constant 0.0 : f16
  %z = tile.splat %zero : f32 -> tensor<64xf32>
  %hz1 = tile.splat %hz : f16 -> tensor<1xf16>
  %r:2 = scf.for %k = %c0 to %n step %c1 iter_args(%a = %z, %b = %hz1) -> (tensor<64xf32>, tensor<1xf16>) : i32 {
    %i = tile.arange 0, 64 : tensor<64xi32>
    %s = tile.splat %p : !tile.ptr<f32> -> tensor<64x!tile.ptr<f32>>
    %q = tile.addptr %s, %i : tensor<64x!tile.ptr<f32>>, tensor<64xi32>
    %x = tile.load %q : tensor<64x!tile.ptr<f32>> -> tensor<64xf32>
    %a2 = arith.addf %a, %x : tensor<64xf32>
    %j = tile.arange 0, 1 : tensor<1xi32>
    %hs = tile.splat %h : !tile.ptr<f16> -> tensor<1x!tile.ptr<f16>>
    %hq = tile.addptr %hs, %j : tensor<1x!tile.ptr<f16>>, tensor<1xi32>
    %y = tile.load %hq : tensor<1x!tile.ptr<f16>> -> tensor<1xf16>
    %b2 = arith.addf %b, %y : tensor<1xf16>
    scf.yield %a2, %b2 : tensor<64xf32>, tensor<1xf16>
  }
  %i = tile.arange 0, 64 : tensor<64xi32>
  %s = tile.splat %p : !tile.ptr<f32> -> tensor<64x!tile.ptr<f32>>
  %q = tile.addptr %s, %i : tensor<64x!tile.ptr<f32>>, tensor<64xi32>
  tile.store %q, %r#0 : tensor<64x!tile.ptr<f32>>, tensor<64xf32>
  %j = tile.arange 0, 1 : tensor<1xi32>
  %hs = tile.splat %h : !tile.ptr<f16> -> tensor<1x!tile.ptr<f16>>
  %hq = tile.addptr %hs, %j : tensor<1x!tile.ptr<f16>>, tensor<1xi32>
  tile.store %hq, %r#1 : tensor<1x!tile.ptr<f16>>, tensor<1xf16>
  return
}

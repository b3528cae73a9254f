// tile-pipeline-tma with cp-async (sm_80 .. sm_89): a K loop whose dot
// operands are loads through pointers in aligned runs becomes the ring the
// block's threads fill with cp.async (tile.ring_copy_ptrs), read by a
// synchronous tile.ring_dot {mma_sync} that releases the stage it read;
// tile-assign-layouts then holds its result in an mma.sync layout with warp
// tiles as square as fit (2 x 2 warps of 32 x 32 here, where tile.dot's
// rule would give 4 x 1). The ring loop carries its stage and phase
// (stepped by select, not i % S). Without cp-async (and without tma) the
// loop stays.
// RUN: tile-opt %s --tile-pipeline-tma=cp-async=true | FileCheck %s
// RUN: tile-opt %s --tile-pipeline-tma=cp-async=true --tile-assign-layouts | FileCheck %s --check-prefix=LAYOUT
// RUN: tile-opt %s --tile-pipeline-tma | FileCheck %s --check-prefix=PLAIN

// CHECK-LABEL: func.func @mm
// CHECK-SAME:  tile.ring = #tile.ring<stages = 4, stage_bytes = 8192, thread_copies = 2>
// CHECK:       tile.ring_init
// CHECK:       tile.ring_copy_ptrs {{.*}} {cols = 32 : i64, layout = #tile.shared<swizzle = 64>, offset = 0 : i64, rows = 64 : i64}
// CHECK:       tile.ring_copy_ptrs {{.*}} {cols = 64 : i64, layout = #tile.shared<swizzle = 128>, offset = 4096 : i64, rows = 32 : i64}
// CHECK:       scf.for {{.*}} iter_args({{.*}}, %[[STAGE:arg[0-9]+]] = %{{.*}}, %[[PHASE:arg[0-9]+]] = %{{.*}}) -> (tensor<64x64xf32>, i32, i32)
// CHECK:         tile.ring_wait %[[STAGE]], %[[PHASE]]
// CHECK:         tile.ring_dot %[[STAGE]], %[[STAGE]], {{.*}}b_kmajor = false{{.*}}k = 32 : i64, mma_sync, operand_type = f16, sync}
// CHECK:         scf.if
// CHECK:           tile.ring_acquire
// CHECK:           tile.ring_copy_ptrs
// CHECK:       tile.ring_drain
// CHECK-NOT:   tile.dot
// LAYOUT:      #[[MMA:mma[0-9]*]] = #tile.mma<warps_m = 2, warps_n = 2>
// LAYOUT:      tile.ring_dot {{.*}} -> tensor<64x64xf32, #[[MMA]]>
// PLAIN-NOT:   tile.ring
// PLAIN:       tile.dot
func.func @mm(%a: !tile.ptr<f16> {tile.divisibility = 16 : i32},
              %b: !tile.ptr<f16> {tile.divisibility = 16 : i32},
              %c: !tile.ptr<f32> {tile.divisibility = 16 : i32}, %n: i32)
    attributes {tile.kernel, tile.num_warps = 4 : i32} {
  %zero = arith.constant 0.000000e+00 : f32
  %c32 = arith.constant 32 : i32
  %c0 = arith.constant 0 : i32
  %c64 = arith.constant 64 : i32
  %r64 = tile.arange 0, 64 : tensor<64xi32>
  %r32 = tile.arange 0, 32 : tensor<32xi32>
  %init = tile.splat %zero : f32 -> tensor<64x64xf32>
  %acc = scf.for %k = %c0 to %n step %c32 iter_args(%x = %init) -> (tensor<64x64xf32>) : i32 {
    // A [64, 32]: a + m * 32 + (k + kk)
    %m = tile.expand_dims %r64 {axis = 1 : i32} : tensor<64xi32> -> tensor<64x1xi32>
    %s32 = tile.splat %c32 : i32 -> tensor<64x1xi32>
    %mo = arith.muli %m, %s32 : tensor<64x1xi32>
    %ab = tile.splat %a : !tile.ptr<f16> -> tensor<64x1x!tile.ptr<f16>>
    %ar = tile.addptr %ab, %mo : tensor<64x1x!tile.ptr<f16>>, tensor<64x1xi32>
    %ks = tile.splat %k : i32 -> tensor<32xi32>
    %kk = arith.addi %ks, %r32 : tensor<32xi32>
    %kc = tile.expand_dims %kk {axis = 0 : i32} : tensor<32xi32> -> tensor<1x32xi32>
    %arb = tile.broadcast %ar : tensor<64x1x!tile.ptr<f16>> -> tensor<64x32x!tile.ptr<f16>>
    %kcb = tile.broadcast %kc : tensor<1x32xi32> -> tensor<64x32xi32>
    %ap = tile.addptr %arb, %kcb : tensor<64x32x!tile.ptr<f16>>, tensor<64x32xi32>
    %ta = tile.load %ap : tensor<64x32x!tile.ptr<f16>> -> tensor<64x32xf16>
    // B [32, 64]: b + (k + kk) * 64 + n
    %kr = tile.expand_dims %kk {axis = 1 : i32} : tensor<32xi32> -> tensor<32x1xi32>
    %s64 = tile.splat %c64 : i32 -> tensor<32x1xi32>
    %ko = arith.muli %kr, %s64 : tensor<32x1xi32>
    %bb = tile.splat %b : !tile.ptr<f16> -> tensor<32x1x!tile.ptr<f16>>
    %br = tile.addptr %bb, %ko : tensor<32x1x!tile.ptr<f16>>, tensor<32x1xi32>
    %nc = tile.expand_dims %r64 {axis = 0 : i32} : tensor<64xi32> -> tensor<1x64xi32>
    %brb = tile.broadcast %br : tensor<32x1x!tile.ptr<f16>> -> tensor<32x64x!tile.ptr<f16>>
    %ncb = tile.broadcast %nc : tensor<1x64xi32> -> tensor<32x64xi32>
    %bp = tile.addptr %brb, %ncb : tensor<32x64x!tile.ptr<f16>>, tensor<32x64xi32>
    %tb = tile.load %bp : tensor<32x64x!tile.ptr<f16>> -> tensor<32x64xf16>
    %d = tile.dot %ta, %tb, %x : tensor<64x32xf16>, tensor<32x64xf16>, tensor<64x64xf32> -> tensor<64x64xf32>
    scf.yield %d : tensor<64x64xf32>
  }
  %mo = tile.expand_dims %r64 {axis = 1 : i32} : tensor<64xi32> -> tensor<64x1xi32>
  %s = tile.splat %c64 : i32 -> tensor<64x1xi32>
  %ro = arith.muli %mo, %s : tensor<64x1xi32>
  %cb = tile.splat %c : !tile.ptr<f32> -> tensor<64x1x!tile.ptr<f32>>
  %cr = tile.addptr %cb, %ro : tensor<64x1x!tile.ptr<f32>>, tensor<64x1xi32>
  %nc = tile.expand_dims %r64 {axis = 0 : i32} : tensor<64xi32> -> tensor<1x64xi32>
  %crb = tile.broadcast %cr : tensor<64x1x!tile.ptr<f32>> -> tensor<64x64x!tile.ptr<f32>>
  %ncb = tile.broadcast %nc : tensor<1x64xi32> -> tensor<64x64xi32>
  %cp = tile.addptr %crb, %ncb : tensor<64x64x!tile.ptr<f32>>, tensor<64x64xi32>
  tile.store %cp, %acc : tensor<64x64x!tile.ptr<f32>>, tensor<64x64xf32>
  return
}

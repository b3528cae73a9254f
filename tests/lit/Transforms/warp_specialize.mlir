// tile-warp-specialize: after tile-pipeline-tma built a warp-specialized
// ring, the kernel splits into a producer copy of its body, pruned to the
// ring's copies and what they depend on, and the consumers' body without
// the tile.producer op. The K loop sits in an `if` (a kept tile) with an
// `else` that stores zeros, as SparseDrop's dX kernel has.
// RUN: tile-opt %s --tile-pipeline-tma=tma=true --tile-warp-specialize | FileCheck %s

// CHECK-LABEL: func.func @kept_tile
// CHECK:       tile.ring_init
// CHECK-NEXT:  tile.warp_specialize {blocks_per_sm = 1 : i32, consumer_regs = 232 : i32, producer_regs = 40 : i32, producer_warps = 4 : i32} producer {
// The producer keeps the `if` (its condition reads the mask), the list
// load and the copies...
// CHECK:         tile.load %arg3
// CHECK:         scf.if
// CHECK:           tile.ring_base
// CHECK:           scf.for
// CHECK:             tile.load
// CHECK:             tile.ring_acquire
// CHECK:             tile.ring_copy %arg0
// CHECK:             tile.ring_copy %arg1
// CHECK:           tile.ring_advance
// ... and none of the tile work.
// CHECK-NOT:     tile.splat
// CHECK-NOT:     tile.ring_dot
// CHECK-NOT:     tile.store
// CHECK:       } consumer {
// CHECK-NOT:     tile.ring_copy
// CHECK-NOT:     tile.producer
// CHECK:         scf.if
// CHECK:           tile.ring_wait
// CHECK:           tile.ring_dot
// CHECK:           tile.ring_drain
// CHECK:           tile.ring_advance
// CHECK:           tile.store
// CHECK:         } else {
// CHECK:           tile.store
func.func @kept_tile(%a: !tile.desc<bf16>, %b: !tile.desc<bf16>,
                     %list: !tile.ptr<i32>, %keep: !tile.ptr<i32>, %n: i32,
                     %out: tensor<128x128x!tile.ptr<f32>>)
    attributes {tile.kernel, tile.num_warps = 8 : i32} {
  %c0 = arith.constant 0 : i32
  %c1 = arith.constant 1 : i32
  %c64 = arith.constant 64 : i32
  %zero = arith.constant 0.0 : f32
  %kept = tile.load %keep : !tile.ptr<i32> -> i32
  %cond = arith.cmpi ne, %kept, %c0 : i32
  scf.if %cond {
    %init = tile.splat %zero : f32 -> tensor<128x128xf32>
    %r = scf.for %j = %c0 to %n step %c1 iter_args(%acc = %init) -> (tensor<128x128xf32>) : i32 {
      %p = tile.addptr %list, %j : !tile.ptr<i32>, i32
      %kb = tile.load %p : !tile.ptr<i32> -> i32
      %k = arith.muli %kb, %c64 : i32
      %ta = tile.desc_load %a[%c0, %k] : !tile.desc<bf16> -> tensor<128x64xbf16>
      %tb = tile.desc_load %b[%c0, %k] : !tile.desc<bf16> -> tensor<128x64xbf16>
      %tbt = tile.trans %tb : tensor<128x64xbf16> -> tensor<64x128xbf16>
      %d = tile.dot %ta, %tbt, %acc : tensor<128x64xbf16>, tensor<64x128xbf16>, tensor<128x128xf32> -> tensor<128x128xf32>
      scf.yield %d : tensor<128x128xf32>
    }
    tile.store %out, %r : tensor<128x128x!tile.ptr<f32>>, tensor<128x128xf32>
  } else {
    %z = tile.splat %zero : f32 -> tensor<128x128xf32>
    tile.store %out, %z : tensor<128x128x!tile.ptr<f32>>, tensor<128x128xf32>
  }
  return
}

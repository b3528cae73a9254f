// tile-pingpong: a @pingpong(1) kernel's warp_specialize has two consumer
// groups (consumer_groups = 2; the consumers' registers are those of 2 x 4
// warps beside the producer warpgroup). In the consumers' persistent loop,
// the step's parity picks the group that runs the tile; the other group
// runs only what the ring's running count needs: the trip count (here a
// kept-block count loaded per tile) and tile.ring_advance. The step's
// increment stays outside the `if`.
// The tiles' main loops take turns: the owner waits for the previous
// step's loop first (tile.turn_wait) and passes the turn on after its own
// loop, and again at the end of the tile for paths without the loop (only
// the first pass of a step counts).
// RUN: tile-opt %s --tile-persistent --tile-pipeline-tma=tma=true --tile-warp-specialize --tile-pingpong --canonicalize | FileCheck %s

// CHECK-LABEL: func.func @kept_blocks
// CHECK:       tile.warp_specialize {blocks_per_sm = 1 : i32, consumer_groups = 2 : i32, consumer_regs = 232 : i32, producer_regs = 40 : i32, producer_warps = 4 : i32} producer {
// The producer is as without ping-pong: it loads every tile's stages.
// CHECK-NOT:     tile.consumer_group
// CHECK:         tile.next_tile
// CHECK:         tile.ring_copy
// CHECK:         tile.ring_advance
// CHECK:       } consumer {
// CHECK:         scf.while
// CHECK:           tile.next_tile
// CHECK:         } do {
// CHECK-NEXT:    ^bb0(%[[STEP:.*]]: i32, %[[TILE:.*]]: i32):
// CHECK-NEXT:      %[[GROUP:.*]] = tile.consumer_group : i32
// CHECK-NEXT:      %[[PARITY:.*]] = arith.remui %[[STEP]], %{{.*}} : i32
// CHECK-NEXT:      %[[MINE:.*]] = arith.cmpi eq, %[[PARITY]], %[[GROUP]] : i32
// CHECK-NEXT:      %[[NEXT:.*]] = arith.addi %[[STEP]], %{{.*}} : i32
// CHECK-NEXT:      scf.if %[[MINE]] {
// CHECK-NEXT:        tile.turn_wait %[[STEP]]
// CHECK:             tile.addptr %arg3
// CHECK:             scf.for
// CHECK:               tile.ring_wait
// CHECK:               tile.ring_dot
// CHECK:               scf.yield
// CHECK-NEXT:        }
// CHECK-NEXT:        tile.turn_pass %[[STEP]]
// CHECK:             tile.ring_drain
// CHECK:             tile.ring_advance
// CHECK:             tile.store
// CHECK-NEXT:        tile.turn_pass %[[STEP]]
// CHECK-NEXT:      } else {
// CHECK-NEXT:        %[[X:.*]] = arith.remsi %[[TILE]]
// CHECK-NEXT:        %[[P:.*]] = tile.addptr %arg3, %[[X]]
// CHECK-NEXT:        %[[N:.*]] = tile.load %[[P]]
// CHECK-NEXT:        %[[TRIPS:.*]] = arith.maxsi %[[N]]
// CHECK-NEXT:        tile.ring_advance %[[TRIPS]]
// CHECK-NEXT:      }
// CHECK-NEXT:      scf.yield %[[NEXT]] : i32
func.func @kept_blocks(%a: !tile.desc<bf16>, %b: !tile.desc<bf16>,
                       %list: !tile.ptr<i32>, %counts: !tile.ptr<i32>,
                       %out: tensor<64x128x!tile.ptr<f32>>)
    attributes {tile.kernel, tile.num_warps = 4 : i32,
                tile.persistent = 1 : i32, tile.pingpong = 1 : i32} {
  %c0 = arith.constant 0 : i32
  %c1 = arith.constant 1 : i32
  %c64 = arith.constant 64 : i32
  %zero = arith.constant 0.0 : f32
  %t = tile.program_id 0 : i32
  %cp = tile.addptr %counts, %t : !tile.ptr<i32>, i32
  %n = tile.load %cp : !tile.ptr<i32> -> i32
  %init = tile.splat %zero : f32 -> tensor<64x128xf32>
  %r = scf.for %j = %c0 to %n step %c1 iter_args(%acc = %init) -> (tensor<64x128xf32>) : i32 {
    %p = tile.addptr %list, %j : !tile.ptr<i32>, i32
    %kb = tile.load %p : !tile.ptr<i32> -> i32
    %k = arith.muli %kb, %c64 : i32
    %ta = tile.desc_load %a[%c0, %k] : !tile.desc<bf16> -> tensor<64x64xbf16>
    %tb = tile.desc_load %b[%c0, %k] : !tile.desc<bf16> -> tensor<128x64xbf16>
    %tbt = tile.trans %tb : tensor<128x64xbf16> -> tensor<64x128xbf16>
    %d = tile.dot %ta, %tbt, %acc : tensor<64x64xbf16>, tensor<64x128xbf16>, tensor<64x128xf32> -> tensor<64x128xf32>
    scf.yield %d : tensor<64x128xf32>
  }
  tile.store %out, %r : tensor<64x128x!tile.ptr<f32>>, tensor<64x128xf32>
  return
}

// Without @pingpong the consumers share every tile: no group, no split.
// CHECK-LABEL: func.func @cooperative
// CHECK-NOT:   consumer_groups
// CHECK-NOT:   tile.consumer_group
// CHECK-NOT:   tile.turn_wait
// CHECK:       return
func.func @cooperative(%a: !tile.desc<bf16>, %b: !tile.desc<bf16>,
                       %out: tensor<64x128x!tile.ptr<f32>>, %n: i32)
    attributes {tile.kernel, tile.num_warps = 4 : i32,
                tile.persistent = 1 : i32} {
  %c0 = arith.constant 0 : i32
  %c64 = arith.constant 64 : i32
  %zero = arith.constant 0.0 : f32
  %init = tile.splat %zero : f32 -> tensor<64x128xf32>
  %r = scf.for %k = %c0 to %n step %c64 iter_args(%acc = %init) -> (tensor<64x128xf32>) : i32 {
    %ta = tile.desc_load %a[%c0, %k] : !tile.desc<bf16> -> tensor<64x64xbf16>
    %tb = tile.desc_load %b[%c0, %k] : !tile.desc<bf16> -> tensor<128x64xbf16>
    %tbt = tile.trans %tb : tensor<128x64xbf16> -> tensor<64x128xbf16>
    %d = tile.dot %ta, %tbt, %acc : tensor<64x64xbf16>, tensor<64x128xbf16>, tensor<64x128xf32> -> tensor<64x128xf32>
    scf.yield %d : tensor<64x128xf32>
  }
  tile.store %out, %r : tensor<64x128x!tile.ptr<f32>>, tensor<64x128xf32>
  return
}

// tile-pipeline-tma: a K loop of desc_load + dot becomes a ring of TMA
// copies issued S iterations ahead of asynchronous wgmma (sm_90a); without
// TMA, and for loops that do not match, tile-expand-desc-load makes
// desc_load a masked load.
// RUN: tile-opt %s --split-input-file --tile-pipeline-tma=tma=true --tile-expand-desc-load | FileCheck %s
// RUN: tile-opt %s --split-input-file --tile-pipeline-tma=tma=false --tile-expand-desc-load | FileCheck %s --check-prefix=PLAIN

// A [128, 64] K-major A and a transposed [128, 64] block as B (both K-major
// operands): two 16 KB slots per stage, four stages, the prologue issues
// stages 0-3 and the loop refills the stage iteration i-1 read once every
// thread released it.
// (This kernel opts out of warp specialization: the ring as the whole
// block runs it; @gemm_ws below is the default form.)
// CHECK-LABEL: func.func @gemm
// CHECK-SAME:  tile.ring = #tile.ring<stages = 4, stage_bytes = 32768>
// CHECK:       tile.ring_init
// CHECK:       scf.if
// CHECK:         tile.ring_expect %{{.*}} {bytes = 32768 : i64}
// CHECK:         tile.ring_copy %arg0[{{.*}}] -> stage {{.*}} {cols = 64 : i64, layout = #tile.shared<swizzle = 128>, offset = 0 : i64, rows = 128 : i64}
// CHECK:         tile.ring_copy %arg1[{{.*}}] -> stage {{.*}} {cols = 64 : i64, layout = #tile.shared<swizzle = 128>, offset = 16384 : i64, rows = 128 : i64}
// The list load for the iteration to refill comes first, clamped to the
// last iteration, so it overlaps the wait and the MMAs.
// CHECK:       scf.for
// CHECK:         arith.minsi
// CHECK:         tile.load
// CHECK:         tile.ring_wait
// CHECK:         tile.ring_dot {{.*}} {a_kmajor = true, a_layout = #tile.shared<swizzle = 128>, a_offset = 0 : i64, b_kmajor = true, b_layout = #tile.shared<swizzle = 128>, b_offset = 16384 : i64, k = 64 : i64, operand_type = bf16}
// CHECK:         scf.if
// CHECK:           tile.ring_acquire
// CHECK:           tile.ring_expect
// CHECK:           tile.ring_copy
// CHECK:       tile.ring_drain
// CHECK-NOT:   tile.desc_load
// PLAIN-LABEL: func.func @gemm
// PLAIN-NOT:   tile.ring
// PLAIN:       tile.desc_fields %arg0
// PLAIN:       tile.load {{.*}}, {{.*}}, {{.*}} : tensor<128x64x!tile.ptr<bf16>>
// PLAIN:       tile.dot
func.func @gemm(%a: !tile.desc<bf16>, %b: !tile.desc<bf16>,
                %list: !tile.ptr<i32>, %n: i32, %m0: i32)
    attributes {tile.kernel, tile.num_warps = 8 : i32, tile.warp_specialize = 0 : i32} {
  %c0 = arith.constant 0 : i32
  %c1 = arith.constant 1 : i32
  %c64 = arith.constant 64 : i32
  %zero = arith.constant 0.0 : f32
  %init = tile.splat %zero : f32 -> tensor<128x128xf32>
  %r = scf.for %j = %c0 to %n step %c1 iter_args(%acc = %init) -> (tensor<128x128xf32>) : i32 {
    %p = tile.addptr %list, %j : !tile.ptr<i32>, i32
    %kb = tile.load %p : !tile.ptr<i32> -> i32
    %k = arith.muli %kb, %c64 : i32
    %ta = tile.desc_load %a[%m0, %k] : !tile.desc<bf16> -> tensor<128x64xbf16>
    %tb = tile.desc_load %b[%c0, %k] : !tile.desc<bf16> -> tensor<128x64xbf16>
    %tbt = tile.trans %tb : tensor<128x64xbf16> -> tensor<64x128xbf16>
    %d = tile.dot %ta, %tbt, %acc : tensor<128x64xbf16>, tensor<64x128xbf16>, tensor<128x128xf32> -> tensor<128x128xf32>
    scf.yield %d : tensor<128x128xf32>
  }
  return
}

// -----

// range(..., num_stages=2) on the loop (tile.num_stages) sets the ring's
// depth over the four that would fit; the kernel-wide option (stages=0
// here: as many as fit) does not apply to this loop.
// CHECK-LABEL: func.func @gemm_loop_stages
// CHECK-SAME:  tile.ring = #tile.ring<stages = 2, stage_bytes = 32768>
// PLAIN-LABEL: func.func @gemm_loop_stages
// PLAIN-NOT:   tile.ring
func.func @gemm_loop_stages(%a: !tile.desc<bf16>, %b: !tile.desc<bf16>,
                            %n: i32, %m0: i32)
    attributes {tile.kernel, tile.num_warps = 8 : i32, tile.warp_specialize = 0 : i32} {
  %c0 = arith.constant 0 : i32
  %c64 = arith.constant 64 : i32
  %zero = arith.constant 0.0 : f32
  %init = tile.splat %zero : f32 -> tensor<128x128xf32>
  %r = scf.for %k = %c0 to %n step %c64 iter_args(%acc = %init) -> (tensor<128x128xf32>) : i32 {
    %ta = tile.desc_load %a[%m0, %k] : !tile.desc<bf16> -> tensor<128x64xbf16>
    %tb = tile.desc_load %b[%c0, %k] : !tile.desc<bf16> -> tensor<128x64xbf16>
    %tbt = tile.trans %tb : tensor<128x64xbf16> -> tensor<64x128xbf16>
    %d = tile.dot %ta, %tbt, %acc : tensor<128x64xbf16>, tensor<64x128xbf16>, tensor<128x128xf32> -> tensor<128x128xf32>
    scf.yield %d : tensor<128x128xf32>
  } {tile.num_stages = 2 : i32}
  return
}

// -----

// An M-major A (transposed [64, 128] block) and an N-major B: both wgmma
// transposes.
// CHECK-LABEL: func.func @gemm_mn
// CHECK:       tile.ring_dot {{.*}} {a_kmajor = false, a_layout = #tile.shared<swizzle = 128>, a_offset = 0 : i64, b_kmajor = false, b_layout = #tile.shared<swizzle = 128>, b_offset = 16384 : i64, k = 64 : i64
func.func @gemm_mn(%a: !tile.desc<f16>, %b: !tile.desc<f16>, %n: i32)
    attributes {tile.kernel, tile.num_warps = 8 : i32} {
  %c0 = arith.constant 0 : i32
  %c64 = arith.constant 64 : i32
  %zero = arith.constant 0.0 : f32
  %init = tile.splat %zero : f32 -> tensor<128x128xf32>
  %r = scf.for %k = %c0 to %n step %c64 iter_args(%acc = %init) -> (tensor<128x128xf32>) : i32 {
    %ta = tile.desc_load %a[%k, %c0] : !tile.desc<f16> -> tensor<64x128xf16>
    %tat = tile.trans %ta : tensor<64x128xf16> -> tensor<128x64xf16>
    %tb = tile.desc_load %b[%k, %c0] : !tile.desc<f16> -> tensor<64x128xf16>
    %d = tile.dot %tat, %tb, %acc : tensor<128x64xf16>, tensor<64x128xf16>, tensor<128x128xf32> -> tensor<128x128xf32>
    scf.yield %d : tensor<128x128xf32>
  }
  return
}

// -----

// The default, warp-specialized ring: ring_init moves to the top of the
// kernel; a tile.producer loop reads the kept-block list (before waiting, so
// the load overlaps the wait), acquires stages (parity flipped, so the first
// S uses pass at once) and issues the copies; the
// consumers' loop only waits, runs the MMAs and releases the stage before;
// ring_drain releases the last one and ring_advance moves the running count
// on. No block position is computed in the consumers' loop.
// CHECK-LABEL: func.func @gemm_ws
// CHECK-NEXT:  tile.ring_init
// CHECK:       %[[BASE:.*]] = tile.ring_base : i32
// CHECK:       tile.producer {
// CHECK:         scf.for
// CHECK:           tile.load
// CHECK:           arith.xori
// CHECK:           tile.ring_acquire
// CHECK:           tile.ring_expect
// CHECK:           tile.ring_copy %arg0
// CHECK:           tile.ring_copy %arg1
// CHECK:       }
// CHECK:       scf.for {{.*}} iter_args
// CHECK-NOT:     tile.load
// CHECK:         tile.ring_wait
// CHECK-NOT:     tile.load
// CHECK:         tile.ring_dot
// CHECK:       tile.ring_drain
// CHECK:       tile.ring_advance
func.func @gemm_ws(%a: !tile.desc<bf16>, %b: !tile.desc<bf16>,
                   %list: !tile.ptr<i32>, %n: i32, %m0: i32)
    attributes {tile.kernel, tile.num_warps = 8 : i32} {
  %c0 = arith.constant 0 : i32
  %c1 = arith.constant 1 : i32
  %c64 = arith.constant 64 : i32
  %zero = arith.constant 0.0 : f32
  %init = tile.splat %zero : f32 -> tensor<128x128xf32>
  %r = scf.for %j = %c0 to %n step %c1 iter_args(%acc = %init) -> (tensor<128x128xf32>) : i32 {
    %p = tile.addptr %list, %j : !tile.ptr<i32>, i32
    %kb = tile.load %p : !tile.ptr<i32> -> i32
    %k = arith.muli %kb, %c64 : i32
    %ta = tile.desc_load %a[%m0, %k] : !tile.desc<bf16> -> tensor<128x64xbf16>
    %tb = tile.desc_load %b[%c0, %k] : !tile.desc<bf16> -> tensor<128x64xbf16>
    %tbt = tile.trans %tb : tensor<128x64xbf16> -> tensor<64x128xbf16>
    %d = tile.dot %ta, %tbt, %acc : tensor<128x64xbf16>, tensor<64x128xbf16>, tensor<128x128xf32> -> tensor<128x128xf32>
    scf.yield %d : tensor<128x128xf32>
  }
  return
}

// -----

// Not a pipelinable loop: the block is also used outside the dot. Both
// desc_loads become masked pointer loads.
// CHECK-LABEL: func.func @other_use
// CHECK-NOT:   tile.ring
// CHECK:       tile.desc_fields
func.func @other_use(%a: !tile.desc<bf16>, %b: !tile.desc<bf16>, %n: i32,
                     %out: !tile.ptr<bf16>)
    attributes {tile.kernel, tile.num_warps = 8 : i32} {
  %c0 = arith.constant 0 : i32
  %c64 = arith.constant 64 : i32
  %zero = arith.constant 0.0 : f32
  %init = tile.splat %zero : f32 -> tensor<128x128xf32>
  %r = scf.for %k = %c0 to %n step %c64 iter_args(%acc = %init) -> (tensor<128x128xf32>) : i32 {
    %ta = tile.desc_load %a[%c0, %k] : !tile.desc<bf16> -> tensor<128x64xbf16>
    %tb = tile.desc_load %b[%k, %c0] : !tile.desc<bf16> -> tensor<64x128xbf16>
    %d = tile.dot %ta, %tb, %acc : tensor<128x64xbf16>, tensor<64x128xbf16>, tensor<128x128xf32> -> tensor<128x128xf32>
    %f = arith.extf %ta : tensor<128x64xbf16> to tensor<128x64xf32>
    %s = tile.reduce sum %f {axis = 0 : i32} : tensor<128x64xf32> -> tensor<64xf32>
    scf.yield %d : tensor<128x128xf32>
  }
  return
}

// -----

// A 2:4 sparse_dot: compressed values [128, 64] and X^T as swizzled
// operands, the [128, 8] i16 metadata as a plain box after them. The
// consumers run the iterations in pairs, two ring_dots whose metadata lives
// in different registers (meta_alternates: each waits only for the one
// before it), then the odd last iteration in a loop of its own; the second
// loop starts where the pairs ended and carries their accumulator.
// CHECK-LABEL: func.func @sparse
// CHECK:       tile.ring_copy %arg2[{{.*}}] -> stage {{.*}} {cols = 8 : i64, layout = #tile.shared<swizzle = 0>, offset = 49152 : i64, rows = 128 : i64}
// CHECK:       %[[PAIRS:[0-9]+]] = arith.divsi %[[N:[0-9]+]], %c2_i32
// CHECK:       %[[LOOP:[0-9]+]] = scf.for %[[J:arg[0-9]+]] = %{{.*}} to %[[PAIRS]] 
// CHECK:         %[[I0:[0-9]+]] = arith.muli %[[J]], %c2_i32
// CHECK:         tile.ring_wait
// CHECK:         %[[D0:[0-9]+]] = tile.ring_dot {{.*}} {a_kmajor = true, a_layout = #tile.shared<swizzle = 128>, a_offset = 0 : i64, b_kmajor = true, b_layout = #tile.shared<swizzle = 128>, b_offset = 16384 : i64, k = 128 : i64, meta_alternates, meta_offset = 49152 : i64, operand_type = bf16}
// CHECK:         arith.addi %[[I0]], %c1_i32
// CHECK:         tile.ring_wait
// CHECK:         %[[D1:[0-9]+]] = tile.ring_dot {{.*}}, %[[D0]] accumulate {{.*}} meta_alternates
// CHECK:         scf.yield %[[D1]]
// CHECK:       %[[TAILLO:[0-9]+]] = arith.muli %[[PAIRS]], %c2_i32
// CHECK:       %[[TAIL:[0-9]+]] = scf.for %{{.*}} = %[[TAILLO]] to %[[N]] step {{.*}} iter_args(%{{.*}} = %[[LOOP]])
// CHECK:         tile.ring_wait
// CHECK:         tile.ring_dot {{.*}} meta_alternates
// CHECK:       tile.ring_drain %[[TAIL]]
func.func @sparse(%v: !tile.desc<bf16>, %x: !tile.desc<bf16>, %m: !tile.desc<i16>,
                  %n: i32)
    attributes {tile.kernel, tile.num_warps = 8 : i32} {
  %c0 = arith.constant 0 : i32
  %c2 = arith.constant 2 : i32
  %c16 = arith.constant 16 : i32
  %c128 = arith.constant 128 : i32
  %zero = arith.constant 0.0 : f32
  %init = tile.splat %zero : f32 -> tensor<128x128xf32>
  %r = scf.for %k = %c0 to %n step %c128 iter_args(%acc = %init) -> (tensor<128x128xf32>) : i32 {
    %kv = arith.divsi %k, %c2 : i32
    %km = arith.divsi %k, %c16 : i32
    %tv = tile.desc_load %v[%c0, %kv] : !tile.desc<bf16> -> tensor<128x64xbf16>
    %tm = tile.desc_load %m[%c0, %km] : !tile.desc<i16> -> tensor<128x8xi16>
    %tx = tile.desc_load %x[%c0, %k] : !tile.desc<bf16> -> tensor<128x128xbf16>
    %txt = tile.trans %tx : tensor<128x128xbf16> -> tensor<128x128xbf16>
    %d = tile.sparse_dot %tv, %tm, %txt, %acc : tensor<128x64xbf16>, tensor<128x8xi16>, tensor<128x128xbf16>, tensor<128x128xf32> -> tensor<128x128xf32>
    scf.yield %d : tensor<128x128xf32>
  }
  return
}

// -----

// The metadata as the blocked layout's 128-byte rows (sparse24.tile's
// meta_block with META8 = 1): a [16, 64] box viewed as the [128, 8] block by
// a reshape, which the pass looks through. The copy is one 2 KB box of 16
// rows; the ring_dot reads the same bytes as the [128, 8] block at the
// default pitch (no meta_pitch).
// CHECK-LABEL: func.func @sparse_meta_rows
// CHECK-NOT:   tile.reshape
// CHECK:       tile.ring_copy %arg2[{{.*}}] -> stage {{.*}} {cols = 64 : i64, layout = #tile.shared<swizzle = 0>, offset = 49152 : i64, rows = 16 : i64}
// CHECK:       tile.ring_dot {{.*}} {a_kmajor = true, a_layout = #tile.shared<swizzle = 128>, a_offset = 0 : i64, b_kmajor = true, b_layout = #tile.shared<swizzle = 128>, b_offset = 16384 : i64, k = 128 : i64, meta_alternates, meta_offset = 49152 : i64, operand_type = bf16}
func.func @sparse_meta_rows(%v: !tile.desc<bf16>, %x: !tile.desc<bf16>,
                            %m: !tile.desc<i16>, %n: i32)
    attributes {tile.kernel, tile.num_warps = 8 : i32} {
  %c0 = arith.constant 0 : i32
  %c2 = arith.constant 2 : i32
  %c128 = arith.constant 128 : i32
  %zero = arith.constant 0.0 : f32
  %init = tile.splat %zero : f32 -> tensor<128x128xf32>
  %r = scf.for %k = %c0 to %n step %c128 iter_args(%acc = %init) -> (tensor<128x128xf32>) : i32 {
    %kv = arith.divsi %k, %c2 : i32
    %kb = arith.divsi %k, %c128 : i32
    %tv = tile.desc_load %v[%c0, %kv] : !tile.desc<bf16> -> tensor<128x64xbf16>
    %tw = tile.desc_load %m[%kb, %c0] : !tile.desc<i16> -> tensor<16x64xi16>
    %tm = tile.reshape %tw : tensor<16x64xi16> -> tensor<128x8xi16>
    %tx = tile.desc_load %x[%c0, %k] : !tile.desc<bf16> -> tensor<128x128xbf16>
    %txt = tile.trans %tx : tensor<128x128xbf16> -> tensor<128x128xbf16>
    %d = tile.sparse_dot %tv, %tm, %txt, %acc : tensor<128x64xbf16>, tensor<128x8xi16>, tensor<128x128xbf16>, tensor<128x128xf32> -> tensor<128x128xf32>
    scf.yield %d : tensor<128x128xf32>
  }
  return
}

// -----

// The same at a K step of 64: the compressed values are one 32-column panel
// (64-byte swizzled rows). The [128, 4] metadata has 8-byte rows, under
// TMA's 16-byte minimum, and a box must start on a 16-byte boundary: so the
// copy takes the aligned [128, 8] box of two steps (column (k / 16) & -8),
// and a ring_dot reads its step's half, meta_col = (i % 2) * 4, at a pitch
// of 8 i16. Stages: 8 + 16 + 2 KB.
// CHECK-LABEL: func.func @sparse_k64
// CHECK-SAME:  tile.ring = #tile.ring<stages = 4, stage_bytes = 26624>
// CHECK:       tile.ring_copy %arg0[{{.*}}] -> stage {{.*}} {cols = 32 : i64, layout = #tile.shared<swizzle = 64>, offset = 0 : i64, rows = 128 : i64}
// CHECK:       %[[COL:[0-9]+]] = arith.andi %{{[0-9]+}}, %c-8_i32
// CHECK:       tile.ring_copy %arg2[%{{.*}}, %[[COL]]] -> stage {{.*}} {cols = 8 : i64, layout = #tile.shared<swizzle = 0>, offset = 24576 : i64, rows = 128 : i64}
// CHECK:       %[[MC:[0-9]+]] = arith.muli %{{[0-9]+}}, %c4_i32
// CHECK:       tile.ring_dot {{.*}} meta_col %[[MC]] {a_kmajor = true, a_layout = #tile.shared<swizzle = 64>, a_offset = 0 : i64, b_kmajor = true, b_layout = #tile.shared<swizzle = 128>, b_offset = 8192 : i64, k = 64 : i64, meta_alternates, meta_offset = 24576 : i64, meta_pitch = 8 : i64, operand_type = bf16}
func.func @sparse_k64(%v: !tile.desc<bf16>, %x: !tile.desc<bf16>, %m: !tile.desc<i16>,
                      %n: i32)
    attributes {tile.kernel, tile.num_warps = 8 : i32} {
  %c0 = arith.constant 0 : i32
  %c2 = arith.constant 2 : i32
  %c16 = arith.constant 16 : i32
  %c64 = arith.constant 64 : i32
  %zero = arith.constant 0.0 : f32
  %init = tile.splat %zero : f32 -> tensor<128x128xf32>
  %r = scf.for %k = %c0 to %n step %c64 iter_args(%acc = %init) -> (tensor<128x128xf32>) : i32 {
    %kv = arith.divsi %k, %c2 : i32
    %km = arith.divsi %k, %c16 : i32
    %tv = tile.desc_load %v[%c0, %kv] : !tile.desc<bf16> -> tensor<128x32xbf16>
    %tm = tile.desc_load %m[%c0, %km] : !tile.desc<i16> -> tensor<128x4xi16>
    %tx = tile.desc_load %x[%c0, %k] : !tile.desc<bf16> -> tensor<128x64xbf16>
    %txt = tile.trans %tx : tensor<128x64xbf16> -> tensor<64x128xbf16>
    %d = tile.sparse_dot %tv, %tm, %txt, %acc : tensor<128x32xbf16>, tensor<128x4xi16>, tensor<64x128xbf16>, tensor<128x128xf32> -> tensor<128x128xf32>
    scf.yield %d : tensor<128x128xf32>
  }
  return
}

// -----

// A K = 64 loop whose metadata column is not k / 16 from a multiple of 128
// (here it starts at 64): a step's half of the aligned box would not follow
// from its parity, so the loop is not pipelined and the blocks are loaded
// plainly.
// CHECK-LABEL: func.func @sparse_k64_offset
// CHECK-NOT:   tile.ring_copy
// CHECK:       tile.sparse_dot
func.func @sparse_k64_offset(%v: !tile.desc<bf16>, %x: !tile.desc<bf16>, %m: !tile.desc<i16>,
                             %n: i32)
    attributes {tile.kernel, tile.num_warps = 8 : i32} {
  %c0 = arith.constant 0 : i32
  %c2 = arith.constant 2 : i32
  %c16 = arith.constant 16 : i32
  %c64 = arith.constant 64 : i32
  %zero = arith.constant 0.0 : f32
  %init = tile.splat %zero : f32 -> tensor<128x128xf32>
  %r = scf.for %k = %c64 to %n step %c64 iter_args(%acc = %init) -> (tensor<128x128xf32>) : i32 {
    %kv = arith.divsi %k, %c2 : i32
    %km = arith.divsi %k, %c16 : i32
    %tv = tile.desc_load %v[%c0, %kv] : !tile.desc<bf16> -> tensor<128x32xbf16>
    %tm = tile.desc_load %m[%c0, %km] : !tile.desc<i16> -> tensor<128x4xi16>
    %tx = tile.desc_load %x[%c0, %k] : !tile.desc<bf16> -> tensor<128x64xbf16>
    %txt = tile.trans %tx : tensor<128x64xbf16> -> tensor<64x128xbf16>
    %d = tile.sparse_dot %tv, %tm, %txt, %acc : tensor<128x32xbf16>, tensor<128x4xi16>, tensor<64x128xbf16>, tensor<128x128xf32> -> tensor<128x128xf32>
    scf.yield %d : tensor<128x128xf32>
  }
  return
}

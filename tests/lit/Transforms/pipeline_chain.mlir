// tile-pipeline-tma, the chained-dot form (PipelineChain.cpp): a loop whose
// dots read B through pointer loads and whose body computes with their
// results, as attention does. The loop stays; its K and V blocks go into
// one ring stage an iteration (every thread's cp.async, filled ahead), each
// dot becomes a synchronous ring_dot on that stage, the loop-invariant A
// moves into wgmma's register-A layout once before the ring fills
// (tile.wgmma_operand), P stays where the softmax computed it, and the
// kernel's exchanges reuse the ring's bytes after the loop (nothing in it
// moves data through shared memory). The last dot (P V), whose
// result only the loop carries, is asynchronous: the next iteration's first
// dot waits for it too and releases its stage, a drain in the loop hands the
// body the completed accumulator, and the loop sits under its own entry test
// with the last P V's wait inside.
// RUN: tile-opt %s --split-input-file --tile-pipeline-tma=tma=true | FileCheck %s

// CHECK-LABEL: func.func @attn
// CHECK-SAME:  tile.ring = #tile.ring<stages = 4, stage_bytes = 16384, thread_copies = 2>
// CHECK-NEXT:    tile.ring_init
// CHECK:         %[[BASE:.*]] = tile.ring_base
// CHECK:         %[[QA:.*]] = tile.wgmma_operand %{{.*}} : tensor<64x64xf16>
// The prologue fills iterations 0..3, each once its stage is free.
// CHECK:         scf.if
// CHECK:           tile.ring_acquire
// CHECK:           tile.ring_copy_ptrs {{.*}} {cols = 64 : i64, layout = #tile.shared<swizzle = 128>, offset = 0 : i64, rows = 64 : i64}
// CHECK:           tile.ring_copy_ptrs {{.*}} {cols = 64 : i64, layout = #tile.shared<swizzle = 128>, offset = 8192 : i64, rows = 64 : i64}
// CHECK:         scf.if {{.*}} -> (
// CHECK:         scf.for {{.*}} iter_args(%[[ACC:[^ ]*]] = 
// CHECK:           tile.ring_wait
// The stage the previous iteration's P V read (none in the first).
// CHECK:           %[[PREV:.*]] = arith.select
// S = Q K^T: zero accumulator (scale-d = 0), Q from registers, K^T as a
// K-major B; synchronous, so the previous P V is done too: it releases that
// stage, and the carried accumulator is complete.
// CHECK:           %[[S:.*]] = tile.ring_dot %[[STAGE:[^,]*]], %[[PREV]], %{{.*}} accumulate %false a %[[QA]] : tensor<64x64xf16> {{{.*}}b_kmajor = true, b_layout = #tile.shared<swizzle = 128>, b_offset = 0 : i64, k = 64 : i64, operand_type = f16, sync}
// CHECK:           %[[DONE:.*]] = tile.ring_drain %[[ACC]], %c-1_i32{{.*}} {in_loop}
// With four stages the refill, at once after that dot so that its copies
// run under the rest of the body, takes the stage released an iteration
// earlier (iteration i - 2's) with iteration i + 2: waiting for the stage
// just released would wait for the other warpgroup's P V too (lag 2,
// asyncFillLag). Not the stage of iteration i, which the P V in flight
// still reads.
// CHECK:           %[[NEXT:.*]] = arith.addi %[[I:.*]], %c2_i32{{.*}} : i32
// CHECK:           %[[LIVE:.*]] = arith.cmpi slt, %[[NEXT]], %{{.*}} : i32
// CHECK:           %[[LATE:.*]] = arith.cmpi sge, %[[I]], %c2_i32{{.*}} : i32
// CHECK:           %[[REFILL:.*]] = arith.andi %[[LATE]], %[[LIVE]] : i1
// CHECK:           scf.if %[[REFILL]]
// CHECK:             tile.ring_acquire
// CHECK:             tile.ring_copy_ptrs
// CHECK:             tile.ring_copy_ptrs
// CHECK:           tile.reduce max %[[S]]
// CHECK:           %[[P:.*]] = arith.truncf %[[S]]
// The last dot (P V, V an MN-major B), in flight: it releases nothing.
// CHECK:           tile.ring_dot %[[STAGE]], %c-1_i32{{.*}}, %[[DONE]] a %[[P]] : tensor<64x64xf16> {{{.*}}b_kmajor = false, b_layout = #tile.shared<swizzle = 128>, b_offset = 8192 : i64, k = 64 : i64, operand_type = f16} :
// CHECK-NEXT:      arith.addf
// CHECK-NEXT:      scf.yield
// After the loop, the last P V: waited for, its stage released.
// CHECK:         tile.ring_drain
// CHECK:       } else {
// CHECK:         tile.ring_advance
// CHECK-NOT:     tile.dot
func.func @attn(%q: !tile.ptr<f16> {tile.divisibility = 16 : i32},
                %k: !tile.ptr<f16> {tile.divisibility = 16 : i32},
                %v: !tile.ptr<f16> {tile.divisibility = 16 : i32},
                %o: !tile.ptr<f32> {tile.divisibility = 16 : i32}, %n: i32)
    attributes {tile.kernel, tile.num_warps = 4 : i32} {
  %c0 = arith.constant 0 : i32
  %c64 = arith.constant 64 : i32
  %zero = arith.constant 0.0 : f32
  %r = tile.arange 0, 64 : tensor<64xi32>
  %rows = tile.expand_dims %r {axis = 1 : i32} : tensor<64xi32> -> tensor<64x1xi32>
  %ld = tile.splat %c64 : i32 -> tensor<64x1xi32>
  %rowoff = arith.muli %rows, %ld : tensor<64x1xi32>
  %cols = tile.expand_dims %r {axis = 0 : i32} : tensor<64xi32> -> tensor<1x64xi32>
  %rb = tile.broadcast %rowoff : tensor<64x1xi32> -> tensor<64x64xi32>
  %cb = tile.broadcast %cols : tensor<1x64xi32> -> tensor<64x64xi32>
  %offs = arith.addi %rb, %cb : tensor<64x64xi32>
  %qb = tile.splat %q : !tile.ptr<f16> -> tensor<64x64x!tile.ptr<f16>>
  %qp = tile.addptr %qb, %offs : tensor<64x64x!tile.ptr<f16>>, tensor<64x64xi32>
  %qt = tile.load %qp : tensor<64x64x!tile.ptr<f16>> -> tensor<64x64xf16>
  %init = tile.splat %zero : f32 -> tensor<64x64xf32>
  %linit = tile.splat %zero : f32 -> tensor<64xf32>
  %res:2 = scf.for %j = %c0 to %n step %c64 iter_args(%acc = %init, %l = %linit) -> (tensor<64x64xf32>, tensor<64xf32>) : i32 {
    %jr = arith.muli %j, %c64 : i32
    %js = tile.splat %jr : i32 -> tensor<64x64xi32>
    %kvoffs = arith.addi %offs, %js : tensor<64x64xi32>
    %kb = tile.splat %k : !tile.ptr<f16> -> tensor<64x64x!tile.ptr<f16>>
    %kp = tile.addptr %kb, %kvoffs : tensor<64x64x!tile.ptr<f16>>, tensor<64x64xi32>
    %kt = tile.load %kp : tensor<64x64x!tile.ptr<f16>> -> tensor<64x64xf16>
    %vb = tile.splat %v : !tile.ptr<f16> -> tensor<64x64x!tile.ptr<f16>>
    %vp = tile.addptr %vb, %kvoffs : tensor<64x64x!tile.ptr<f16>>, tensor<64x64xi32>
    %vt = tile.load %vp : tensor<64x64x!tile.ptr<f16>> -> tensor<64x64xf16>
    %ktt = tile.trans %kt : tensor<64x64xf16> -> tensor<64x64xf16>
    %s = tile.dot %qt, %ktt, %init : tensor<64x64xf16>, tensor<64x64xf16>, tensor<64x64xf32> -> tensor<64x64xf32>
    %m = tile.reduce max %s {axis = 1 : i32} : tensor<64x64xf32> -> tensor<64xf32>
    %p = arith.truncf %s : tensor<64x64xf32> to tensor<64x64xf16>
    %acc2 = tile.dot %p, %vt, %acc : tensor<64x64xf16>, tensor<64x64xf16>, tensor<64x64xf32> -> tensor<64x64xf32>
    %l2 = arith.addf %l, %m : tensor<64xf32>
    scf.yield %acc2, %l2 : tensor<64x64xf32>, tensor<64xf32>
  }
  %ob = tile.splat %o : !tile.ptr<f32> -> tensor<64x64x!tile.ptr<f32>>
  %op = tile.addptr %ob, %offs : tensor<64x64x!tile.ptr<f32>>, tensor<64x64xi32>
  tile.store %op, %res#0 : tensor<64x64x!tile.ptr<f32>>, tensor<64x64xf32>
  return
}

// -----

// The K block's pointers advance with a carried pointer tile (what
// tile-induction-pointers rewrites first): the ring cannot compute a later
// iteration's, so the loop keeps its dots.
// CHECK-LABEL: func.func @carried_pointers
// CHECK-NOT:   tile.ring
// CHECK:       tile.dot
// CHECK:       tile.dot
func.func @carried_pointers(%q: !tile.ptr<f16> {tile.divisibility = 16 : i32},
                            %k: !tile.ptr<f16> {tile.divisibility = 16 : i32},
                            %n: i32)
    attributes {tile.kernel, tile.num_warps = 4 : i32} {
  %c0 = arith.constant 0 : i32
  %c1 = arith.constant 1 : i32
  %c64 = arith.constant 64 : i32
  %zero = arith.constant 0.0 : f32
  %r = tile.arange 0, 64 : tensor<64xi32>
  %rows = tile.expand_dims %r {axis = 1 : i32} : tensor<64xi32> -> tensor<64x1xi32>
  %ld = tile.splat %c64 : i32 -> tensor<64x1xi32>
  %rowoff = arith.muli %rows, %ld : tensor<64x1xi32>
  %cols = tile.expand_dims %r {axis = 0 : i32} : tensor<64xi32> -> tensor<1x64xi32>
  %rb = tile.broadcast %rowoff : tensor<64x1xi32> -> tensor<64x64xi32>
  %cb = tile.broadcast %cols : tensor<1x64xi32> -> tensor<64x64xi32>
  %offs = arith.addi %rb, %cb : tensor<64x64xi32>
  %qb = tile.splat %q : !tile.ptr<f16> -> tensor<64x64x!tile.ptr<f16>>
  %qp = tile.addptr %qb, %offs : tensor<64x64x!tile.ptr<f16>>, tensor<64x64xi32>
  %qt = tile.load %qp : tensor<64x64x!tile.ptr<f16>> -> tensor<64x64xf16>
  %kb = tile.splat %k : !tile.ptr<f16> -> tensor<64x64x!tile.ptr<f16>>
  %kp0 = tile.addptr %kb, %offs : tensor<64x64x!tile.ptr<f16>>, tensor<64x64xi32>
  %init = tile.splat %zero : f32 -> tensor<64x64xf32>
  %step = tile.splat %c64 : i32 -> tensor<64x64xi32>
  %res:2 = scf.for %j = %c0 to %n step %c1 iter_args(%acc = %init, %kp = %kp0) -> (tensor<64x64xf32>, tensor<64x64x!tile.ptr<f16>>) : i32 {
    %kt = tile.load %kp : tensor<64x64x!tile.ptr<f16>> -> tensor<64x64xf16>
    %vt = tile.load %kp : tensor<64x64x!tile.ptr<f16>> -> tensor<64x64xf16>
    %s = tile.dot %qt, %kt, %init : tensor<64x64xf16>, tensor<64x64xf16>, tensor<64x64xf32> -> tensor<64x64xf32>
    %p = arith.truncf %s : tensor<64x64xf32> to tensor<64x64xf16>
    %acc2 = tile.dot %p, %vt, %acc : tensor<64x64xf16>, tensor<64x64xf16>, tensor<64x64xf32> -> tensor<64x64xf32>
    %next = tile.addptr %kp, %step : tensor<64x64x!tile.ptr<f16>>, tensor<64x64xi32>
    scf.yield %acc2, %next : tensor<64x64xf32>, tensor<64x64x!tile.ptr<f16>>
  }
  return
}

// -----

// Two stages (`range(..., num_stages=2)`). A synchronous chain refills the stage its
// iteration released at once (fillLag). Here P V is asynchronous, so the
// stage of iteration i is still being read at its end: the refill is
// iteration i + 1's, into the stage of iteration i - 1, which the first dot
// released (refilling iteration i + 2 at the end of iteration i would wait
// for a release that only the next iteration makes: a deadlock).
// CHECK-LABEL: func.func @attn_two_stages
// CHECK-SAME:  tile.ring = #tile.ring<stages = 2, stage_bytes = 16384, thread_copies = 2>
// CHECK:         scf.for
// CHECK:           tile.ring_dot {{.*}}sync}
// CHECK:           tile.ring_drain {{.*}} {in_loop}
// CHECK:           %[[NEXT2:.*]] = arith.addi %[[I2:.*]], %c1_i32{{.*}} : i32
// CHECK:           %[[LIVE2:.*]] = arith.cmpi slt, %[[NEXT2]], %{{.*}} : i32
// CHECK:           %[[NOW:.*]] = arith.cmpi sge, %[[I2]], %c1_i32{{.*}} : i32
// CHECK:           %[[REFILL2:.*]] = arith.andi %[[NOW]], %[[LIVE2]] : i1
// CHECK:           scf.if %[[REFILL2]]
// CHECK:             tile.ring_acquire
// CHECK:           tile.ring_dot {{.*}}operand_type = f16} :
func.func @attn_two_stages(%q: !tile.ptr<f16> {tile.divisibility = 16 : i32},
                %k: !tile.ptr<f16> {tile.divisibility = 16 : i32},
                %v: !tile.ptr<f16> {tile.divisibility = 16 : i32},
                %o: !tile.ptr<f32> {tile.divisibility = 16 : i32}, %n: i32)
    attributes {tile.kernel, tile.num_warps = 4 : i32} {
  %c0 = arith.constant 0 : i32
  %c64 = arith.constant 64 : i32
  %zero = arith.constant 0.0 : f32
  %r = tile.arange 0, 64 : tensor<64xi32>
  %rows = tile.expand_dims %r {axis = 1 : i32} : tensor<64xi32> -> tensor<64x1xi32>
  %ld = tile.splat %c64 : i32 -> tensor<64x1xi32>
  %rowoff = arith.muli %rows, %ld : tensor<64x1xi32>
  %cols = tile.expand_dims %r {axis = 0 : i32} : tensor<64xi32> -> tensor<1x64xi32>
  %rb = tile.broadcast %rowoff : tensor<64x1xi32> -> tensor<64x64xi32>
  %cb = tile.broadcast %cols : tensor<1x64xi32> -> tensor<64x64xi32>
  %offs = arith.addi %rb, %cb : tensor<64x64xi32>
  %qb = tile.splat %q : !tile.ptr<f16> -> tensor<64x64x!tile.ptr<f16>>
  %qp = tile.addptr %qb, %offs : tensor<64x64x!tile.ptr<f16>>, tensor<64x64xi32>
  %qt = tile.load %qp : tensor<64x64x!tile.ptr<f16>> -> tensor<64x64xf16>
  %init = tile.splat %zero : f32 -> tensor<64x64xf32>
  %linit = tile.splat %zero : f32 -> tensor<64xf32>
  %res:2 = scf.for %j = %c0 to %n step %c64 iter_args(%acc = %init, %l = %linit) -> (tensor<64x64xf32>, tensor<64xf32>) : i32 {
    %jr = arith.muli %j, %c64 : i32
    %js = tile.splat %jr : i32 -> tensor<64x64xi32>
    %kvoffs = arith.addi %offs, %js : tensor<64x64xi32>
    %kb = tile.splat %k : !tile.ptr<f16> -> tensor<64x64x!tile.ptr<f16>>
    %kp = tile.addptr %kb, %kvoffs : tensor<64x64x!tile.ptr<f16>>, tensor<64x64xi32>
    %kt = tile.load %kp : tensor<64x64x!tile.ptr<f16>> -> tensor<64x64xf16>
    %vb = tile.splat %v : !tile.ptr<f16> -> tensor<64x64x!tile.ptr<f16>>
    %vp = tile.addptr %vb, %kvoffs : tensor<64x64x!tile.ptr<f16>>, tensor<64x64xi32>
    %vt = tile.load %vp : tensor<64x64x!tile.ptr<f16>> -> tensor<64x64xf16>
    %ktt = tile.trans %kt : tensor<64x64xf16> -> tensor<64x64xf16>
    %s = tile.dot %qt, %ktt, %init : tensor<64x64xf16>, tensor<64x64xf16>, tensor<64x64xf32> -> tensor<64x64xf32>
    %m = tile.reduce max %s {axis = 1 : i32} : tensor<64x64xf32> -> tensor<64xf32>
    %p = arith.truncf %s : tensor<64x64xf32> to tensor<64x64xf16>
    %acc2 = tile.dot %p, %vt, %acc : tensor<64x64xf16>, tensor<64x64xf16>, tensor<64x64xf32> -> tensor<64x64xf32>
    %l2 = arith.addf %l, %m : tensor<64xf32>
    scf.yield %acc2, %l2 : tensor<64x64xf32>, tensor<64xf32>
  } {tile.num_stages = 2 : i32}
  %ob = tile.splat %o : !tile.ptr<f32> -> tensor<64x64x!tile.ptr<f32>>
  %op = tile.addptr %ob, %offs : tensor<64x64x!tile.ptr<f32>>, tensor<64x64xi32>
  tile.store %op, %res#0 : tensor<64x64x!tile.ptr<f32>>, tensor<64x64xf32>
  return
}

// -----

// The K block's pointers advance with a carried pointer tile (what
// tile-induction-pointers rewrites first): the ring cannot compute a later
// iteration's, so the loop keeps its dots.
// CHECK-LABEL: func.func @carried_pointers
// CHECK-NOT:   tile.ring
// CHECK:       tile.dot
// CHECK:       tile.dot
func.func @carried_pointers(%q: !tile.ptr<f16> {tile.divisibility = 16 : i32},
                            %k: !tile.ptr<f16> {tile.divisibility = 16 : i32},
                            %n: i32)
    attributes {tile.kernel, tile.num_warps = 4 : i32} {
  %c0 = arith.constant 0 : i32
  %c1 = arith.constant 1 : i32
  %c64 = arith.constant 64 : i32
  %zero = arith.constant 0.0 : f32
  %r = tile.arange 0, 64 : tensor<64xi32>
  %rows = tile.expand_dims %r {axis = 1 : i32} : tensor<64xi32> -> tensor<64x1xi32>
  %ld = tile.splat %c64 : i32 -> tensor<64x1xi32>
  %rowoff = arith.muli %rows, %ld : tensor<64x1xi32>
  %cols = tile.expand_dims %r {axis = 0 : i32} : tensor<64xi32> -> tensor<1x64xi32>
  %rb = tile.broadcast %rowoff : tensor<64x1xi32> -> tensor<64x64xi32>
  %cb = tile.broadcast %cols : tensor<1x64xi32> -> tensor<64x64xi32>
  %offs = arith.addi %rb, %cb : tensor<64x64xi32>
  %qb = tile.splat %q : !tile.ptr<f16> -> tensor<64x64x!tile.ptr<f16>>
  %qp = tile.addptr %qb, %offs : tensor<64x64x!tile.ptr<f16>>, tensor<64x64xi32>
  %qt = tile.load %qp : tensor<64x64x!tile.ptr<f16>> -> tensor<64x64xf16>
  %kb = tile.splat %k : !tile.ptr<f16> -> tensor<64x64x!tile.ptr<f16>>
  %kp0 = tile.addptr %kb, %offs : tensor<64x64x!tile.ptr<f16>>, tensor<64x64xi32>
  %init = tile.splat %zero : f32 -> tensor<64x64xf32>
  %step = tile.splat %c64 : i32 -> tensor<64x64xi32>
  %res:2 = scf.for %j = %c0 to %n step %c1 iter_args(%acc = %init, %kp = %kp0) -> (tensor<64x64xf32>, tensor<64x64x!tile.ptr<f16>>) : i32 {
    %kt = tile.load %kp : tensor<64x64x!tile.ptr<f16>> -> tensor<64x64xf16>
    %vt = tile.load %kp : tensor<64x64x!tile.ptr<f16>> -> tensor<64x64xf16>
    %s = tile.dot %qt, %kt, %init : tensor<64x64xf16>, tensor<64x64xf16>, tensor<64x64xf32> -> tensor<64x64xf32>
    %p = arith.truncf %s : tensor<64x64xf32> to tensor<64x64xf16>
    %acc2 = tile.dot %p, %vt, %acc : tensor<64x64xf16>, tensor<64x64xf16>, tensor<64x64xf32> -> tensor<64x64xf32>
    %next = tile.addptr %kp, %step : tensor<64x64x!tile.ptr<f16>>, tensor<64x64xi32>
    scf.yield %acc2, %next : tensor<64x64xf32>, tensor<64x64x!tile.ptr<f16>>
  }
  return
}

// -----

// A loop that may move data through shared memory while the ring holds
// blocks (here a column max of S: across warps) keeps the kernel's
// exchanges apart from the ring (#tile.ring's `apart`), the stage count
// leaving room for them (mayExchangeInLoops); the loops above, whose
// reductions stay in their rows' threads, share the ring's bytes.
// CHECK-LABEL: func.func @column_sum_in_loop
// CHECK-SAME:  tile.ring = #tile.ring<stages = {{[0-9]+}}, stage_bytes = 16384, thread_copies = 2, apart = true>
func.func @column_sum_in_loop(%q: !tile.ptr<f16> {tile.divisibility = 16 : i32},
                %k: !tile.ptr<f16> {tile.divisibility = 16 : i32},
                %v: !tile.ptr<f16> {tile.divisibility = 16 : i32},
                %o: !tile.ptr<f32> {tile.divisibility = 16 : i32}, %n: i32)
    attributes {tile.kernel, tile.num_warps = 4 : i32} {
  %c0 = arith.constant 0 : i32
  %c64 = arith.constant 64 : i32
  %zero = arith.constant 0.0 : f32
  %r = tile.arange 0, 64 : tensor<64xi32>
  %rows = tile.expand_dims %r {axis = 1 : i32} : tensor<64xi32> -> tensor<64x1xi32>
  %ld = tile.splat %c64 : i32 -> tensor<64x1xi32>
  %rowoff = arith.muli %rows, %ld : tensor<64x1xi32>
  %cols = tile.expand_dims %r {axis = 0 : i32} : tensor<64xi32> -> tensor<1x64xi32>
  %rb = tile.broadcast %rowoff : tensor<64x1xi32> -> tensor<64x64xi32>
  %cb = tile.broadcast %cols : tensor<1x64xi32> -> tensor<64x64xi32>
  %offs = arith.addi %rb, %cb : tensor<64x64xi32>
  %qb = tile.splat %q : !tile.ptr<f16> -> tensor<64x64x!tile.ptr<f16>>
  %qp = tile.addptr %qb, %offs : tensor<64x64x!tile.ptr<f16>>, tensor<64x64xi32>
  %qt = tile.load %qp : tensor<64x64x!tile.ptr<f16>> -> tensor<64x64xf16>
  %init = tile.splat %zero : f32 -> tensor<64x64xf32>
  %linit = tile.splat %zero : f32 -> tensor<64xf32>
  %res:2 = scf.for %j = %c0 to %n step %c64 iter_args(%acc = %init, %l = %linit) -> (tensor<64x64xf32>, tensor<64xf32>) : i32 {
    %jr = arith.muli %j, %c64 : i32
    %js = tile.splat %jr : i32 -> tensor<64x64xi32>
    %kvoffs = arith.addi %offs, %js : tensor<64x64xi32>
    %kb = tile.splat %k : !tile.ptr<f16> -> tensor<64x64x!tile.ptr<f16>>
    %kp = tile.addptr %kb, %kvoffs : tensor<64x64x!tile.ptr<f16>>, tensor<64x64xi32>
    %kt = tile.load %kp : tensor<64x64x!tile.ptr<f16>> -> tensor<64x64xf16>
    %vb = tile.splat %v : !tile.ptr<f16> -> tensor<64x64x!tile.ptr<f16>>
    %vp = tile.addptr %vb, %kvoffs : tensor<64x64x!tile.ptr<f16>>, tensor<64x64xi32>
    %vt = tile.load %vp : tensor<64x64x!tile.ptr<f16>> -> tensor<64x64xf16>
    %ktt = tile.trans %kt : tensor<64x64xf16> -> tensor<64x64xf16>
    %s = tile.dot %qt, %ktt, %init : tensor<64x64xf16>, tensor<64x64xf16>, tensor<64x64xf32> -> tensor<64x64xf32>
    %m = tile.reduce max %s {axis = 0 : i32} : tensor<64x64xf32> -> tensor<64xf32>
    %p = arith.truncf %s : tensor<64x64xf32> to tensor<64x64xf16>
    %acc2 = tile.dot %p, %vt, %acc : tensor<64x64xf16>, tensor<64x64xf16>, tensor<64x64xf32> -> tensor<64x64xf32>
    %l2 = arith.addf %l, %m : tensor<64xf32>
    scf.yield %acc2, %l2 : tensor<64x64xf32>, tensor<64xf32>
  }
  %ob = tile.splat %o : !tile.ptr<f32> -> tensor<64x64x!tile.ptr<f32>>
  %op = tile.addptr %ob, %offs : tensor<64x64x!tile.ptr<f32>>, tensor<64x64xi32>
  tile.store %op, %res#0 : tensor<64x64x!tile.ptr<f32>>, tensor<64x64xf32>
  return
}

// -----

// An `apart` ring's stages leave room for the kernel's exchanges as
// SharedMemory.h's exchangeBound counts them, the ring's own dots and loads
// left out: the largest tile moved is the [64, 256] f32 accumulator, 64 rows
// of 1024 bytes padded by 16 = 66560 bytes, so 4 stages of 40960 fit in
// the 231360 a block's ring may take (the estimate before it, the largest
// tile plus an eighth and 1 KB = 74752, left 3).
// CHECK-LABEL: func.func @apart_room_by_exchange_bound
// CHECK-SAME:  tile.ring = #tile.ring<stages = 4, stage_bytes = 40960, thread_copies = {{[0-9]+}}, apart = true>
func.func @apart_room_by_exchange_bound(%q: !tile.ptr<f16> {tile.divisibility = 16 : i32},
                %k: !tile.ptr<f16> {tile.divisibility = 16 : i32},
                %v: !tile.ptr<f16> {tile.divisibility = 16 : i32},
                %o: !tile.ptr<f32> {tile.divisibility = 16 : i32}, %n: i32)
    attributes {tile.kernel, tile.num_warps = 4 : i32} {
  %c0 = arith.constant 0 : i32
  %c64 = arith.constant 64 : i32
  %c256 = arith.constant 256 : i32
  %zero = arith.constant 0.0 : f32
  %r = tile.arange 0, 64 : tensor<64xi32>
  %rw = tile.arange 0, 256 : tensor<256xi32>
  %rows = tile.expand_dims %r {axis = 1 : i32} : tensor<64xi32> -> tensor<64x1xi32>
  %ld = tile.splat %c64 : i32 -> tensor<64x1xi32>
  %rowoff = arith.muli %rows, %ld : tensor<64x1xi32>
  %cols = tile.expand_dims %r {axis = 0 : i32} : tensor<64xi32> -> tensor<1x64xi32>
  %rb = tile.broadcast %rowoff : tensor<64x1xi32> -> tensor<64x64xi32>
  %cb = tile.broadcast %cols : tensor<1x64xi32> -> tensor<64x64xi32>
  %offs = arith.addi %rb, %cb : tensor<64x64xi32>
  %ldw = tile.splat %c256 : i32 -> tensor<64x1xi32>
  %rowoffw = arith.muli %rows, %ldw : tensor<64x1xi32>
  %colsw = tile.expand_dims %rw {axis = 0 : i32} : tensor<256xi32> -> tensor<1x256xi32>
  %rbw = tile.broadcast %rowoffw : tensor<64x1xi32> -> tensor<64x256xi32>
  %cbw = tile.broadcast %colsw : tensor<1x256xi32> -> tensor<64x256xi32>
  %offsw = arith.addi %rbw, %cbw : tensor<64x256xi32>
  %qb = tile.splat %q : !tile.ptr<f16> -> tensor<64x64x!tile.ptr<f16>>
  %qp = tile.addptr %qb, %offs : tensor<64x64x!tile.ptr<f16>>, tensor<64x64xi32>
  %qt = tile.load %qp : tensor<64x64x!tile.ptr<f16>> -> tensor<64x64xf16>
  %init = tile.splat %zero : f32 -> tensor<64x64xf32>
  %ainit = tile.splat %zero : f32 -> tensor<64x256xf32>
  %linit = tile.splat %zero : f32 -> tensor<64xf32>
  %res:2 = scf.for %j = %c0 to %n step %c64 iter_args(%acc = %ainit, %l = %linit) -> (tensor<64x256xf32>, tensor<64xf32>) : i32 {
    %jk = arith.muli %j, %c64 : i32
    %jks = tile.splat %jk : i32 -> tensor<64x64xi32>
    %koffs = arith.addi %offs, %jks : tensor<64x64xi32>
    %kb = tile.splat %k : !tile.ptr<f16> -> tensor<64x64x!tile.ptr<f16>>
    %kp = tile.addptr %kb, %koffs : tensor<64x64x!tile.ptr<f16>>, tensor<64x64xi32>
    %kt = tile.load %kp : tensor<64x64x!tile.ptr<f16>> -> tensor<64x64xf16>
    %jv = arith.muli %j, %c256 : i32
    %jvs = tile.splat %jv : i32 -> tensor<64x256xi32>
    %voffs = arith.addi %offsw, %jvs : tensor<64x256xi32>
    %vb = tile.splat %v : !tile.ptr<f16> -> tensor<64x256x!tile.ptr<f16>>
    %vp = tile.addptr %vb, %voffs : tensor<64x256x!tile.ptr<f16>>, tensor<64x256xi32>
    %vt = tile.load %vp : tensor<64x256x!tile.ptr<f16>> -> tensor<64x256xf16>
    %ktt = tile.trans %kt : tensor<64x64xf16> -> tensor<64x64xf16>
    %s = tile.dot %qt, %ktt, %init : tensor<64x64xf16>, tensor<64x64xf16>, tensor<64x64xf32> -> tensor<64x64xf32>
    %m = tile.reduce max %s {axis = 0 : i32} : tensor<64x64xf32> -> tensor<64xf32>
    %p = arith.truncf %s : tensor<64x64xf32> to tensor<64x64xf16>
    %acc2 = tile.dot %p, %vt, %acc : tensor<64x64xf16>, tensor<64x256xf16>, tensor<64x256xf32> -> tensor<64x256xf32>
    %l2 = arith.addf %l, %m : tensor<64xf32>
    scf.yield %acc2, %l2 : tensor<64x256xf32>, tensor<64xf32>
  }
  %ob = tile.splat %o : !tile.ptr<f32> -> tensor<64x256x!tile.ptr<f32>>
  %op = tile.addptr %ob, %offsw : tensor<64x256x!tile.ptr<f32>>, tensor<64x256xi32>
  tile.store %op, %res#0 : tensor<64x256x!tile.ptr<f32>>, tensor<64x256xf32>
  return
}

// Every tile op and type parses, verifies and prints back in a form that
// parses again to the same thing.
// RUN: tile-opt %s | tile-opt | FileCheck %s

// CHECK-LABEL: func.func @position
func.func @position() -> (i32, i32, i32, i32) {
  // CHECK: tile.program_id 0 : i32
  // CHECK: tile.program_id 2 : i32
  // CHECK: tile.num_programs 0 : i32
  // CHECK: tile.num_programs 1 : i32
  %0 = tile.program_id 0 : i32
  %1 = tile.program_id 2 : i32
  %2 = tile.num_programs 0 : i32
  %3 = tile.num_programs 1 : i32
  return %0, %1, %2, %3 : i32, i32, i32, i32
}

// CHECK-LABEL: func.func @shapes
func.func @shapes(%x: f32) -> (tensor<64x128xi32>, tensor<64x64xf32>, tensor<1x64xi32>) {
  // CHECK: tile.arange 0, 64 : tensor<64xi32>
  // CHECK: tile.arange 16, 32 : tensor<16xi32>
  %r = tile.arange 0, 64 : tensor<64xi32>
  %q = tile.arange 16, 32 : tensor<16xi32>
  // CHECK: tile.splat %{{.*}} : f32 -> tensor<64x64xf32>
  %s = tile.splat %x : f32 -> tensor<64x64xf32>
  // CHECK: tile.expand_dims %{{.*}} {axis = 1 : i32} : tensor<64xi32> -> tensor<64x1xi32>
  // CHECK: tile.expand_dims %{{.*}} {axis = 0 : i32} : tensor<64xi32> -> tensor<1x64xi32>
  %c = tile.expand_dims %r {axis = 1 : i32} : tensor<64xi32> -> tensor<64x1xi32>
  %w = tile.expand_dims %r {axis = 0 : i32} : tensor<64xi32> -> tensor<1x64xi32>
  // CHECK: tile.broadcast %{{.*}} : tensor<64x1xi32> -> tensor<64x128xi32>
  %b = tile.broadcast %c : tensor<64x1xi32> -> tensor<64x128xi32>
  return %b, %s, %w : tensor<64x128xi32>, tensor<64x64xf32>, tensor<1x64xi32>
}

// Hints: the value itself with promises for AxisInfo.
// CHECK-LABEL: func.func @assume
func.func @assume(%x: tensor<64xi32>, %p: !tile.ptr<f32>) -> (tensor<64xi32>, !tile.ptr<f32>) {
  // CHECK: tile.assume %{{.*}} {contiguity = 64 : i64, divisibility = 16 : i64} : tensor<64xi32>
  // CHECK: tile.assume %{{.*}} {divisibility = 16 : i64} : !tile.ptr<f32>
  %a = tile.assume %x {contiguity = 64, divisibility = 16} : tensor<64xi32>
  %q = tile.assume %p {divisibility = 16} : !tile.ptr<f32>
  return %a, %q : tensor<64xi32>, !tile.ptr<f32>
}

// Pointer types: scalar pointers, tiles of pointers, several pointee types.
// CHECK-LABEL: func.func @memory
// CHECK-SAME: !tile.ptr<f32>
// CHECK-SAME: !tile.ptr<bf16>
// CHECK-SAME: !tile.ptr<i8>
func.func @memory(%p: !tile.ptr<f32>, %h: !tile.ptr<bf16>, %q: !tile.ptr<i8>, %n: i32) {
  %offs = tile.arange 0, 128 : tensor<128xi32>
  %base = tile.splat %p : !tile.ptr<f32> -> tensor<128x!tile.ptr<f32>>
  // CHECK: tile.addptr %{{.*}}, %{{.*}} : tensor<128x!tile.ptr<f32>>, tensor<128xi32>
  %ptrs = tile.addptr %base, %offs : tensor<128x!tile.ptr<f32>>, tensor<128xi32>
  // A scalar pointer plus a scalar offset.
  // CHECK: tile.addptr %{{.*}}, %{{.*}} : !tile.ptr<f32>, i32
  %one = tile.addptr %p, %n : !tile.ptr<f32>, i32
  %ns = tile.splat %n : i32 -> tensor<128xi32>
  %m = arith.cmpi slt, %offs, %ns : tensor<128xi32>
  %zero = arith.constant dense<0.0> : tensor<128xf32>
  // CHECK: tile.load %{{[^,]*}} : tensor<128x!tile.ptr<f32>> -> tensor<128xf32>
  %v0 = tile.load %ptrs : tensor<128x!tile.ptr<f32>> -> tensor<128xf32>
  // CHECK: tile.load %{{.*}}, %{{[^,]*}} : tensor<128x!tile.ptr<f32>>, tensor<128xi1> -> tensor<128xf32>
  %v1 = tile.load %ptrs, %m : tensor<128x!tile.ptr<f32>>, tensor<128xi1> -> tensor<128xf32>
  // CHECK: tile.load %{{.*}}, %{{.*}}, %{{.*}} : tensor<128x!tile.ptr<f32>>, tensor<128xi1>, tensor<128xf32> -> tensor<128xf32>
  %v2 = tile.load %ptrs, %m, %zero : tensor<128x!tile.ptr<f32>>, tensor<128xi1>, tensor<128xf32> -> tensor<128xf32>
  // CHECK: tile.load %{{.*}} : !tile.ptr<f32> -> f32
  %s = tile.load %one : !tile.ptr<f32> -> f32
  %a = arith.addf %v0, %v1 : tensor<128xf32>
  %sum = arith.addf %a, %v2 : tensor<128xf32>
  // CHECK: tile.store %{{.*}}, %{{[^,]*}} : tensor<128x!tile.ptr<f32>>, tensor<128xf32>{{$}}
  tile.store %ptrs, %sum : tensor<128x!tile.ptr<f32>>, tensor<128xf32>
  // CHECK: tile.store %{{.*}}, %{{.*}}, %{{.*}} : tensor<128x!tile.ptr<f32>>, tensor<128xf32>, tensor<128xi1>
  tile.store %ptrs, %sum, %m : tensor<128x!tile.ptr<f32>>, tensor<128xf32>, tensor<128xi1>
  // CHECK: tile.store %{{.*}}, %{{.*}} : !tile.ptr<f32>, f32
  tile.store %one, %s : !tile.ptr<f32>, f32
  // 2-D tiles of bf16 pointers.
  %hb = tile.splat %h : !tile.ptr<bf16> -> tensor<16x32x!tile.ptr<bf16>>
  %o2 = arith.constant dense<1> : tensor<16x32xi32>
  // CHECK: tile.addptr %{{.*}}, %{{.*}} : tensor<16x32x!tile.ptr<bf16>>, tensor<16x32xi32>
  %hp = tile.addptr %hb, %o2 : tensor<16x32x!tile.ptr<bf16>>, tensor<16x32xi32>
  // CHECK: tile.load %{{.*}} : tensor<16x32x!tile.ptr<bf16>> -> tensor<16x32xbf16>
  %hv = tile.load %hp : tensor<16x32x!tile.ptr<bf16>> -> tensor<16x32xbf16>
  // CHECK: tile.store %{{.*}}, %{{.*}} : tensor<16x32x!tile.ptr<bf16>>, tensor<16x32xbf16>
  tile.store %hp, %hv : tensor<16x32x!tile.ptr<bf16>>, tensor<16x32xbf16>
  // CHECK: tile.splat %{{.*}} : !tile.ptr<i8> -> tensor<4x!tile.ptr<i8>>
  %qb = tile.splat %q : !tile.ptr<i8> -> tensor<4x!tile.ptr<i8>>
  return
}

// CHECK-LABEL: func.func @reductions
func.func @reductions(%x: tensor<64x128xf32>, %i: tensor<64x128xi32>, %v: tensor<128xf32>)
    -> (tensor<64xf32>, tensor<128xf32>, tensor<64xi32>, tensor<128xi32>, f32, i32) {
  // CHECK: tile.reduce sum %{{.*}} {axis = 1 : i32} : tensor<64x128xf32> -> tensor<64xf32>
  // CHECK: tile.reduce max %{{.*}} {axis = 0 : i32} : tensor<64x128xf32> -> tensor<128xf32>
  // CHECK: tile.reduce min %{{.*}} {axis = 1 : i32} : tensor<64x128xi32> -> tensor<64xi32>
  // CHECK: tile.reduce argmax %{{.*}} {axis = 0 : i32} : tensor<64x128xf32> -> tensor<128xi32>
  // CHECK: tile.reduce sum %{{.*}} {axis = 0 : i32} : tensor<128xf32> -> f32
  // CHECK: tile.reduce argmax %{{.*}} {axis = 0 : i32} : tensor<128xf32> -> i32
  %0 = tile.reduce sum %x {axis = 1 : i32} : tensor<64x128xf32> -> tensor<64xf32>
  %1 = tile.reduce max %x {axis = 0 : i32} : tensor<64x128xf32> -> tensor<128xf32>
  %2 = tile.reduce min %i {axis = 1 : i32} : tensor<64x128xi32> -> tensor<64xi32>
  %3 = tile.reduce argmax %x {axis = 0 : i32} : tensor<64x128xf32> -> tensor<128xi32>
  %4 = tile.reduce sum %v {axis = 0 : i32} : tensor<128xf32> -> f32
  %5 = tile.reduce argmax %v {axis = 0 : i32} : tensor<128xf32> -> i32
  return %0, %1, %2, %3, %4, %5 : tensor<64xf32>, tensor<128xf32>, tensor<64xi32>, tensor<128xi32>, f32, i32
}

// CHECK-LABEL: func.func @sparse_dot
func.func @sparse_dot(%v: tensor<64x32xbf16>, %m: tensor<64x4xi16>, %b: tensor<64x128xbf16>, %c: tensor<64x128xf32>) -> tensor<64x128xf32> {
  // CHECK: tile.sparse_dot %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} : tensor<64x32xbf16>, tensor<64x4xi16>, tensor<64x128xbf16>, tensor<64x128xf32> -> tensor<64x128xf32>
  %0 = tile.sparse_dot %v, %m, %b, %c : tensor<64x32xbf16>, tensor<64x4xi16>, tensor<64x128xbf16>, tensor<64x128xf32> -> tensor<64x128xf32>
  return %0 : tensor<64x128xf32>
}

// The persistent loop's step (tile-persistent makes it).
// CHECK-LABEL: func.func @next_tile
func.func @next_tile(%i: i32, %total: i32, %q: !tile.ptr<i32>) -> i32 {
  // CHECK: tile.next_tile %{{.*}}, %{{.*}}, %{{.*}} : i32, !tile.ptr<i32>
  %v = tile.next_tile %i, %total, %q : i32, !tile.ptr<i32>
  return %v : i32
}

// A cluster's index and a program's rank in it (@cluster).
// CHECK-LABEL: func.func @cluster_position
// CHECK: tile.cluster_id : i32
// CHECK: tile.cluster_rank : i32
func.func @cluster_position() -> i32 {
  %c = tile.cluster_id : i32
  %r = tile.cluster_rank : i32
  %s = arith.addi %c, %r : i32
  return %s : i32
}

// The ops of a warp-specialized, persistent ring.
// CHECK-LABEL: func.func @warp_specialized
func.func @warp_specialized(%n: i32, %acc: tensor<128x128xf32>, %desc: !tile.desc<bf16>) {
  %c0 = arith.constant 0 : i32
  // CHECK: tile.ring_init
  tile.ring_init
  // CHECK: tile.warp_specialize {blocks_per_sm = 1 : i32, consumer_regs = 232 : i32, producer_regs = 40 : i32, producer_warps = 4 : i32} producer {
  tile.warp_specialize {blocks_per_sm = 1 : i32, consumer_regs = 232 : i32, producer_regs = 40 : i32, producer_warps = 4 : i32} producer {
    // CHECK: tile.ring_base : i32
    %b = tile.ring_base : i32
    // CHECK: tile.ring_acquire
    tile.ring_acquire %b, %c0
    // A copy multicast to every program of the cluster.
    // CHECK: tile.ring_copy %{{.*}}[%{{.*}}, %{{.*}}] -> stage %{{.*}} {cols = 128 : i64, layout = #tile.shared<swizzle = 128>, multicast, offset = 16384 : i64, rows = 128 : i64} : <bf16>
    tile.ring_copy %desc[%c0, %c0] -> stage %b {cols = 128 : i64, layout = #tile.shared<swizzle = 128>, multicast, offset = 16384 : i64, rows = 128 : i64} : <bf16>
    // CHECK: tile.ring_advance
    tile.ring_advance %n
  // CHECK: } consumer {
  } consumer {
    %b = tile.ring_base : i32
    // A sparse ring_dot whose neighbours hold their metadata in other
    // registers (meta_alternates).
    // CHECK: tile.ring_dot %{{.*}}, %{{.*}}, %{{.*}} {a_kmajor = true, a_layout = #tile.shared<swizzle = 128>, a_offset = 0 : i64, b_kmajor = true, b_layout = #tile.shared<swizzle = 128>, b_offset = 16384 : i64, k = 128 : i64, meta_alternates, meta_offset = 49152 : i64, operand_type = bf16} : tensor<128x128xf32> -> tensor<128x128xf32>
    %r = tile.ring_dot %b, %b, %acc {a_kmajor = true, a_layout = #tile.shared<swizzle = 128>, a_offset = 0 : i64, b_kmajor = true, b_layout = #tile.shared<swizzle = 128>, b_offset = 16384 : i64, k = 128 : i64, meta_alternates, meta_offset = 49152 : i64, operand_type = bf16} : tensor<128x128xf32> -> tensor<128x128xf32>
    // A K = 64 step whose [128, 4] metadata is one half of an [128, 8] box
    // (the half meta_col says).
    // CHECK: tile.ring_dot %{{.*}}, %{{.*}}, %{{.*}} meta_col %{{.*}} {a_kmajor = true, a_layout = #tile.shared<swizzle = 64>, a_offset = 0 : i64, b_kmajor = true, b_layout = #tile.shared<swizzle = 128>, b_offset = 8192 : i64, k = 64 : i64, meta_offset = 24576 : i64, meta_pitch = 8 : i64, operand_type = bf16} : tensor<128x128xf32> -> tensor<128x128xf32>
    %r64 = tile.ring_dot %b, %b, %acc meta_col %b {a_kmajor = true, a_layout = #tile.shared<swizzle = 64>, a_offset = 0 : i64, b_kmajor = true, b_layout = #tile.shared<swizzle = 128>, b_offset = 8192 : i64, k = 64 : i64, meta_offset = 24576 : i64, meta_pitch = 8 : i64, operand_type = bf16} : tensor<128x128xf32> -> tensor<128x128xf32>
    // CHECK: tile.ring_drain %{{.*}}, %{{.*}} : tensor<128x128xf32> -> tensor<128x128xf32>
    %d = tile.ring_drain %r, %b : tensor<128x128xf32> -> tensor<128x128xf32>
    tile.ring_advance %n
  }
  // CHECK: tile.producer {
  tile.producer {
    tile.ring_acquire %c0, %c0
  }
  return
}

// Ping-pong consumers: two groups, each asking which one it is.
// CHECK-LABEL: func.func @pingpong
func.func @pingpong() {
  tile.ring_init
  // CHECK: tile.warp_specialize {blocks_per_sm = 1 : i32, consumer_groups = 2 : i32, consumer_regs = 232 : i32, producer_regs = 40 : i32, producer_warps = 4 : i32} producer {
  tile.warp_specialize {blocks_per_sm = 1 : i32, consumer_groups = 2 : i32, consumer_regs = 232 : i32, producer_regs = 40 : i32, producer_warps = 4 : i32} producer {
    %a = arith.constant 0 : i32
  } consumer {
    // CHECK: tile.consumer_group : i32
    %g = tile.consumer_group : i32
    // CHECK: tile.turn_wait %{{.*}}
    tile.turn_wait %g
    // CHECK: tile.turn_pass %{{.*}}
    tile.turn_pass %g
  }
  return
}

// The typed attributes passes hand each other.
// CHECK-LABEL: func.func @ring_attrs
// CHECK-SAME:  tile.launch = #tile.launch<threads = 384, shared = 0, dynamic_shared = 197696, min_ptx = 82>
// CHECK-SAME:  tile.ring = #tile.ring<stages = 4, stage_bytes = 49152>
func.func @ring_attrs() attributes {tile.ring = #tile.ring<stages = 4, stage_bytes = 49152>,
    tile.launch = #tile.launch<threads = 384, shared = 0, dynamic_shared = 197696, min_ptx = 82>} {
  return
}

// Atomics: every kind, ordering and scope, masked or not, on tiles and on a
// scalar pointer; compare-and-swap.
// CHECK-LABEL: func.func @atomics
func.func @atomics(%p: tensor<64x!tile.ptr<i32>>, %v: tensor<64xi32>,
                   %m: tensor<64xi1>, %f: tensor<64x!tile.ptr<f32>>,
                   %fv: tensor<64xf32>, %s: !tile.ptr<i64>, %sv: i64) {
  // CHECK: tile.atomic_rmw add acq_rel gpu %{{.*}}, %{{.*}}, %{{.*}} : tensor<64x!tile.ptr<i32>>, tensor<64xi32>, tensor<64xi1> -> tensor<64xi32>
  %0 = tile.atomic_rmw add acq_rel gpu %p, %v, %m : tensor<64x!tile.ptr<i32>>, tensor<64xi32>, tensor<64xi1> -> tensor<64xi32>
  // CHECK: tile.atomic_rmw max relaxed cta %{{.*}}, %{{.*}} : tensor<64x!tile.ptr<i32>>, tensor<64xi32> -> tensor<64xi32>
  %1 = tile.atomic_rmw max relaxed cta %p, %v : tensor<64x!tile.ptr<i32>>, tensor<64xi32> -> tensor<64xi32>
  // CHECK: tile.atomic_rmw min acquire sys
  %2 = tile.atomic_rmw min acquire sys %f, %fv : tensor<64x!tile.ptr<f32>>, tensor<64xf32> -> tensor<64xf32>
  // CHECK: tile.atomic_rmw xchg release gpu %{{.*}}, %{{.*}} : !tile.ptr<i64>, i64 -> i64
  %3 = tile.atomic_rmw xchg release gpu %s, %sv : !tile.ptr<i64>, i64 -> i64
  // CHECK: tile.atomic_cas acq_rel gpu %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} : tensor<64x!tile.ptr<i32>>, tensor<64xi32>, tensor<64xi32>, tensor<64xi1> -> tensor<64xi32>
  %4 = tile.atomic_cas acq_rel gpu %p, %v, %0, %m : tensor<64x!tile.ptr<i32>>, tensor<64xi32>, tensor<64xi32>, tensor<64xi1> -> tensor<64xi32>
  // CHECK: tile.atomic_cas relaxed gpu %{{.*}}, %{{.*}}, %{{.*}} : !tile.ptr<i64>, i64, i64 -> i64
  %5 = tile.atomic_cas relaxed gpu %s, %sv, %3 : !tile.ptr<i64>, i64, i64 -> i64
  return
}

// Bitwise reductions, of i32 and i64 tiles.
// CHECK-LABEL: func.func @bitwise_reductions
func.func @bitwise_reductions(%x: tensor<32x64xi32>, %y: tensor<64xi64>) -> (tensor<64xi32>, tensor<32xi32>, i64) {
  // CHECK: tile.reduce or %{{.*}} {axis = 0 : i32} : tensor<32x64xi32> -> tensor<64xi32>
  %0 = tile.reduce or %x {axis = 0 : i32} : tensor<32x64xi32> -> tensor<64xi32>
  // CHECK: tile.reduce and %{{.*}} {axis = 1 : i32} : tensor<32x64xi32> -> tensor<32xi32>
  %1 = tile.reduce and %x {axis = 1 : i32} : tensor<32x64xi32> -> tensor<32xi32>
  // CHECK: tile.reduce xor %{{.*}} {axis = 0 : i32} : tensor<64xi64> -> i64
  %2 = tile.reduce xor %y {axis = 0 : i32} : tensor<64xi64> -> i64
  return %0, %1, %2 : tensor<64xi32>, tensor<32xi32>, i64
}

// Scans and reshapes.
// CHECK-LABEL: func.func @scans_reshapes
func.func @scans_reshapes(%x: tensor<32x64xi32>, %f: tensor<64xf32>) -> (tensor<32x64xi32>, tensor<64xf32>, tensor<2048xi32>) {
  // CHECK: tile.scan sum %{{.*}} {axis = 1 : i32} : tensor<32x64xi32> -> tensor<32x64xi32>
  %0 = tile.scan sum %x {axis = 1 : i32} : tensor<32x64xi32> -> tensor<32x64xi32>
  // CHECK: tile.scan max %{{.*}} {axis = 0 : i32} : tensor<64xf32> -> tensor<64xf32>
  %1 = tile.scan max %f {axis = 0 : i32} : tensor<64xf32> -> tensor<64xf32>
  // CHECK: tile.reshape %{{.*}} : tensor<32x64xi32> -> tensor<2048xi32>
  %2 = tile.reshape %0 : tensor<32x64xi32> -> tensor<2048xi32>
  return %0, %1, %2 : tensor<32x64xi32>, tensor<64xf32>, tensor<2048xi32>
}

// device_print.
// CHECK-LABEL: func.func @prints
func.func @prints(%x: tensor<64xf32>, %n: i32) {
  // CHECK: tile.print "x =" %{{.*}}, %{{.*}} : tensor<64xf32>, i32
  tile.print "x =" %x, %n : tensor<64xf32>, i32
  return
}

// barrier().
// CHECK-LABEL: func.func @barrier
func.func @barrier() {
  // CHECK: tile.barrier
  tile.barrier
  return
}

// store_block: a plain block store, and a TMA store (`tma`).
// CHECK-LABEL: func.func @block_stores
func.func @block_stores(%d: !tile.desc<bf16>, %r: i32, %v: tensor<128x256xbf16>) {
  // CHECK: tile.desc_store %{{.*}}[%{{.*}}, %{{.*}}], %{{.*}} : <bf16>, tensor<128x256xbf16>
  // CHECK: tile.desc_store %{{.*}}[%{{.*}}, %{{.*}}], %{{.*}} {tma} : <bf16>, tensor<128x256xbf16>
  tile.desc_store %d[%r, %r], %v : !tile.desc<bf16>, tensor<128x256xbf16>
  tile.desc_store %d[%r, %r], %v {tma} : !tile.desc<bf16>, tensor<128x256xbf16>
  return
}

// One case per verifier rule of the tile dialect (Dialect/Tile/TileDialect.cpp).
// RUN: tile-opt %s -split-input-file -verify-diagnostics

func.func @program_id_axis() -> i32 {
  // expected-error @+1 {{'tile.program_id' op axis must be 0, 1 or 2, got 3}}
  %0 = tile.program_id 3 : i32
  return %0 : i32
}

// -----

func.func @num_programs_axis() -> i32 {
  // expected-error @+1 {{'tile.num_programs' op axis must be 0, 1 or 2, got -1}}
  %0 = tile.num_programs -1 : i32
  return %0 : i32
}

// -----

func.func @arange_rank() -> tensor<8x8xi32> {
  // expected-error @+1 {{'tile.arange' op result must be 1-D}}
  %0 = tile.arange 0, 64 : tensor<8x8xi32>
  return %0 : tensor<8x8xi32>
}

// -----

func.func @arange_length() -> tensor<64xi32> {
  // expected-error @+1 {{'tile.arange' op range length 32 does not match result 'tensor<64xi32>'}}
  %0 = tile.arange 0, 32 : tensor<64xi32>
  return %0 : tensor<64xi32>
}

// -----

func.func @arange_pow2() -> tensor<48xi32> {
  // expected-error @+1 {{'tile.arange' op tile dimensions must be static powers of two, got 'tensor<48xi32>'}}
  %0 = tile.arange 0, 48 : tensor<48xi32>
  return %0 : tensor<48xi32>
}

// -----

func.func @arange_i64() -> tensor<64xi64> {
  // expected-error @+1 {{'tile.arange' op result #0 must be ranked tensor of 32-bit signless integer values}}
  %0 = tile.arange 0, 64 : tensor<64xi64>
  return %0 : tensor<64xi64>
}

// -----

func.func @splat_tile(%x: tensor<4xf32>) -> tensor<4x4xf32> {
  // expected-error @+1 {{'tile.splat' op source must be a scalar}}
  %0 = tile.splat %x : tensor<4xf32> -> tensor<4x4xf32>
  return %0 : tensor<4x4xf32>
}

// -----

func.func @splat_type(%x: f32) -> tensor<4xf16> {
  // expected-error @+1 {{'tile.splat' op element type mismatch}}
  %0 = tile.splat %x : f32 -> tensor<4xf16>
  return %0 : tensor<4xf16>
}

// -----

func.func @splat_pow2(%x: f32) -> tensor<4x6xf32> {
  // expected-error @+1 {{'tile.splat' op tile dimensions must be static powers of two, got 'tensor<4x6xf32>'}}
  %0 = tile.splat %x : f32 -> tensor<4x6xf32>
  return %0 : tensor<4x6xf32>
}

// -----

func.func @splat_dynamic(%x: f32) -> tensor<?xf32> {
  // expected-error @+1 {{'tile.splat' op tile dimensions must be static powers of two, got 'tensor<?xf32>'}}
  %0 = tile.splat %x : f32 -> tensor<?xf32>
  return %0 : tensor<?xf32>
}

// -----

func.func @expand_dims_axis(%x: tensor<64xi32>) -> tensor<64x1xi32> {
  // expected-error @+1 {{'tile.expand_dims' op axis 2 out of range}}
  %0 = tile.expand_dims %x {axis = 2 : i32} : tensor<64xi32> -> tensor<64x1xi32>
  return %0 : tensor<64x1xi32>
}

// -----

func.func @expand_dims_result(%x: tensor<64xi32>) -> tensor<64x1xi32> {
  // expected-error @+1 {{'tile.expand_dims' op result type must be the source with a 1 at axis 0}}
  %0 = tile.expand_dims %x {axis = 0 : i32} : tensor<64xi32> -> tensor<64x1xi32>
  return %0 : tensor<64x1xi32>
}

// -----

func.func @expand_dims_element(%x: tensor<64xi32>) -> tensor<64x1xf32> {
  // expected-error @+1 {{'tile.expand_dims' op result type must be the source with a 1 at axis 1}}
  %0 = tile.expand_dims %x {axis = 1 : i32} : tensor<64xi32> -> tensor<64x1xf32>
  return %0 : tensor<64x1xf32>
}

// -----

func.func @broadcast_rank(%x: tensor<64xi32>) -> tensor<64x64xi32> {
  // expected-error @+1 {{'tile.broadcast' op source and result need the same rank and element type}}
  %0 = tile.broadcast %x : tensor<64xi32> -> tensor<64x64xi32>
  return %0 : tensor<64x64xi32>
}

// -----

func.func @broadcast_element(%x: tensor<64x1xi32>) -> tensor<64x64xf32> {
  // expected-error @+1 {{'tile.broadcast' op source and result need the same rank and element type}}
  %0 = tile.broadcast %x : tensor<64x1xi32> -> tensor<64x64xf32>
  return %0 : tensor<64x64xf32>
}

// -----

func.func @broadcast_stretch(%x: tensor<64x2xi32>) -> tensor<64x64xi32> {
  // expected-error @+1 {{'tile.broadcast' op cannot broadcast 'tensor<64x2xi32>' to 'tensor<64x64xi32>'}}
  %0 = tile.broadcast %x : tensor<64x2xi32> -> tensor<64x64xi32>
  return %0 : tensor<64x64xi32>
}

// -----

func.func @broadcast_pow2(%x: tensor<1x4xi32>) -> tensor<3x4xi32> {
  // expected-error @+1 {{'tile.broadcast' op tile dimensions must be static powers of two, got 'tensor<3x4xi32>'}}
  %0 = tile.broadcast %x : tensor<1x4xi32> -> tensor<3x4xi32>
  return %0 : tensor<3x4xi32>
}

// -----

func.func @addptr_shape(%p: tensor<64x!tile.ptr<f32>>, %o: tensor<32xi32>) {
  // expected-error @+1 {{'tile.addptr' op pointer and offset shapes differ}}
  %0 = tile.addptr %p, %o : tensor<64x!tile.ptr<f32>>, tensor<32xi32>
  return
}

// -----

func.func @addptr_pow2(%p: tensor<12x!tile.ptr<f32>>, %o: tensor<12xi32>) {
  // expected-error @+1 {{'tile.addptr' op tile dimensions must be static powers of two, got 'tensor<12x!tile.ptr<f32>>'}}
  %0 = tile.addptr %p, %o : tensor<12x!tile.ptr<f32>>, tensor<12xi32>
  return
}

// -----

func.func @addptr_float_offset(%p: !tile.ptr<f32>, %o: f32) {
  // expected-error @+1 {{'tile.addptr' op operand #1 must be}}
  %0 = tile.addptr %p, %o : !tile.ptr<f32>, f32
  return
}

// -----

func.func @load_pointee(%p: tensor<64x!tile.ptr<f32>>) {
  // expected-error @+1 {{'tile.load' op result must have the pointer's shape and pointee type}}
  %0 = tile.load %p : tensor<64x!tile.ptr<f32>> -> tensor<64xf16>
  return
}

// -----

func.func @load_shape(%p: tensor<64x!tile.ptr<f32>>) {
  // expected-error @+1 {{'tile.load' op result must have the pointer's shape and pointee type}}
  %0 = tile.load %p : tensor<64x!tile.ptr<f32>> -> tensor<32xf32>
  return
}

// -----

func.func @load_mask_shape(%p: tensor<64x!tile.ptr<f32>>, %m: tensor<32xi1>) {
  // expected-error @+1 {{'tile.load' op mask shape differs from pointer shape}}
  %0 = tile.load %p, %m : tensor<64x!tile.ptr<f32>>, tensor<32xi1> -> tensor<64xf32>
  return
}

// -----

func.func @load_mask_type(%p: tensor<64x!tile.ptr<f32>>, %m: tensor<64xi32>) {
  // expected-error @+1 {{'tile.load' op operand #1 must be}}
  %0 = tile.load %p, %m : tensor<64x!tile.ptr<f32>>, tensor<64xi32> -> tensor<64xf32>
  return
}

// -----

func.func @load_other(%p: tensor<64x!tile.ptr<f32>>, %m: tensor<64xi1>, %o: tensor<64xf16>) {
  // expected-error @+1 {{'tile.load' op 'other' must have the result type}}
  %0 = tile.load %p, %m, %o : tensor<64x!tile.ptr<f32>>, tensor<64xi1>, tensor<64xf16> -> tensor<64xf32>
  return
}

// -----

func.func @load_pow2(%p: tensor<6x!tile.ptr<f32>>) {
  // expected-error @+1 {{'tile.load' op tile dimensions must be static powers of two, got 'tensor<6x!tile.ptr<f32>>'}}
  %0 = tile.load %p : tensor<6x!tile.ptr<f32>> -> tensor<6xf32>
  return
}

// -----

func.func @store_value(%p: tensor<64x!tile.ptr<f32>>, %v: tensor<64xbf16>) {
  // expected-error @+1 {{'tile.store' op value must have the pointer's shape and pointee type}}
  tile.store %p, %v : tensor<64x!tile.ptr<f32>>, tensor<64xbf16>
  return
}

// -----

func.func @store_shape(%p: tensor<64x!tile.ptr<f32>>, %v: tensor<64x2xf32>) {
  // expected-error @+1 {{'tile.store' op value must have the pointer's shape and pointee type}}
  tile.store %p, %v : tensor<64x!tile.ptr<f32>>, tensor<64x2xf32>
  return
}

// -----

func.func @store_mask(%p: tensor<64x!tile.ptr<f32>>, %v: tensor<64xf32>, %m: tensor<128xi1>) {
  // expected-error @+1 {{'tile.store' op mask shape differs from pointer shape}}
  tile.store %p, %v, %m : tensor<64x!tile.ptr<f32>>, tensor<64xf32>, tensor<128xi1>
  return
}

// -----

func.func @store_pow2(%p: tensor<5x!tile.ptr<f32>>, %v: tensor<5xf32>) {
  // expected-error @+1 {{'tile.store' op tile dimensions must be static powers of two, got 'tensor<5x!tile.ptr<f32>>'}}
  tile.store %p, %v : tensor<5x!tile.ptr<f32>>, tensor<5xf32>
  return
}

// -----

func.func @reduce_axis(%x: tensor<64x128xf32>) {
  // expected-error @+1 {{'tile.reduce' op axis 2 out of range for 'tensor<64x128xf32>'}}
  %0 = tile.reduce sum %x {axis = 2 : i32} : tensor<64x128xf32> -> tensor<64xf32>
  return
}

// -----

func.func @reduce_negative_axis(%x: tensor<64xf32>) {
  // expected-error @+1 {{'tile.reduce' op axis -1 out of range for 'tensor<64xf32>'}}
  %0 = tile.reduce sum %x {axis = -1 : i32} : tensor<64xf32> -> f32
  return
}

// -----

func.func @reduce_element(%x: tensor<64xf16>) {
  // expected-error @+1 {{'tile.reduce' op reduces f32, i32 or i64 tiles, got 'f16'}}
  %0 = tile.reduce max %x {axis = 0 : i32} : tensor<64xf16> -> f16
  return
}

// -----

func.func @reduce_result(%x: tensor<64x128xf32>) {
  // expected-error @+1 {{'tile.reduce' op result type must be 'tensor<128xf32>'}}
  %0 = tile.reduce sum %x {axis = 0 : i32} : tensor<64x128xf32> -> tensor<64xf32>
  return
}

// -----

func.func @reduce_argmax_result(%x: tensor<64xf32>) {
  // expected-error @+1 {{'tile.reduce' op result type must be 'i32'}}
  %0 = tile.reduce argmax %x {axis = 0 : i32} : tensor<64xf32> -> f32
  return
}

// -----

func.func @reduce_pow2(%x: tensor<6x8xf32>) {
  // expected-error @+1 {{'tile.reduce' op tile dimensions must be static powers of two, got 'tensor<6x8xf32>'}}
  %0 = tile.reduce sum %x {axis = 1 : i32} : tensor<6x8xf32> -> tensor<6xf32>
  return
}

// -----

func.func @reduce_kind(%x: tensor<64xf32>) {
  // expected-error @+1 {{expected}}
  %0 = tile.reduce prod %x {axis = 0 : i32} : tensor<64xf32> -> f32
  return
}

// -----

func.func @sparse_dot_types(%v: tensor<64x32xbf16>, %m: tensor<64x4xi16>, %b: tensor<64x128xf16>, %c: tensor<64x128xf32>) -> tensor<64x128xf32> {
  // expected-error @+1 {{'tile.sparse_dot' op vals and b must both be f16 or both bf16}}
  %0 = tile.sparse_dot %v, %m, %b, %c : tensor<64x32xbf16>, tensor<64x4xi16>, tensor<64x128xf16>, tensor<64x128xf32> -> tensor<64x128xf32>
  return %0 : tensor<64x128xf32>
}

// -----

func.func @sparse_dot_meta_type(%v: tensor<64x32xbf16>, %m: tensor<64x4xi32>, %b: tensor<64x128xbf16>, %c: tensor<64x128xf32>) -> tensor<64x128xf32> {
  // expected-error @+1 {{'tile.sparse_dot' op meta must be an i16 tile, got 'tensor<64x4xi32>'}}
  %0 = tile.sparse_dot %v, %m, %b, %c : tensor<64x32xbf16>, tensor<64x4xi32>, tensor<64x128xbf16>, tensor<64x128xf32> -> tensor<64x128xf32>
  return %0 : tensor<64x128xf32>
}

// -----

func.func @sparse_dot_chain(%v: tensor<64x32xbf16>, %m: tensor<64x4xi16>, %b: tensor<32x128xbf16>, %c: tensor<64x128xf32>) -> tensor<64x128xf32> {
  // expected-error @+1 {{'tile.sparse_dot' op shapes do not chain}}
  %0 = tile.sparse_dot %v, %m, %b, %c : tensor<64x32xbf16>, tensor<64x4xi16>, tensor<32x128xbf16>, tensor<64x128xf32> -> tensor<64x128xf32>
  return %0 : tensor<64x128xf32>
}

// -----

func.func @sparse_dot_meta_shape(%v: tensor<64x32xbf16>, %m: tensor<64x8xi16>, %b: tensor<64x128xbf16>, %c: tensor<64x128xf32>) -> tensor<64x128xf32> {
  // expected-error @+1 {{'tile.sparse_dot' op meta must be [64, 4] for K = 64, got 'tensor<64x8xi16>'}}
  %0 = tile.sparse_dot %v, %m, %b, %c : tensor<64x32xbf16>, tensor<64x8xi16>, tensor<64x128xbf16>, tensor<64x128xf32> -> tensor<64x128xf32>
  return %0 : tensor<64x128xf32>
}

// -----

func.func @sparse_dot_k(%v: tensor<16x8xf16>, %m: tensor<16x1xi16>, %b: tensor<16x8xf16>, %c: tensor<16x8xf32>) -> tensor<16x8xf32> {
  // expected-error @+1 {{'tile.sparse_dot' op needs M % 16 == 0, N % 8 == 0 and K % 32 == 0, got 16x8x16}}
  %0 = tile.sparse_dot %v, %m, %b, %c : tensor<16x8xf16>, tensor<16x1xi16>, tensor<16x8xf16>, tensor<16x8xf32> -> tensor<16x8xf32>
  return %0 : tensor<16x8xf32>
}

// -----

func.func @warp_specialize_regs() {
  // expected-error @+1 {{'tile.warp_specialize' op register counts must be multiples of 8 from 24 to 256 (setmaxnreg), got 20}}
  tile.warp_specialize {blocks_per_sm = 1 : i32, consumer_regs = 232 : i32, producer_regs = 20 : i32, producer_warps = 4 : i32} producer {
    %a = arith.constant 0 : i32
  } consumer {
    %b = arith.constant 0 : i32
  }
  return
}

// -----

func.func @consumer_groups_three() {
  // expected-error @+1 {{'tile.warp_specialize' op consumer_groups is 1 (cooperative) or 2 (ping-pong), got 3}}
  tile.warp_specialize {blocks_per_sm = 1 : i32, consumer_groups = 3 : i32, consumer_regs = 232 : i32, producer_regs = 40 : i32, producer_warps = 4 : i32} producer {
    %a = arith.constant 0 : i32
  } consumer {
    %b = arith.constant 0 : i32
  }
  return
}

// -----

func.func @pingpong_one_warp_producer() {
  // expected-error @+1 {{'tile.warp_specialize' op ping-pong consumers need a producer warpgroup and one block per SM}}
  tile.warp_specialize {blocks_per_sm = 2 : i32, consumer_groups = 2 : i32, producer_warps = 1 : i32} producer {
    %a = arith.constant 0 : i32
  } consumer {
    %b = arith.constant 0 : i32
  }
  return
}

// -----

func.func @consumer_group_cooperative() {
  tile.warp_specialize {blocks_per_sm = 1 : i32, consumer_regs = 232 : i32, producer_regs = 40 : i32, producer_warps = 4 : i32} producer {
    %a = arith.constant 0 : i32
  } consumer {
    // expected-error @+1 {{'tile.consumer_group' op only runs in the consumer region of a ping-pong tile.warp_specialize (consumer_groups = 2)}}
    %g = tile.consumer_group : i32
  }
  return
}

// -----

func.func @turn_wait_cooperative(%s: i32) {
  tile.warp_specialize {blocks_per_sm = 1 : i32, consumer_regs = 232 : i32, producer_regs = 40 : i32, producer_warps = 4 : i32} producer {
    %a = arith.constant 0 : i32
  } consumer {
    // expected-error @+1 {{'tile.turn_wait' op only runs in the consumer region of a ping-pong tile.warp_specialize (consumer_groups = 2)}}
    tile.turn_wait %s
  }
  return
}

// -----

func.func @turn_pass_outside(%s: i32) {
  // expected-error @+1 {{'tile.turn_pass' op only runs in the consumer region of a ping-pong tile.warp_specialize (consumer_groups = 2)}}
  tile.turn_pass %s
  return
}

// -----

func.func @consumer_group_producer() {
  tile.warp_specialize {blocks_per_sm = 1 : i32, consumer_groups = 2 : i32, consumer_regs = 232 : i32, producer_regs = 40 : i32, producer_warps = 4 : i32} producer {
    // expected-error @+1 {{'tile.consumer_group' op only runs in the consumer region of a ping-pong tile.warp_specialize (consumer_groups = 2)}}
    %g = tile.consumer_group : i32
  } consumer {
    %b = arith.constant 0 : i32
  }
  return
}

// -----

// A one-warp producer computes no tiles: it is a warpgroup's work.
func.func @warp_specialize_one_warp_tiles(%s: i32) {
  tile.warp_specialize {blocks_per_sm = 2 : i32, producer_warps = 1 : i32} producer {
    // expected-error @+1 {{'tile.arange' op cannot run in the producer warpgroup (only scalar work, ring copies and a warpgroup's address tiles can)}}
    %r = tile.arange 0, 128 : tensor<128xi32>
  } consumer {
    %b = arith.constant 0 : i32
  }
  return
}

// -----

// A producer warpgroup computes addresses, but loads no tile.
func.func @warp_specialize_producer_tile_load(%p: tensor<128x!tile.ptr<f16>>) {
  tile.warp_specialize {blocks_per_sm = 1 : i32, consumer_regs = 232 : i32, producer_regs = 40 : i32, producer_warps = 4 : i32} producer {
    // expected-error @+1 {{'tile.load' op cannot run in the producer warpgroup (only scalar work, ring copies and a warpgroup's address tiles can)}}
    %v = tile.load %p : tensor<128x!tile.ptr<f16>> -> tensor<128xf16>
  } consumer {
    %b = arith.constant 0 : i32
  }
  return
}

// -----

func.func @warp_specialize_producer_tiles(%acc: tensor<128x128xf32>, %s: i32) {
  tile.warp_specialize {blocks_per_sm = 1 : i32, consumer_regs = 232 : i32, producer_regs = 40 : i32, producer_warps = 4 : i32} producer {
    // expected-error @+1 {{'tile.ring_drain' op cannot run in the producer warpgroup (only scalar work, ring copies and a warpgroup's address tiles can)}}
    %d = tile.ring_drain %acc, %s : tensor<128x128xf32> -> tensor<128x128xf32>
  } consumer {
    %b = arith.constant 0 : i32
  }
  return
}

// -----

func.func @warp_specialize_consumer_copies(%s: i32) {
  tile.warp_specialize {blocks_per_sm = 1 : i32, consumer_regs = 232 : i32, producer_regs = 40 : i32, producer_warps = 4 : i32} producer {
    %a = arith.constant 0 : i32
  } consumer {
    // expected-error @+1 {{'tile.ring_acquire' op belongs to the producer warpgroup, not the consumers}}
    tile.ring_acquire %s, %s
  }
  return
}

// -----

func.func @ring_dot_meta_pitch(%acc: tensor<128x128xf32>, %s: i32) {
  // expected-error @+1 {{'tile.ring_dot' op metadata rows must be whole 16-byte units (meta_pitch a multiple of 8 i16) holding K/16 = 4 i16, got a pitch of 4}}
  %r = tile.ring_dot %s, %s, %acc {a_kmajor = true, a_layout = #tile.shared<swizzle = 64>, a_offset = 0 : i64, b_kmajor = true, b_layout = #tile.shared<swizzle = 128>, b_offset = 8192 : i64, k = 64 : i64, meta_offset = 24576 : i64, operand_type = bf16} : tensor<128x128xf32> -> tensor<128x128xf32>
  return
}

// -----

func.func @ring_dot_meta_pitch_dense(%acc: tensor<128x128xf32>, %s: i32) {
  // expected-error @+1 {{'tile.ring_dot' op meta_alternates and meta_pitch describe sparse A's metadata: they need meta_offset}}
  %r = tile.ring_dot %s, %s, %acc {a_kmajor = true, a_layout = #tile.shared<swizzle = 128>, a_offset = 0 : i64, b_kmajor = true, b_layout = #tile.shared<swizzle = 128>, b_offset = 8192 : i64, k = 64 : i64, meta_pitch = 8 : i64, operand_type = bf16} : tensor<128x128xf32> -> tensor<128x128xf32>
  return
}

// -----

func.func @ring_dot_meta_col(%acc: tensor<128x128xf32>, %s: i32) {
  // expected-error @+1 {{'tile.ring_dot' op meta_col places a step's metadata inside a widened box: it needs meta_pitch}}
  %r = tile.ring_dot %s, %s, %acc meta_col %s {a_kmajor = true, a_layout = #tile.shared<swizzle = 128>, a_offset = 0 : i64, b_kmajor = true, b_layout = #tile.shared<swizzle = 128>, b_offset = 16384 : i64, k = 128 : i64, meta_offset = 49152 : i64, operand_type = bf16} : tensor<128x128xf32> -> tensor<128x128xf32>
  return
}

// -----

// expected-error @+1 {{a ring needs at least 2 stages, got 1}}
func.func @ring_one_stage() attributes {tile.ring = #tile.ring<stages = 1, stage_bytes = 4096>} {
  return
}

// -----

// expected-error @+1 {{ring stages must be whole 1024-byte blocks (the 128-byte swizzle's period), got 1000 bytes}}
func.func @ring_unaligned() attributes {tile.ring = #tile.ring<stages = 2, stage_bytes = 1000>} {
  return
}

// -----

// expected-error @+1 {{'tile.ring' must be a #tile.ring, got array<i64: 4, 32768>}}
func.func @ring_untyped() attributes {tile.ring = array<i64: 4, 32768>} {
  return
}

// -----

func.func @atomic_value_type(%p: tensor<64x!tile.ptr<i32>>, %v: tensor<64xi64>) {
  // expected-error @+1 {{'tile.atomic_rmw' op operands must have the pointers' shape and pointee type}}
  %0 = tile.atomic_rmw add acq_rel gpu %p, %v : tensor<64x!tile.ptr<i32>>, tensor<64xi64> -> tensor<64xi32>
  return
}

// -----

func.func @atomic_result_type(%p: tensor<64x!tile.ptr<i32>>, %v: tensor<64xi32>) {
  // expected-error @+1 {{'tile.atomic_rmw' op result must have the pointers' shape and pointee type}}
  %0 = tile.atomic_rmw add acq_rel gpu %p, %v : tensor<64x!tile.ptr<i32>>, tensor<64xi32> -> tensor<32xi32>
  return
}

// -----

func.func @atomic_mask_shape(%p: tensor<64x!tile.ptr<i32>>, %v: tensor<64xi32>, %m: tensor<32xi1>) {
  // expected-error @+1 {{'tile.atomic_rmw' op mask shape differs from pointer shape}}
  %0 = tile.atomic_rmw add acq_rel gpu %p, %v, %m : tensor<64x!tile.ptr<i32>>, tensor<64xi32>, tensor<32xi1> -> tensor<64xi32>
  return
}

// -----

func.func @atomic_max_f16(%p: tensor<64x!tile.ptr<f16>>, %v: tensor<64xf16>) {
  // expected-error @+1 {{'tile.atomic_rmw' op atomic max does not support 'f16'}}
  %0 = tile.atomic_rmw max acq_rel gpu %p, %v : tensor<64x!tile.ptr<f16>>, tensor<64xf16> -> tensor<64xf16>
  return
}

// -----

func.func @atomic_xchg_i16(%p: !tile.ptr<i16>, %v: i16) {
  // expected-error @+1 {{'tile.atomic_rmw' op atomic xchg does not support 'i16'}}
  %0 = tile.atomic_rmw xchg acq_rel gpu %p, %v : !tile.ptr<i16>, i16 -> i16
  return
}

// -----

func.func @atomic_cas_f16(%p: !tile.ptr<f16>, %c: f16, %v: f16) {
  // expected-error @+1 {{'tile.atomic_cas' op compare-and-swap needs a 32- or 64-bit type, got 'f16'}}
  %0 = tile.atomic_cas acq_rel gpu %p, %c, %v : !tile.ptr<f16>, f16, f16 -> f16
  return
}

// -----

func.func @atomic_cas_scalar_tile(%p: !tile.ptr<i32>, %c: tensor<1xi32>, %v: i32) {
  // expected-error @+1 {{'tile.atomic_cas' op operands must have the pointers' shape and pointee type}}
  %0 = tile.atomic_cas acq_rel gpu %p, %c, %v : !tile.ptr<i32>, tensor<1xi32>, i32 -> i32
  return
}

// -----

func.func @reduce_or_float(%x: tensor<64xf32>) -> f32 {
  // expected-error @+1 {{'tile.reduce' op bitwise kinds take integer tiles, got 'f32'}}
  %0 = tile.reduce or %x {axis = 0 : i32} : tensor<64xf32> -> f32
  return %0 : f32
}

// -----

func.func @scan_argmax(%x: tensor<64xf32>) -> tensor<64xf32> {
  // expected-error @+1 {{'tile.scan' op argmax is not a scan}}
  %0 = tile.scan argmax %x {axis = 0 : i32} : tensor<64xf32> -> tensor<64xf32>
  return %0 : tensor<64xf32>
}

// -----

func.func @scan_type(%x: tensor<64xf16>) -> tensor<64xf16> {
  // expected-error @+1 {{'tile.scan' op scans f32, i32 or i64 tiles, got 'f16'}}
  %0 = tile.scan sum %x {axis = 0 : i32} : tensor<64xf16> -> tensor<64xf16>
  return %0 : tensor<64xf16>
}

// -----

func.func @reshape_count(%x: tensor<64xf32>) -> tensor<2x64xf32> {
  // expected-error @+1 {{'tile.reshape' op reshapes to the same element type and count, got 'tensor<64xf32>' -> 'tensor<2x64xf32>'}}
  %0 = tile.reshape %x : tensor<64xf32> -> tensor<2x64xf32>
  return %0 : tensor<2x64xf32>
}

// -----

func.func @print_format(%x: tensor<64xf32>) {
  // expected-error @+1 {{'tile.print' op the prefix is not a format string: no '%'}}
  tile.print "x = %d" %x : tensor<64xf32>
  return
}

// -----

func.func @print_pointer(%p: !tile.ptr<f32>) {
  // expected-error @+1 {{'tile.print' op prints integers and floats, got '!tile.ptr<f32>'}}
  tile.print "p" %p : !tile.ptr<f32>
  return
}

// -----

func.func @desc_store_rank(%d: !tile.desc<bf16>, %r: i32, %v: tensor<128xbf16>) {
  // expected-error @+1 {{'tile.desc_store' op stores a 2-D block, got 'tensor<128xbf16>'}}
  tile.desc_store %d[%r, %r], %v : !tile.desc<bf16>, tensor<128xbf16>
  return
}

// -----

func.func @desc_store_type(%d: !tile.desc<bf16>, %r: i32, %v: tensor<64x64xf16>) {
  // expected-error @+1 {{'tile.desc_store' op block element type 'f16' differs from the descriptor's 'bf16'}}
  tile.desc_store %d[%r, %r], %v : !tile.desc<bf16>, tensor<64x64xf16>
  return
}

// -----

func.func @desc_store_tma_box(%d: !tile.desc<bf16>, %r: i32, %v: tensor<64x96xbf16>) {
  // expected-error @+1 {{'tile.desc_store' op a TMA store takes at most 256 rows in panels of 64 columns, got 'tensor<64x96xbf16>'}}
  tile.desc_store %d[%r, %r], %v {tma} : !tile.desc<bf16>, tensor<64x96xbf16>
  return
}

// -----

func.func @assume_not_pow2(%x: tensor<64xi32>) -> tensor<64xi32> {
  // expected-error @+1 {{'tile.assume' op divisibility must be a positive power of two, got 12}}
  %a = tile.assume %x {divisibility = 12} : tensor<64xi32>
  return %a : tensor<64xi32>
}

// -----

func.func @assume_scalar_contiguity(%x: i32) -> i32 {
  // expected-error @+1 {{'tile.assume' op contiguity needs a tile}}
  %a = tile.assume %x {contiguity = 4} : i32
  return %a : i32
}

// -----

func.func @shared_layout_swizzle(%acc: tensor<128x128xf32>, %s: i32) {
  // expected-error @+1 {{a shared layout's swizzle is 0 (plain rows), 64 or 128 bytes, got 32}}
  %r = tile.ring_dot %s, %s, %acc {a_kmajor = true, a_layout = #tile.shared<swizzle = 32>, a_offset = 0 : i64, b_kmajor = true, b_layout = #tile.shared<swizzle = 128>, b_offset = 16384 : i64, k = 64 : i64, operand_type = bf16} : tensor<128x128xf32> -> tensor<128x128xf32>
  return
}

// -----

func.func @ring_dot_a_twice(%acc: tensor<128x128xf32>, %a: tensor<128x64xbf16>, %s: i32) {
  // expected-error @+1 {{'tile.ring_dot' op A is in registers (a) or in the stage in a shared layout (a_layout): exactly one}}
  %r = tile.ring_dot %s, %s, %acc a %a : tensor<128x64xbf16> {a_kmajor = true, a_layout = #tile.shared<swizzle = 128>, a_offset = 0 : i64, b_kmajor = true, b_layout = #tile.shared<swizzle = 128>, b_offset = 0 : i64, k = 64 : i64, operand_type = bf16} : tensor<128x128xf32> -> tensor<128x128xf32>
  return
}

// -----

func.func @ring_dot_plain_a(%acc: tensor<128x128xf32>, %s: i32) {
  // expected-error @+1 {{'tile.ring_dot' op wgmma reads A through a descriptor: a_layout must be swizzled, got #tile.shared<swizzle = 0>}}
  %r = tile.ring_dot %s, %s, %acc {a_kmajor = true, a_layout = #tile.shared<swizzle = 0>, a_offset = 0 : i64, b_kmajor = true, b_layout = #tile.shared<swizzle = 128>, b_offset = 16384 : i64, k = 64 : i64, operand_type = bf16} : tensor<128x128xf32> -> tensor<128x128xf32>
  return
}

// -----

func.func @ring_dot_b_layout(%acc: tensor<128x128xf32>, %s: i32) {
  // expected-error @+1 {{'tile.ring_dot' op wgmma reads B in panels of 64 columns with the 128-byte swizzle (K-major: or one of 32 with the 64-byte swizzle), got #tile.shared<swizzle = 64>}}
  %r = tile.ring_dot %s, %s, %acc {a_kmajor = true, a_layout = #tile.shared<swizzle = 128>, a_offset = 0 : i64, b_kmajor = false, b_layout = #tile.shared<swizzle = 64>, b_offset = 16384 : i64, k = 64 : i64, operand_type = bf16} : tensor<128x128xf32> -> tensor<128x128xf32>
  return
}

// -----

func.func @ring_copy_ptrs_layout(%p: tensor<128x64x!tile.ptr<bf16>>, %s: i32) {
  // expected-error @+1 {{'tile.ring_copy_ptrs' op cp.async fills a stage in panels of 64 columns with the 128-byte swizzle (or one of 32 with the 64-byte swizzle), got #tile.shared<swizzle = 64> for 64 columns}}
  tile.ring_copy_ptrs %p -> stage %s {layout = #tile.shared<swizzle = 64>, offset = 0 : i64, rows = 128 : i64, cols = 64 : i64} : tensor<128x64x!tile.ptr<bf16>>
  return
}

// -----

func.func @ring_copy_panels(%d: !tile.desc<bf16>, %s: i32) {
  // expected-error @+1 {{'tile.ring_copy' op a block of 96 columns is not whole panels of 64 (#tile.shared<swizzle = 128>)}}
  tile.ring_copy %d[%s, %s] -> stage %s {cols = 96 : i64, layout = #tile.shared<swizzle = 128>, offset = 0 : i64, rows = 128 : i64} : <bf16>
  return
}

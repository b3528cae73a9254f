// convert-tile-to-gpu on hand-written tile IR: kernels become gpu.funcs with
// the block size known; loads/stores vectorize to 16 bytes exactly where
// AxisInfo proves contiguity, alignment and a uniform mask; reductions
// combine across lanes with xor shuffles and across warps through shared
// memory with barriers.
// RUN: tile-opt %s --split-input-file --convert-tile-to-gpu | FileCheck %s

// Vector add where `n` is known to be a multiple of 16: every group of 4
// consecutive lanes shares one mask value, so 16-byte accesses are legal.
// CHECK-LABEL: gpu.module @vadd_div16_module
// CHECK:       gpu.func @vadd_div16(%{{.*}}: !llvm.ptr<1>, %{{.*}}: !llvm.ptr<1>, %{{.*}}: !llvm.ptr<1>, %{{.*}}: i32) kernel
// CHECK-SAME:  known_block_size = array<i32: 128, 1, 1>
// CHECK:       gpu.thread_id x
// CHECK:       llvm.load %{{.*}} {alignment = 16 : i64} : !llvm.ptr<1> -> vector<4xf32>
// CHECK:       llvm.load %{{.*}} {alignment = 16 : i64} : !llvm.ptr<1> -> vector<4xf32>
// CHECK:       llvm.store %{{.*}}, %{{.*}} {alignment = 16 : i64} : vector<4xf32>, !llvm.ptr<1>
// CHECK-NOT:   llvm.load %{{.*}} -> f32
// CHECK:       gpu.return
func.func @vadd_div16(%x: !tile.ptr<f32> {tile.divisibility = 16 : i32},
                      %y: !tile.ptr<f32> {tile.divisibility = 16 : i32},
                      %out: !tile.ptr<f32> {tile.divisibility = 16 : i32},
                      %n: i32 {tile.divisibility = 16 : i32})
    attributes {tile.kernel, tile.num_warps = 4 : i32} {
  %c1024 = arith.constant 1024 : i32
  %pid = tile.program_id 0 : i32
  %start = arith.muli %pid, %c1024 : i32
  %r = tile.arange 0, 1024 : tensor<1024xi32>
  %s = tile.splat %start : i32 -> tensor<1024xi32>
  %offs = arith.addi %s, %r : tensor<1024xi32>
  %ns = tile.splat %n : i32 -> tensor<1024xi32>
  %m = arith.cmpi slt, %offs, %ns : tensor<1024xi32>
  %xb = tile.splat %x : !tile.ptr<f32> -> tensor<1024x!tile.ptr<f32>>
  %xp = tile.addptr %xb, %offs : tensor<1024x!tile.ptr<f32>>, tensor<1024xi32>
  %yb = tile.splat %y : !tile.ptr<f32> -> tensor<1024x!tile.ptr<f32>>
  %yp = tile.addptr %yb, %offs : tensor<1024x!tile.ptr<f32>>, tensor<1024xi32>
  %ob = tile.splat %out : !tile.ptr<f32> -> tensor<1024x!tile.ptr<f32>>
  %op = tile.addptr %ob, %offs : tensor<1024x!tile.ptr<f32>>, tensor<1024xi32>
  %a = tile.load %xp, %m : tensor<1024x!tile.ptr<f32>>, tensor<1024xi1> -> tensor<1024xf32>
  %b = tile.load %yp, %m : tensor<1024x!tile.ptr<f32>>, tensor<1024xi1> -> tensor<1024xf32>
  %sum = arith.addf %a, %b : tensor<1024xf32>
  tile.store %op, %sum, %m : tensor<1024x!tile.ptr<f32>>, tensor<1024xf32>, tensor<1024xi1>
  return
}

// -----

// The same kernel without the fact about `n`: the mask may change inside a
// group of 4, so every element is loaded and stored on its own.
// CHECK-LABEL: gpu.func @vadd_scalar
// CHECK-SAME:  known_block_size = array<i32: 128, 1, 1>
// CHECK-NOT:   vector<4xf32>
// CHECK:       llvm.load %{{.*}} {alignment = 4 : i64} : !llvm.ptr<1> -> f32
// CHECK-NOT:   vector<4xf32>
// CHECK:       llvm.store %{{.*}}, %{{.*}} {alignment = 4 : i64} : f32, !llvm.ptr<1>
// CHECK-NOT:   vector<4xf32>
// CHECK:       gpu.return
func.func @vadd_scalar(%x: !tile.ptr<f32> {tile.divisibility = 16 : i32},
                       %out: !tile.ptr<f32> {tile.divisibility = 16 : i32},
                       %n: i32)
    attributes {tile.kernel, tile.num_warps = 4 : i32} {
  %r = tile.arange 0, 512 : tensor<512xi32>
  %ns = tile.splat %n : i32 -> tensor<512xi32>
  %m = arith.cmpi slt, %r, %ns : tensor<512xi32>
  %xb = tile.splat %x : !tile.ptr<f32> -> tensor<512x!tile.ptr<f32>>
  %xp = tile.addptr %xb, %r : tensor<512x!tile.ptr<f32>>, tensor<512xi32>
  %ob = tile.splat %out : !tile.ptr<f32> -> tensor<512x!tile.ptr<f32>>
  %op = tile.addptr %ob, %r : tensor<512x!tile.ptr<f32>>, tensor<512xi32>
  %a = tile.load %xp, %m : tensor<512x!tile.ptr<f32>>, tensor<512xi1> -> tensor<512xf32>
  tile.store %op, %a, %m : tensor<512x!tile.ptr<f32>>, tensor<512xf32>, tensor<512xi1>
  return
}

// -----

// Row sums of a [4, 256] tile with 2 warps: within-thread adds, xor shuffles
// across lanes, then shared memory and barriers across the warps.
// CHECK-LABEL: gpu.func @row_sum
// CHECK-SAME:  known_block_size = array<i32: 64, 1, 1>
// CHECK:       gpu.shuffle xor
// CHECK:       gpu.barrier
// CHECK:       gpu.return
func.func @row_sum(%x: !tile.ptr<f32> {tile.divisibility = 16 : i32},
                   %out: !tile.ptr<f32> {tile.divisibility = 16 : i32})
    attributes {tile.kernel, tile.num_warps = 2 : i32} {
  %c256 = arith.constant 256 : i32
  %rows = tile.arange 0, 4 : tensor<4xi32>
  %cols = tile.arange 0, 256 : tensor<256xi32>
  %r1 = tile.expand_dims %rows {axis = 1 : i32} : tensor<4xi32> -> tensor<4x1xi32>
  %st = tile.splat %c256 : i32 -> tensor<4x1xi32>
  %r2 = arith.muli %r1, %st : tensor<4x1xi32>
  %c1 = tile.expand_dims %cols {axis = 0 : i32} : tensor<256xi32> -> tensor<1x256xi32>
  %rb = tile.broadcast %r2 : tensor<4x1xi32> -> tensor<4x256xi32>
  %cb = tile.broadcast %c1 : tensor<1x256xi32> -> tensor<4x256xi32>
  %offs = arith.addi %rb, %cb : tensor<4x256xi32>
  %xb = tile.splat %x : !tile.ptr<f32> -> tensor<4x256x!tile.ptr<f32>>
  %xp = tile.addptr %xb, %offs : tensor<4x256x!tile.ptr<f32>>, tensor<4x256xi32>
  %v = tile.load %xp : tensor<4x256x!tile.ptr<f32>> -> tensor<4x256xf32>
  %s = tile.reduce sum %v {axis = 1 : i32} : tensor<4x256xf32> -> tensor<4xf32>
  %ob = tile.splat %out : !tile.ptr<f32> -> tensor<4x!tile.ptr<f32>>
  %op = tile.addptr %ob, %rows : tensor<4x!tile.ptr<f32>>, tensor<4xi32>
  tile.store %op, %s : tensor<4x!tile.ptr<f32>>, tensor<4xf32>
  return
}

// -----

// A full reduction to a scalar, of every kind. Each needs cross-warp traffic.
// CHECK-LABEL: gpu.func @reduce_kinds
// CHECK:       gpu.shuffle xor
// CHECK:       arith.addf
// CHECK:       gpu.barrier
// CHECK:       gpu.shuffle xor
// CHECK:       arith.maximumf
// CHECK:       gpu.barrier
// CHECK:       gpu.shuffle xor
// CHECK:       arith.minsi
// CHECK:       gpu.barrier
// CHECK:       gpu.return
func.func @reduce_kinds(%x: !tile.ptr<f32> {tile.divisibility = 16 : i32},
                        %i: !tile.ptr<i32> {tile.divisibility = 16 : i32})
    attributes {tile.kernel, tile.num_warps = 4 : i32} {
  %r = tile.arange 0, 1024 : tensor<1024xi32>
  %xb = tile.splat %x : !tile.ptr<f32> -> tensor<1024x!tile.ptr<f32>>
  %xp = tile.addptr %xb, %r : tensor<1024x!tile.ptr<f32>>, tensor<1024xi32>
  %v = tile.load %xp : tensor<1024x!tile.ptr<f32>> -> tensor<1024xf32>
  %ib = tile.splat %i : !tile.ptr<i32> -> tensor<1024x!tile.ptr<i32>>
  %ip = tile.addptr %ib, %r : tensor<1024x!tile.ptr<i32>>, tensor<1024xi32>
  %w = tile.load %ip : tensor<1024x!tile.ptr<i32>> -> tensor<1024xi32>
  %s = tile.reduce sum %v {axis = 0 : i32} : tensor<1024xf32> -> f32
  %m = tile.reduce max %v {axis = 0 : i32} : tensor<1024xf32> -> f32
  %n = tile.reduce min %w {axis = 0 : i32} : tensor<1024xi32> -> i32
  %a = tile.reduce argmax %v {axis = 0 : i32} : tensor<1024xf32> -> i32
  %t = arith.addf %s, %m : f32
  tile.store %x, %t : !tile.ptr<f32>, f32
  %u = arith.addi %n, %a : i32
  tile.store %i, %u : !tile.ptr<i32>, i32
  return
}

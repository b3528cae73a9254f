// tile-assign-layouts on hand-written tile IR: every tile's type gets the
// layout its threads hold it in, and tile.convert_layout appears where an op
// needs an operand in another one.
// RUN: tile-opt %s --split-input-file --tile-assign-layouts | FileCheck %s
// Distribution lowers what the pass assigned, each value where its type says.
// RUN: tile-opt %s --split-input-file --tile-assign-layouts --convert-tile-to-gpu | FileCheck %s --check-prefix=GPU
// The same with sm_90's vector reds (what stc asks for there).
// RUN: tile-opt %s --split-input-file --tile-assign-layouts --convert-tile-to-gpu=vector-atomics=1 | FileCheck %s --check-prefix=RED

// A dot in a K loop: its accumulator is in the mma.sync layout (4 warps
// split the 64 rows), so the zeros it starts from are converted once before
// the loop and the loop carries the mma layout. The row max stays in the
// accumulator's threads (#tile.slice of the mma layout: a row's 64 columns
// lie in one lane quad), its broadcast back over the rows is evaluated in
// the mma layout, where acc - max needs no conversion; the splat of 1.0 is
// converted to it. Loads, pointers and index tiles are blocked: runs of 8
// (16 bytes of f16, the narrowest type the kernel loads).
// CHECK-DAG:   #[[B:blocked[0-9]*]] = #tile.blocked<vec = 8, threads = 128>
// CHECK-DAG:   #[[MMA:mma[0-9]*]] = #tile.mma<warps_m = 4, warps_n = 1>
// CHECK-DAG:   #[[ROW:slice[0-9]*]] = #tile.slice<axis = 1, size = 64, parent = #[[MMA]]>
// CHECK-LABEL: func.func @dot_loop
// CHECK:         %[[Z:.*]] = tile.splat %{{.*}} : f32 -> tensor<64x64xf32, #[[B]]>
// CHECK:         %[[ZM:.*]] = tile.convert_layout %[[Z]] : tensor<64x64xf32, #[[B]]> -> tensor<64x64xf32, #[[MMA]]>
// CHECK:         %[[ACC:.*]] = scf.for {{.*}} iter_args(%[[C:.*]] = %[[ZM]]) -> (tensor<64x64xf32, #[[MMA]]>)
// CHECK:           tile.load {{.*}} -> tensor<64x32xf16, #[[B]]>
// CHECK:           tile.dot {{.*}}, %[[C]] : tensor<64x32xf16, #[[B]]>, tensor<32x64xf16, #[[B]]>, tensor<64x64xf32, #[[MMA]]> -> tensor<64x64xf32, #[[MMA]]>
// CHECK:         %[[MX:.*]] = tile.reduce max %[[ACC]] {axis = 1 : i32} : tensor<64x64xf32, #[[MMA]]> -> tensor<64xf32, #[[ROW]]>
// CHECK:         tile.expand_dims %[[MX]] {axis = 1 : i32} : tensor<64xf32, #[[ROW]]> -> tensor<64x1xf32, #[[MMA]]>
// CHECK:         %[[MB:.*]] = tile.broadcast {{.*}} -> tensor<64x64xf32, #[[MMA]]>
// CHECK-NOT:     tile.convert_layout
// CHECK:         %[[P:.*]] = arith.subf %[[ACC]], %[[MB]] : tensor<64x64xf32, #[[MMA]]>
// CHECK:         %[[ONES:.*]] = tile.convert_layout %{{.*}} : tensor<64x64xf32, #[[B]]> -> tensor<64x64xf32, #[[MMA]]>
// CHECK:         arith.addf %[[P]], %[[ONES]] : tensor<64x64xf32, #[[MMA]]>
// CHECK:         tile.store {{.*}} : tensor<64x!tile.ptr<f32>, #{{.*}}>, tensor<64xf32, #[[ROW]]>
// The row max is combined by butterfly shuffles over the quad's two lane
// bits, not through shared memory.
// GPU-LABEL:   gpu.func @dot_loop
// GPU:         scf.for
// GPU:         gpu.shuffle xor %{{.*}}, %c1_i32
// GPU:         gpu.shuffle xor %{{.*}}, %c2_i32
func.func @dot_loop(%pa: !tile.ptr<f16>, %pb: !tile.ptr<f16>, %pc: !tile.ptr<f32>,
                    %pm: !tile.ptr<f32>, %n: i32)
    attributes {tile.kernel, tile.num_warps = 4 : i32} {
  %c0 = arith.constant 0 : i32
  %c32 = arith.constant 32 : i32
  %zero = arith.constant 0.0 : f32
  %one = arith.constant 1.0 : f32
  %r = tile.arange 0, 2048 : tensor<2048xi32>
  %ra = tile.reshape %r : tensor<2048xi32> -> tensor<64x32xi32>
  %rb = tile.reshape %r : tensor<2048xi32> -> tensor<32x64xi32>
  %a0 = tile.splat %pa : !tile.ptr<f16> -> tensor<64x32x!tile.ptr<f16>>
  %ap = tile.addptr %a0, %ra : tensor<64x32x!tile.ptr<f16>>, tensor<64x32xi32>
  %b0 = tile.splat %pb : !tile.ptr<f16> -> tensor<32x64x!tile.ptr<f16>>
  %bp = tile.addptr %b0, %rb : tensor<32x64x!tile.ptr<f16>>, tensor<32x64xi32>
  %z = tile.splat %zero : f32 -> tensor<64x64xf32>
  %acc = scf.for %k = %c0 to %n step %c32 iter_args(%c = %z) -> (tensor<64x64xf32>) : i32 {
    %a = tile.load %ap : tensor<64x32x!tile.ptr<f16>> -> tensor<64x32xf16>
    %b = tile.load %bp : tensor<32x64x!tile.ptr<f16>> -> tensor<32x64xf16>
    %d = tile.dot %a, %b, %c : tensor<64x32xf16>, tensor<32x64xf16>, tensor<64x64xf32> -> tensor<64x64xf32>
    scf.yield %d : tensor<64x64xf32>
  }
  %mx = tile.reduce max %acc {axis = 1 : i32} : tensor<64x64xf32> -> tensor<64xf32>
  %mx1 = tile.expand_dims %mx {axis = 1 : i32} : tensor<64xf32> -> tensor<64x1xf32>
  %mxb = tile.broadcast %mx1 : tensor<64x1xf32> -> tensor<64x64xf32>
  %p = arith.subf %acc, %mxb : tensor<64x64xf32>
  %ones = tile.splat %one : f32 -> tensor<64x64xf32>
  %q = arith.addf %p, %ones : tensor<64x64xf32>
  %rc = tile.reshape %r : tensor<2048xi32> -> tensor<32x64xi32>
  %rc2 = tile.arange 0, 4096 : tensor<4096xi32>
  %rc3 = tile.reshape %rc2 : tensor<4096xi32> -> tensor<64x64xi32>
  %c0p = tile.splat %pc : !tile.ptr<f32> -> tensor<64x64x!tile.ptr<f32>>
  %cp = tile.addptr %c0p, %rc3 : tensor<64x64x!tile.ptr<f32>>, tensor<64x64xi32>
  tile.store %cp, %q : tensor<64x64x!tile.ptr<f32>>, tensor<64x64xf32>
  %r64 = tile.arange 0, 64 : tensor<64xi32>
  %m0 = tile.splat %pm : !tile.ptr<f32> -> tensor<64x!tile.ptr<f32>>
  %mp = tile.addptr %m0, %r64 : tensor<64x!tile.ptr<f32>>, tensor<64xi32>
  tile.store %mp, %mx : tensor<64x!tile.ptr<f32>>, tensor<64xf32>
  return
}

// -----

// A [64, 4] f32 tile over 2 warps, 16-byte aligned: each thread holds a row
// (a run of 4), so the sum along the row stays in its thread (#tile.slice
// of the blocked layout) and reaches the store without moving.
// CHECK-DAG:   #[[RB:blocked[0-9]*]] = #tile.blocked<vec = 4, threads = 64>
// CHECK-DAG:   #[[RS:slice[0-9]*]] = #tile.slice<axis = 1, size = 4, parent = #[[RB]]>
// CHECK-LABEL: func.func @row_sums
// CHECK:         %[[X:.*]] = tile.load {{.*}} -> tensor<64x4xf32, #[[RB]]>
// CHECK:         tile.reduce sum %[[X]] {axis = 1 : i32} : tensor<64x4xf32, #[[RB]]> -> tensor<64xf32, #[[RS]]>
// CHECK-NOT:     tile.convert_layout
// GPU-LABEL:   gpu.func @row_sums
// GPU-NOT:     gpu.barrier
// GPU-NOT:     gpu.shuffle
// GPU:         gpu.return
func.func @row_sums(%px: !tile.ptr<f32> {tile.divisibility = 16 : i32},
                    %py: !tile.ptr<f32> {tile.divisibility = 16 : i32})
    attributes {tile.kernel, tile.num_warps = 2 : i32} {
  %c4 = arith.constant 4 : i32
  %rows = tile.arange 0, 64 : tensor<64xi32>
  %four = tile.splat %c4 : i32 -> tensor<64xi32>
  %rows4 = arith.muli %rows, %four : tensor<64xi32>
  %re = tile.expand_dims %rows4 {axis = 1 : i32} : tensor<64xi32> -> tensor<64x1xi32>
  %rb = tile.broadcast %re : tensor<64x1xi32> -> tensor<64x4xi32>
  %cols = tile.arange 0, 4 : tensor<4xi32>
  %ce = tile.expand_dims %cols {axis = 0 : i32} : tensor<4xi32> -> tensor<1x4xi32>
  %cb = tile.broadcast %ce : tensor<1x4xi32> -> tensor<64x4xi32>
  %r2 = arith.addi %rb, %cb : tensor<64x4xi32>
  %x0 = tile.splat %px : !tile.ptr<f32> -> tensor<64x4x!tile.ptr<f32>>
  %xp = tile.addptr %x0, %r2 : tensor<64x4x!tile.ptr<f32>>, tensor<64x4xi32>
  %x = tile.load %xp : tensor<64x4x!tile.ptr<f32>> -> tensor<64x4xf32>
  %s = tile.reduce sum %x {axis = 1 : i32} : tensor<64x4xf32> -> tensor<64xf32>
  %r64 = tile.arange 0, 64 : tensor<64xi32>
  %y0 = tile.splat %py : !tile.ptr<f32> -> tensor<64x!tile.ptr<f32>>
  %yp = tile.addptr %y0, %r64 : tensor<64x!tile.ptr<f32>>, tensor<64xi32>
  tile.store %yp, %s : tensor<64x!tile.ptr<f32>>, tensor<64xf32>
  return
}

// -----

// A branch carries a tile in the layout of what its `then` yields: the dot
// result's mma layout, so the `else` branch converts its blocked zeros.
// CHECK-DAG:   #[[IB:blocked[0-9]*]] = #tile.blocked<vec = 8, threads = 64>
// CHECK-DAG:   #[[IM:mma[0-9]*]] = #tile.mma<warps_m = 2, warps_n = 1>
// CHECK-LABEL: func.func @branch
// CHECK:         scf.if %{{.*}} -> (tensor<32x32xf32, #[[IM]]>)
// CHECK:           tile.dot {{.*}} -> tensor<32x32xf32, #[[IM]]>
// CHECK:         } else {
// CHECK:           %[[Z:.*]] = tile.convert_layout %{{.*}} : tensor<32x32xf32, #[[IB]]> -> tensor<32x32xf32, #[[IM]]>
// CHECK:           scf.yield %[[Z]] : tensor<32x32xf32, #[[IM]]>
func.func @branch(%pa: !tile.ptr<f16>, %pc: !tile.ptr<f32>, %flag: i1)
    attributes {tile.kernel, tile.num_warps = 2 : i32} {
  %zero = arith.constant 0.0 : f32
  %r = tile.arange 0, 1024 : tensor<1024xi32>
  %r2 = tile.reshape %r : tensor<1024xi32> -> tensor<32x32xi32>
  %a0 = tile.splat %pa : !tile.ptr<f16> -> tensor<32x32x!tile.ptr<f16>>
  %ap = tile.addptr %a0, %r2 : tensor<32x32x!tile.ptr<f16>>, tensor<32x32xi32>
  %z = tile.splat %zero : f32 -> tensor<32x32xf32>
  %y = scf.if %flag -> tensor<32x32xf32> {
    %a = tile.load %ap : tensor<32x32x!tile.ptr<f16>> -> tensor<32x32xf16>
    %d = tile.dot %a, %a, %z : tensor<32x32xf16>, tensor<32x32xf16>, tensor<32x32xf32> -> tensor<32x32xf32>
    scf.yield %d : tensor<32x32xf32>
  } else {
    scf.yield %z : tensor<32x32xf32>
  }
  %c0 = tile.splat %pc : !tile.ptr<f32> -> tensor<32x32x!tile.ptr<f32>>
  %cp = tile.addptr %c0, %r2 : tensor<32x32x!tile.ptr<f32>>, tensor<32x32xi32>
  tile.store %cp, %y : tensor<32x32x!tile.ptr<f32>>, tensor<32x32xf32>
  return
}

// -----

// A row of odd length: the mask may change inside any run of 4, so every
// access of the [1024] tiles is one element. The loads get runs of one
// (consecutive threads on consecutive elements, as Triton's coalescing
// gives), the pointers and mask are converted to them (index arithmetic,
// recomputed), and the add and the store stay there.
// CHECK-DAG:   #[[DEF:blocked[0-9]*]] = #tile.blocked<vec = 4, threads = 128>
// CHECK-DAG:   #[[ONE:blocked[0-9]*]] = #tile.blocked<vec = 1, threads = 128>
// CHECK-LABEL: func.func @odd_length
// CHECK:         %[[P:.*]] = tile.convert_layout %{{.*}} : tensor<1024x!tile.ptr<f32>, #[[DEF]]> -> tensor<1024x!tile.ptr<f32>, #[[ONE]]>
// CHECK:         %[[M:.*]] = tile.convert_layout %{{.*}} : tensor<1024xi1, #[[DEF]]> -> tensor<1024xi1, #[[ONE]]>
// CHECK:         %[[X:.*]] = tile.load %[[P]], %[[M]] : {{.*}} -> tensor<1024xf32, #[[ONE]]>
// CHECK:         arith.addf %[[X]], %{{.*}} : tensor<1024xf32, #[[ONE]]>
// CHECK:         tile.store {{.*}} : tensor<1024x!tile.ptr<f32>, #[[ONE]]>, tensor<1024xf32, #[[ONE]]>, tensor<1024xi1, #[[ONE]]>
// Lowered: scalar loads and stores, no exchange through shared memory.
// GPU-LABEL:   gpu.func @odd_length
// GPU-NOT:     gpu.barrier
// GPU-NOT:     vector<4xf32>
// GPU:         gpu.return
func.func @odd_length(%x: !tile.ptr<f32> {tile.divisibility = 16 : i32},
                      %y: !tile.ptr<f32> {tile.divisibility = 16 : i32},
                      %n: i32) attributes {tile.kernel, tile.num_warps = 4 : i32} {
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
  %a = tile.load %xp, %m : tensor<1024x!tile.ptr<f32>>, tensor<1024xi1> -> tensor<1024xf32>
  %b = arith.addf %a, %a : tensor<1024xf32>
  %yb = tile.splat %y : !tile.ptr<f32> -> tensor<1024x!tile.ptr<f32>>
  %yp = tile.addptr %yb, %offs : tensor<1024x!tile.ptr<f32>>, tensor<1024xi32>
  tile.store %yp, %b, %m : tensor<1024x!tile.ptr<f32>>, tensor<1024xf32>, tensor<1024xi1>
  return
}

// -----

// Layer norm backward's partial sums: f16 rows loaded in runs of 8 (16
// bytes), added as f32 into memory (a `red`: its result is unused). In runs
// of 8 each thread's 32 bytes would go as two 16-byte reds, each warp
// instruction covering half of every sector it touches; the reduction runs
// 16 bytes of its own element instead (4 f32), and the load of its shape
// follows, 8 bytes a thread: every red of a warp covers 512 contiguous
// bytes. The pointers are index arithmetic, converted where they are used.
// CHECK-DAG:   #[[DEF:blocked[0-9]*]] = #tile.blocked<vec = 8, threads = 128>
// CHECK-DAG:   #[[OWN:blocked[0-9]*]] = #tile.blocked<vec = 4, threads = 128>
// CHECK-LABEL: func.func @partial_sums
// CHECK:         %[[X:.*]] = tile.load {{.*}} -> tensor<1024xf16, #[[OWN]]>
// CHECK:         %[[XF:.*]] = arith.extf %[[X]] : tensor<1024xf16, #[[OWN]]> to tensor<1024xf32, #[[OWN]]>
// CHECK:         %[[P:.*]] = tile.convert_layout %{{.*}} : tensor<1024x!tile.ptr<f32>, #[[DEF]]> -> tensor<1024x!tile.ptr<f32>, #[[OWN]]>
// CHECK:         tile.atomic_rmw add relaxed gpu %[[P]], %[[XF]] : {{.*}} -> tensor<1024xf32, #[[OWN]]>
// An add whose old values are read (a counter) stays in the kernel's runs.
// (Had it added the loaded values, the loads would have stayed there too:
// moving them would cost more than the half sectors.)
// CHECK:         tile.atomic_rmw add relaxed gpu {{.*}} -> tensor<1024xf32, #[[DEF]]>
// Lowered: 8-byte loads, one 16-byte red a run (8 of them a thread), no
// exchange through shared memory; the counter's adds are scalar atoms.
// RED-LABEL:   gpu.func @partial_sums
// RED-NOT:     gpu.barrier
// RED-COUNT-2: llvm.load {{.*}} -> vector<4xf16>
// RED-NOT:     llvm.load {{.*}} -> vector<8xf16>
// RED-COUNT-2: red.relaxed.gpu.global.add.v4.f32
// RED-NOT:     gpu.barrier
// RED:         atom.relaxed.gpu.global.add.f32
// RED:         gpu.return
func.func @partial_sums(%x: !tile.ptr<f16> {tile.divisibility = 16 : i32},
                        %acc: !tile.ptr<f32> {tile.divisibility = 16 : i32},
                        %old: !tile.ptr<f32> {tile.divisibility = 16 : i32})
    attributes {tile.kernel, tile.num_warps = 4 : i32} {
  %r = tile.arange 0, 1024 : tensor<1024xi32>
  %xb = tile.splat %x : !tile.ptr<f16> -> tensor<1024x!tile.ptr<f16>>
  %xp = tile.addptr %xb, %r : tensor<1024x!tile.ptr<f16>>, tensor<1024xi32>
  %a = tile.load %xp : tensor<1024x!tile.ptr<f16>> -> tensor<1024xf16>
  %af = arith.extf %a : tensor<1024xf16> to tensor<1024xf32>
  %ab = tile.splat %acc : !tile.ptr<f32> -> tensor<1024x!tile.ptr<f32>>
  %ap = tile.addptr %ab, %r : tensor<1024x!tile.ptr<f32>>, tensor<1024xi32>
  %u = tile.atomic_rmw add relaxed gpu %ap, %af : tensor<1024x!tile.ptr<f32>>, tensor<1024xf32> -> tensor<1024xf32>
  %one = arith.constant 1.0 : f32
  %ones = tile.splat %one : f32 -> tensor<1024xf32>
  %v = tile.atomic_rmw add relaxed gpu %ap, %ones : tensor<1024x!tile.ptr<f32>>, tensor<1024xf32> -> tensor<1024xf32>
  %ob = tile.splat %old : !tile.ptr<f32> -> tensor<1024x!tile.ptr<f32>>
  %op = tile.addptr %ob, %r : tensor<1024x!tile.ptr<f32>>, tensor<1024xi32>
  tile.store %op, %v : tensor<1024x!tile.ptr<f32>>, tensor<1024xf32>
  return
}

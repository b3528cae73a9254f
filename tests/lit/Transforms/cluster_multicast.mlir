// tile-cluster-multicast: in a @cluster(2) kernel (tile.cluster = 2) whose
// ring tile-pipeline-tma built, the operand whose block positions and trip
// count are provably the same in both programs of a cluster (computed from
// tile.cluster_id, never program_id or tile.cluster_rank) gets its ring
// copies marked multicast: B when it qualifies, else A.
// RUN: tile-opt %s --split-input-file --verify-diagnostics --tile-pipeline-tma=tma=true --tile-cluster-multicast | FileCheck %s

// B's column from cluster_id: B is shared, A (rows from program_id) is not.
// CHECK-LABEL: func.func @share_b
// CHECK:       tile.producer {
// CHECK:         tile.ring_copy %arg0[{{.*}}] -> stage {{.*}} {cols = 64 : i64, layout = #tile.shared<swizzle = 128>, offset = 0 : i64, rows = 128 : i64} : <bf16>
// CHECK:         tile.ring_copy %arg1[{{.*}}] -> stage {{.*}} {cols = 64 : i64, layout = #tile.shared<swizzle = 128>, multicast, offset = 16384 : i64, rows = 128 : i64} : <bf16>
func.func @share_b(%a: !tile.desc<bf16>, %b: !tile.desc<bf16>, %k: i32)
    attributes {tile.kernel, tile.num_warps = 8 : i32, tile.cluster = 2 : i32} {
  %c0 = arith.constant 0 : i32
  %c64 = arith.constant 64 : i32
  %c128 = arith.constant 128 : i32
  %pid = tile.program_id 0 : i32
  %cid = tile.cluster_id : i32
  %m0 = arith.muli %pid, %c128 : i32
  %n0 = arith.muli %cid, %c128 : i32
  %zero = arith.constant 0.0 : f32
  %init = tile.splat %zero : f32 -> tensor<128x128xf32>
  %r = scf.for %kk = %c0 to %k step %c64 iter_args(%acc = %init) -> (tensor<128x128xf32>) : i32 {
    %ta = tile.desc_load %a[%m0, %kk] : !tile.desc<bf16> -> tensor<128x64xbf16>
    %tb = tile.desc_load %b[%n0, %kk] : !tile.desc<bf16> -> tensor<128x64xbf16>
    %tbt = tile.trans %tb : tensor<128x64xbf16> -> tensor<64x128xbf16>
    %d = tile.dot %ta, %tbt, %acc : tensor<128x64xbf16>, tensor<64x128xbf16>, tensor<128x128xf32> -> tensor<128x128xf32>
    scf.yield %d : tensor<128x128xf32>
  }
  return
}

// -----

// Only A's rows are the cluster's (through a scalar load at an address
// from cluster_id): A is shared.
// CHECK-LABEL: func.func @share_a
// CHECK:       tile.producer {
// CHECK:         tile.ring_copy %arg0[{{.*}}] -> stage {{.*}} {cols = 64 : i64, layout = #tile.shared<swizzle = 128>, multicast, offset = 0 : i64, rows = 128 : i64} : <bf16>
// CHECK:         tile.ring_copy %arg1[{{.*}}] -> stage {{.*}} {cols = 64 : i64, layout = #tile.shared<swizzle = 128>, offset = 16384 : i64, rows = 128 : i64} : <bf16>
func.func @share_a(%a: !tile.desc<bf16>, %b: !tile.desc<bf16>, %rows: !tile.ptr<i32>, %k: i32)
    attributes {tile.kernel, tile.num_warps = 8 : i32, tile.cluster = 2 : i32} {
  %c0 = arith.constant 0 : i32
  %c64 = arith.constant 64 : i32
  %c128 = arith.constant 128 : i32
  %pid = tile.program_id 0 : i32
  %cid = tile.cluster_id : i32
  %p = tile.addptr %rows, %cid : !tile.ptr<i32>, i32
  %m0 = tile.load %p : !tile.ptr<i32> -> i32
  %n0 = arith.muli %pid, %c128 : i32
  %zero = arith.constant 0.0 : f32
  %init = tile.splat %zero : f32 -> tensor<128x128xf32>
  %r = scf.for %kk = %c0 to %k step %c64 iter_args(%acc = %init) -> (tensor<128x128xf32>) : i32 {
    %ta = tile.desc_load %a[%m0, %kk] : !tile.desc<bf16> -> tensor<128x64xbf16>
    %tb = tile.desc_load %b[%n0, %kk] : !tile.desc<bf16> -> tensor<128x64xbf16>
    %tbt = tile.trans %tb : tensor<128x64xbf16> -> tensor<64x128xbf16>
    %d = tile.dot %ta, %tbt, %acc : tensor<128x64xbf16>, tensor<64x128xbf16>, tensor<128x128xf32> -> tensor<128x128xf32>
    scf.yield %d : tensor<128x128xf32>
  }
  return
}

// -----

// Both blocks are the cluster's, but the K loop's length is the program's:
// the two programs' rings would fall out of step.
func.func @uneven_trips(%a: !tile.desc<bf16>, %b: !tile.desc<bf16>)
    attributes {tile.kernel, tile.num_warps = 8 : i32, tile.cluster = 2 : i32} {
  %c0 = arith.constant 0 : i32
  %c64 = arith.constant 64 : i32
  %pid = tile.program_id 0 : i32
  %k = arith.muli %pid, %c64 : i32
  %zero = arith.constant 0.0 : f32
  %init = tile.splat %zero : f32 -> tensor<128x128xf32>
  // expected-error @+1 {{@cluster: the programs of a cluster must load the same block of one dot operand}}
  %r = scf.for %kk = %c0 to %k step %c64 iter_args(%acc = %init) -> (tensor<128x128xf32>) : i32 {
    %ta = tile.desc_load %a[%c0, %kk] : !tile.desc<bf16> -> tensor<128x64xbf16>
    %tb = tile.desc_load %b[%c0, %kk] : !tile.desc<bf16> -> tensor<128x64xbf16>
    %tbt = tile.trans %tb : tensor<128x64xbf16> -> tensor<64x128xbf16>
    %d = tile.dot %ta, %tbt, %acc : tensor<128x64xbf16>, tensor<64x128xbf16>, tensor<128x128xf32> -> tensor<128x128xf32>
    scf.yield %d : tensor<128x128xf32>
  }
  return
}

// sparsetile-pack-byte-stores on its own: a vector store whose lane i is
// trunci(W >> i*K) of one integer W stores W's low bits; any other vector
// is stored as it was.
// RUN: tile-opt %s --sparsetile-pack-byte-stores | FileCheck %s

// CHECK-LABEL: func.func @word(
// CHECK-SAME: %[[W:.*]]: i32, %[[P:.*]]: !llvm.ptr<1>
// CHECK: llvm.store %[[W]], %[[P]] {alignment = 4 : i64} : i32, !llvm.ptr<1>
func.func @word(%w: i32, %p: !llvm.ptr<1>) {
  %c0 = arith.constant 0 : i32
  %c1 = arith.constant 1 : i32
  %c2 = arith.constant 2 : i32
  %c3 = arith.constant 3 : i32
  %c8 = arith.constant 8 : i32
  %c16 = arith.constant 16 : i32
  %c24 = arith.constant 24 : i32
  %s1 = arith.shrsi %w, %c8 : i32
  %s2 = arith.shrui %w, %c16 : i32
  %s3 = arith.shrui %w, %c24 : i32
  %b0 = arith.trunci %w : i32 to i8
  %b1 = arith.trunci %s1 : i32 to i8
  %b2 = arith.trunci %s2 : i32 to i8
  %b3 = arith.trunci %s3 : i32 to i8
  %v = llvm.mlir.poison : vector<4xi8>
  %v0 = llvm.insertelement %b0, %v[%c0 : i32] : vector<4xi8>
  %v1 = llvm.insertelement %b1, %v0[%c1 : i32] : vector<4xi8>
  %v2 = llvm.insertelement %b2, %v1[%c2 : i32] : vector<4xi8>
  %v3 = llvm.insertelement %b3, %v2[%c3 : i32] : vector<4xi8>
  llvm.store %v3, %p {alignment = 4 : i64} : vector<4xi8>, !llvm.ptr<1>
  return
}

// A wider word gives its low bits.
// CHECK-LABEL: func.func @wide(
// CHECK: %[[T:.*]] = arith.trunci %{{.*}} : i64 to i16
// CHECK: llvm.store %[[T]], %{{.*}} {alignment = 2 : i64} : i16, !llvm.ptr<1>
func.func @wide(%w: i64, %p: !llvm.ptr<1>) {
  %c0 = arith.constant 0 : i32
  %c1 = arith.constant 1 : i32
  %c8 = arith.constant 8 : i64
  %s1 = arith.shrui %w, %c8 : i64
  %b0 = arith.trunci %w : i64 to i8
  %b1 = arith.trunci %s1 : i64 to i8
  %v = llvm.mlir.poison : vector<2xi8>
  %v0 = llvm.insertelement %b0, %v[%c0 : i32] : vector<2xi8>
  %v1 = llvm.insertelement %b1, %v0[%c1 : i32] : vector<2xi8>
  llvm.store %v1, %p {alignment = 2 : i64} : vector<2xi8>, !llvm.ptr<1>
  return
}

// Not one word's pieces in order: lanes swapped, a lane of another word, a
// lane never set, pieces past the word's width. Each store stays a vector.
// CHECK-LABEL: func.func @kept(
// CHECK-COUNT-3: llvm.store {{.*}} : vector<2xi8>, !llvm.ptr<1>
// CHECK: llvm.store {{.*}} : vector<4xi8>, !llvm.ptr<1>
// CHECK-NOT: llvm.store
func.func @kept(%w: i32, %x: i32, %h: i16, %p: !llvm.ptr<1>) {
  %c0 = arith.constant 0 : i32
  %c1 = arith.constant 1 : i32
  %c8 = arith.constant 8 : i32
  %s1 = arith.shrui %w, %c8 : i32
  %b0 = arith.trunci %w : i32 to i8
  %b1 = arith.trunci %s1 : i32 to i8
  %xs1 = arith.shrui %x, %c8 : i32
  %x1 = arith.trunci %xs1 : i32 to i8
  %v = llvm.mlir.poison : vector<2xi8>
  // Swapped.
  %a0 = llvm.insertelement %b1, %v[%c0 : i32] : vector<2xi8>
  %a1 = llvm.insertelement %b0, %a0[%c1 : i32] : vector<2xi8>
  llvm.store %a1, %p : vector<2xi8>, !llvm.ptr<1>
  // Lane 1 from another word.
  %d0 = llvm.insertelement %b0, %v[%c0 : i32] : vector<2xi8>
  %d1 = llvm.insertelement %x1, %d0[%c1 : i32] : vector<2xi8>
  llvm.store %d1, %p : vector<2xi8>, !llvm.ptr<1>
  // Lane 1 never set.
  llvm.store %d0, %p : vector<2xi8>, !llvm.ptr<1>
  // An i16 word has no bytes 2 and 3.
  %c2 = arith.constant 2 : i32
  %c3 = arith.constant 3 : i32
  %h8 = arith.constant 8 : i16
  %h16 = arith.constant 16 : i16
  %h24 = arith.constant 24 : i16
  %hs1 = arith.shrsi %h, %h8 : i16
  %hs2 = arith.shrsi %h, %h16 : i16
  %hs3 = arith.shrsi %h, %h24 : i16
  %h0 = arith.trunci %h : i16 to i8
  %h1 = arith.trunci %hs1 : i16 to i8
  %h2 = arith.trunci %hs2 : i16 to i8
  %h3 = arith.trunci %hs3 : i16 to i8
  %u = llvm.mlir.poison : vector<4xi8>
  %e0 = llvm.insertelement %h0, %u[%c0 : i32] : vector<4xi8>
  %e1 = llvm.insertelement %h1, %e0[%c1 : i32] : vector<4xi8>
  %e2 = llvm.insertelement %h2, %e1[%c2 : i32] : vector<4xi8>
  %e3 = llvm.insertelement %h3, %e2[%c3 : i32] : vector<4xi8>
  llvm.store %e3, %p : vector<4xi8>, !llvm.ptr<1>
  return
}

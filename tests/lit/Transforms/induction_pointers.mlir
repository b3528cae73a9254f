// tile-induction-pointers: a pointer tile the K loop advances by a
// loop-invariant offset (`p += 64`, the splat computed in the body from
// values outside it) becomes p0 + inc * ((k - lo) / step); the loop stops
// carrying it, and the final pointer after the loop is p0 + inc * trips.
// A pointer advanced by something the loop computes (here k itself) stays
// carried, and loops without a dot are left alone.
// RUN: tile-opt %s --split-input-file --tile-induction-pointers | FileCheck %s

// CHECK-LABEL: func.func @carried
// CHECK:       %[[INC:.*]] = tile.splat %c64{{.*}} : i32 -> tensor<16x16xi32>
// CHECK:       %[[R:.*]]:2 = scf.for %[[K:.*]] = %[[LO:[^ ]*]] to %{{.*}} step %[[S:[^ ]*]] iter_args(%{{.*}} = %{{.*}}, %[[Q:.*]] = %{{.*}}) -> (tensor<16x16xf32>, tensor<16x16x!tile.ptr<f16>>)
// CHECK-NEXT:    %[[D:.*]] = arith.subi %[[K]], %[[LO]] : i32
// CHECK-NEXT:    %[[T:.*]] = arith.divsi %[[D]], %[[S]] : i32
// CHECK-NEXT:    %[[TS:.*]] = tile.splat %[[T]] : i32 -> tensor<16x16xi32>
// CHECK-NEXT:    %[[OFF:.*]] = arith.muli %[[INC]], %[[TS]] : tensor<16x16xi32>
// CHECK-NEXT:    %[[P:.*]] = tile.addptr %[[PA:.*]], %[[OFF]]
// CHECK:         tile.load %[[P]]
// CHECK:         tile.load %[[Q]]
// CHECK-NOT:     tile.addptr %[[P]]
// CHECK:         tile.addptr %[[Q]]
// CHECK:       arith.maxsi
// CHECK:       %[[LAST:.*]] = tile.addptr %[[PA]]
// CHECK:       tile.store %[[LAST]]
func.func @carried(%a: !tile.ptr<f16>, %b: !tile.ptr<f16>, %lo: i32, %n: i32)
    attributes {tile.kernel} {
  %c2 = arith.constant 2 : i32
  %c64 = arith.constant 64 : i32
  %zero = arith.constant 0.0 : f32
  %init = tile.splat %zero : f32 -> tensor<16x16xf32>
  %pa = tile.splat %a : !tile.ptr<f16> -> tensor<16x16x!tile.ptr<f16>>
  %pb = tile.splat %b : !tile.ptr<f16> -> tensor<16x16x!tile.ptr<f16>>
  %r:3 = scf.for %k = %lo to %n step %c2 iter_args(%acc = %init, %p = %pa, %q = %pb) -> (tensor<16x16xf32>, tensor<16x16x!tile.ptr<f16>>, tensor<16x16x!tile.ptr<f16>>) : i32 {
    %x = tile.load %p : tensor<16x16x!tile.ptr<f16>> -> tensor<16x16xf16>
    %y = tile.load %q : tensor<16x16x!tile.ptr<f16>> -> tensor<16x16xf16>
    %d = tile.dot %x, %y, %acc : tensor<16x16xf16>, tensor<16x16xf16>, tensor<16x16xf32> -> tensor<16x16xf32>
    %inc = tile.splat %c64 : i32 -> tensor<16x16xi32>
    %p2 = tile.addptr %p, %inc : tensor<16x16x!tile.ptr<f16>>, tensor<16x16xi32>
    %kk = tile.splat %k : i32 -> tensor<16x16xi32>
    %q2 = tile.addptr %q, %kk : tensor<16x16x!tile.ptr<f16>>, tensor<16x16xi32>
    scf.yield %d, %p2, %q2 : tensor<16x16xf32>, tensor<16x16x!tile.ptr<f16>>, tensor<16x16x!tile.ptr<f16>>
  }
  %h = arith.truncf %r#0 : tensor<16x16xf32> to tensor<16x16xf16>
  tile.store %r#1, %h : tensor<16x16x!tile.ptr<f16>>, tensor<16x16xf16>
  return
}

// -----

// CHECK-LABEL: func.func @no_dot
// CHECK:       scf.for {{.*}} iter_args(%{{.*}} = %{{.*}}) -> (tensor<16x!tile.ptr<f32>>)
// CHECK:         tile.addptr
func.func @no_dot(%a: !tile.ptr<f32>, %n: i32) attributes {tile.kernel} {
  %c0 = arith.constant 0 : i32
  %c1 = arith.constant 1 : i32
  %c16 = arith.constant 16 : i32
  %one = arith.constant 1.0 : f32
  %pa = tile.splat %a : !tile.ptr<f32> -> tensor<16x!tile.ptr<f32>>
  %v = tile.splat %one : f32 -> tensor<16xf32>
  %inc = tile.splat %c16 : i32 -> tensor<16xi32>
  %r = scf.for %k = %c0 to %n step %c1 iter_args(%p = %pa) -> (tensor<16x!tile.ptr<f32>>) : i32 {
    tile.store %p, %v : tensor<16x!tile.ptr<f32>>, tensor<16xf32>
    %p2 = tile.addptr %p, %inc : tensor<16x!tile.ptr<f32>>, tensor<16xi32>
    scf.yield %p2 : tensor<16x!tile.ptr<f32>>
  }
  return
}

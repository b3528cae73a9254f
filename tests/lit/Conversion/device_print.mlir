// tile.print lowers to gpu.printf, one per element a thread owns, under
// `tid < threads` (replicas do not print; a scalar prints from thread 0),
// with the program id, the element's coordinates and the prefix; floats are
// promoted to double as C's varargs are. The stc test below checks that
// the pipeline turns it into vprintf.
// RUN: tile-opt %s --convert-tile-to-gpu | FileCheck %s

// CHECK-LABEL: gpu.func @print
// CHECK:       %[[OWN:.*]] = arith.cmpi ult, %{{.*}}, %c2_i32 : i32
// CHECK:       scf.if %[[OWN]] {
// CHECK:         %[[D:.*]] = arith.extf %{{.*}} : f32 to f64
// CHECK:         gpu.printf "pid (%d, %d, %d) idx (%d, %d) x = %f\0A", %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %[[D]] : i32, i32, i32, i32, i32, f64
// CHECK:       %[[ZERO:.*]] = arith.cmpi eq, %{{.*}}, %c0_i32 : i32
// CHECK:       scf.if %[[ZERO]] {
// CHECK:         gpu.printf "pid (%d, %d, %d) idx () x = %lld\0A"
func.func @print(%x: !tile.ptr<f32>, %n: i64) attributes {tile.kernel, tile.num_warps = 4 : i32} {
  %r = tile.arange 0, 2 : tensor<2xi32>
  %c = tile.expand_dims %r {axis = 1 : i32} : tensor<2xi32> -> tensor<2x1xi32>
  %b = tile.broadcast %c : tensor<2x1xi32> -> tensor<2x4xi32>
  %p = tile.splat %x : !tile.ptr<f32> -> tensor<2x4x!tile.ptr<f32>>
  %q = tile.addptr %p, %b : tensor<2x4x!tile.ptr<f32>>, tensor<2x4xi32>
  %v = tile.load %q : tensor<2x4x!tile.ptr<f32>> -> tensor<2x4xf32>
  tile.print "x =" %v, %n : tensor<2x4xf32>, i64
  return
}

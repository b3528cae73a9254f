// tile-persistent: a @persistent(1) kernel gets the launch's grid as two
// hidden i32 parameters and loops over it, one virtual program per step of
// num_programs(0); program_id and num_programs of the body become the
// virtual program's coordinates and the grid asked for.
// RUN: tile-opt %s --tile-persistent | FileCheck %s

// CHECK-LABEL: func.func @tiles(%arg0: !tile.ptr<i32>, %arg1: i32, %arg2: i32)
// CHECK:       %[[FIRST:.*]] = tile.program_id 0 : i32
// CHECK:       %[[STEP:.*]] = tile.num_programs 0 : i32
// CHECK:       %[[TOTAL:.*]] = arith.muli %arg1, %arg2 : i32
// CHECK:       scf.for %[[V:.*]] = %[[FIRST]] to %[[TOTAL]] step %[[STEP]]
// CHECK:         %[[X:.*]] = arith.remsi %[[V]], %arg1
// CHECK:         %[[Y:.*]] = arith.divsi %[[V]], %arg1
// CHECK-NOT:     tile.program_id
// CHECK-NOT:     tile.num_programs
// CHECK:         arith.muli %[[Y]], %arg1
// CHECK:         arith.addi {{.*}}, %[[X]]
// CHECK:         tile.store
// CHECK:       }
// CHECK-NEXT:  return
func.func @tiles(%out: !tile.ptr<i32>)
    attributes {tile.kernel, tile.num_warps = 4 : i32, tile.persistent = 1 : i32} {
  %x = tile.program_id 0 : i32
  %y = tile.program_id 1 : i32
  %nx = tile.num_programs 0 : i32
  %row = arith.muli %y, %nx : i32
  %i = arith.addi %row, %x : i32
  %p = tile.addptr %out, %i : !tile.ptr<i32>, i32
  tile.store %p, %i : !tile.ptr<i32>, i32
  return
}

// A kernel without the attribute is left alone.
// CHECK-LABEL: func.func @plain(%arg0: !tile.ptr<i32>)
// CHECK-NOT:   scf.for
func.func @plain(%out: !tile.ptr<i32>)
    attributes {tile.kernel, tile.num_warps = 4 : i32} {
  %x = tile.program_id 0 : i32
  %p = tile.addptr %out, %x : !tile.ptr<i32>, i32
  tile.store %p, %x : !tile.ptr<i32>, i32
  return
}

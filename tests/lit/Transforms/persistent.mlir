// tile-persistent: a @persistent(1) kernel gets the launch's grid as two
// hidden i32 parameters and a tile queue (a hidden pointer), and loops:
// step i runs the virtual program tile.next_tile hands out, until one is
// past the grid. program_id and num_programs of the body become the
// virtual program's coordinates and the grid asked for.
// RUN: tile-opt %s --tile-persistent | FileCheck %s

// CHECK-LABEL: func.func @tiles(%arg0: !tile.ptr<i32>, %arg1: i32, %arg2: i32, %arg3: !tile.ptr<i32>)
// CHECK:       %[[TOTAL:.*]] = arith.muli %arg1, %arg2 : i32
// CHECK:       %[[ZERO:.*]] = arith.constant 0 : i32
// CHECK:       scf.while (%[[I:.*]] = %[[ZERO]]) : (i32) -> (i32, i32) {
// CHECK:         %[[V:.*]] = tile.next_tile %[[I]], %[[TOTAL]], %arg3 : i32, !tile.ptr<i32>
// CHECK:         %[[MORE:.*]] = arith.cmpi slt, %[[V]], %[[TOTAL]] : i32
// CHECK:         scf.condition(%[[MORE]]) %[[I]], %[[V]] : i32, i32
// CHECK:       } do {
// CHECK:       ^bb0(%[[STEP:.*]]: i32, %[[TILE:.*]]: i32):
// CHECK:         %[[X:.*]] = arith.remsi %[[TILE]], %arg1
// CHECK:         %[[Y:.*]] = arith.divsi %[[TILE]], %arg1
// CHECK-NOT:     tile.program_id
// CHECK-NOT:     tile.num_programs
// CHECK:         arith.muli %[[Y]], %arg1
// CHECK:         arith.addi {{.*}}, %[[X]]
// CHECK:         tile.store
// CHECK:         scf.yield %{{.*}} : i32
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
// CHECK-NOT:   scf.while
func.func @plain(%out: !tile.ptr<i32>)
    attributes {tile.kernel, tile.num_warps = 4 : i32} {
  %x = tile.program_id 0 : i32
  %p = tile.addptr %out, %x : !tile.ptr<i32>, i32
  tile.store %p, %x : !tile.ptr<i32>, i32
  return
}

// tile-persistent: a @persistent(1) kernel gets the launch's grid as two
// hidden i32 parameters and a tile queue (a hidden pointer), and loops:
// step i runs the virtual program tile.next_tile hands out, until one is
// past the grid. program_id and num_programs of the body become the
// virtual program's coordinates and the grid asked for.
// RUN: tile-opt %s --tile-persistent | FileCheck %s
// The persistent 2:4 GEMMs place their tile by cluster_id(): after the
// pass none may be left to read the physical block (they once were, and
// every step of a program recomputed its first tile).
// RUN: stc %examples/sparse24.tile --kernel sparse_linear_tma --div16 all -D PERSISTENT=1 --emit=pipelined | FileCheck %s --check-prefix=KERNEL
// RUN: stc %examples/sparse24.tile --kernel sparse_grad_w_tma --div16 all -D PERSISTENT=1 --emit=pipelined | FileCheck %s --check-prefix=KERNEL
// KERNEL:     tile.next_tile
// KERNEL-NOT: tile.cluster_id
// KERNEL-NOT: tile.cluster_rank

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

// tile.program_limit: the persistent loop's total becomes min(grid, %n),
// the value's ops (here a load of a count an earlier kernel wrote) hoisted
// ahead of the loop and run once; the op itself is gone.
// CHECK-LABEL: func.func @limited(%arg0: !tile.ptr<i32>, %arg1: !tile.ptr<i32>, %arg2: i32, %arg3: i32, %arg4: !tile.ptr<i32>)
// CHECK:       %[[N:.*]] = tile.load %arg0
// CHECK:       %[[GRID:.*]] = arith.muli %arg2, %arg3 : i32
// CHECK:       %[[TOTAL:.*]] = arith.minsi %[[GRID]], %[[N]] : i32
// CHECK:       scf.while
// CHECK:         tile.next_tile %{{.*}}, %[[TOTAL]], %arg4
// CHECK:         arith.cmpi slt, %{{.*}}, %[[TOTAL]]
// CHECK-NOT:   tile.program_limit
// CHECK:       return
func.func @limited(%count: !tile.ptr<i32>, %out: !tile.ptr<i32>)
    attributes {tile.kernel, tile.num_warps = 4 : i32, tile.persistent = 1 : i32} {
  %x = tile.program_id 0 : i32
  %n = tile.load %count : !tile.ptr<i32> -> i32
  tile.program_limit %n : i32
  %p = tile.addptr %out, %x : !tile.ptr<i32>, i32
  tile.store %p, %x : !tile.ptr<i32>, i32
  return
}

// One tile per program: what follows the op runs where the linear program
// id is below %n.
// CHECK-LABEL: func.func @guarded(%arg0: !tile.ptr<i32>, %arg1: !tile.ptr<i32>)
// CHECK:       %[[N:.*]] = tile.load %arg0
// CHECK:       %[[X:.*]] = tile.program_id 0
// CHECK:       %[[Y:.*]] = tile.program_id 1
// CHECK:       %[[GX:.*]] = tile.num_programs 0
// CHECK:       %[[ROW:.*]] = arith.muli %[[Y]], %[[GX]]
// CHECK:       %[[LIN:.*]] = arith.addi %[[X]], %[[ROW]]
// CHECK:       %[[GO:.*]] = arith.cmpi slt, %[[LIN]], %[[N]]
// CHECK:       scf.if %[[GO]] {
// CHECK:         tile.store
// CHECK:       }
// CHECK-NEXT:  return
func.func @guarded(%count: !tile.ptr<i32>, %out: !tile.ptr<i32>)
    attributes {tile.kernel, tile.num_warps = 4 : i32} {
  %n = tile.load %count : !tile.ptr<i32> -> i32
  tile.program_limit %n : i32
  %x = tile.program_id 0 : i32
  %p = tile.addptr %out, %x : !tile.ptr<i32>, i32
  tile.store %p, %x : !tile.ptr<i32>, i32
  return
}

// cluster_id() and cluster_rank() in the body are the virtual program's
// too (program_id(0) / C and % C; C = 1 here): a kernel that places its
// tile by cluster would otherwise recompute its first tile at every step.
// CHECK-LABEL: func.func @by_cluster
// CHECK:       } do {
// CHECK:       ^bb0(%{{.*}}: i32, %[[T:.*]]: i32):
// CHECK:         %[[X:.*]] = arith.remsi %[[T]], %arg1
// CHECK:         %[[C:.*]] = arith.constant 1 : i32
// CHECK:         %[[ID:.*]] = arith.divsi %[[X]], %[[C]]
// CHECK:         %[[RANK:.*]] = arith.remsi %[[X]], %[[C]]
// CHECK-NOT:     tile.cluster_id
// CHECK-NOT:     tile.cluster_rank
// CHECK:         arith.addi %[[ID]], %[[RANK]]
func.func @by_cluster(%out: !tile.ptr<i32>)
    attributes {tile.kernel, tile.num_warps = 4 : i32, tile.persistent = 1 : i32,
                tile.cluster = 1 : i32} {
  %c = tile.cluster_id : i32
  %r = tile.cluster_rank : i32
  %i = arith.addi %c, %r : i32
  %p = tile.addptr %out, %i : !tile.ptr<i32>, i32
  tile.store %p, %i : !tile.ptr<i32>, i32
  return
}

// The ring's side of the layout contract: a tile.ring_dot reads each block
// of its stage in the #tile.shared layout that the copy filling that offset
// wrote it in. A hand-written or wrongly rewritten ring where they differ
// (here A copied at the 128-byte swizzle, read as 64-byte panels) is an
// error at the ring_dot in convert-tile-to-gpu, naming the copy, not a
// kernel whose wgmma descriptors read the wrong bytes.
// RUN: not tile-opt %s --convert-tile-to-gpu 2>&1 | FileCheck %s
// CHECK: error: 'tile.ring_dot' op reads A at stage offset 0 as #tile.shared<swizzle = 64>, but a copy wrote it as #tile.shared<swizzle = 128>
// CHECK: note: the copy
func.func @k(%a: !tile.desc<bf16>, %b: !tile.desc<bf16>,
             %acc: tensor<128x128xf32>)
    attributes {tile.kernel, tile.num_warps = 4 : i32,
                tile.ring = #tile.ring<stages = 2, stage_bytes = 32768>} {
  %c0 = arith.constant 0 : i32
  tile.ring_init
  tile.ring_expect %c0 {bytes = 32768 : i64}
  tile.ring_copy %a[%c0, %c0] -> stage %c0 {cols = 64 : i64, layout = #tile.shared<swizzle = 128>, offset = 0 : i64, rows = 128 : i64} : <bf16>
  tile.ring_copy %b[%c0, %c0] -> stage %c0 {cols = 64 : i64, layout = #tile.shared<swizzle = 128>, offset = 16384 : i64, rows = 128 : i64} : <bf16>
  %r = tile.ring_dot %c0, %c0, %acc {a_kmajor = true, a_layout = #tile.shared<swizzle = 64>, a_offset = 0 : i64, b_kmajor = true, b_layout = #tile.shared<swizzle = 128>, b_offset = 16384 : i64, k = 64 : i64, operand_type = bf16} : tensor<128x128xf32> -> tensor<128x128xf32>
  return
}

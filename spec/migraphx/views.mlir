// Views: transpose, reshape (also of a transposed value), slice, broadcast with an axis,
// an argument that is a sub-box of a larger buffer (strides of a 4x10 buffer for a 4x6
// value: the param is the 4x10 buffer, then a slice), and a permuted (column-major) one.
// KERNELS: transpose_reshape=1 slice_add=1 sliced_arg=1 broadcast_axis=1 colmajor_arg=1
module {
  func.func @transpose_reshape(%x: !migraphx.shaped<2x3x4xf32, 12x4x1>) -> !migraphx.shaped<4x6xf32, 6x1> {
    %0 = migraphx.transpose %x {permutation = [2, 0, 1]} : <2x3x4xf32, 12x4x1> -> <4x2x3xf32, 1x12x4>
    %1 = migraphx.reshape %0 {dims = [4, 6]} : <4x2x3xf32, 1x12x4> -> <4x6xf32, 6x1>
    %2 = migraphx.abs %1 : <4x6xf32, 6x1> -> <4x6xf32, 6x1>
    return %2 : !migraphx.shaped<4x6xf32, 6x1>
  }
  func.func @slice_add(%x: !migraphx.shaped<5x8xf32, 8x1>, %y: !migraphx.shaped<3x4xf32, 4x1>) -> !migraphx.shaped<3x4xf32, 4x1> {
    %0 = migraphx.slice %x {axes = [0, 1], starts = [1, 2], ends = [4, 6]} : <5x8xf32, 8x1> -> <3x4xf32, 8x1>
    %1 = migraphx.add %0, %y : <3x4xf32, 8x1>, <3x4xf32, 4x1> -> <3x4xf32, 4x1>
    return %1 : !migraphx.shaped<3x4xf32, 4x1>
  }
  func.func @sliced_arg(%x: !migraphx.shaped<4x6xf32, 10x1>) -> !migraphx.shaped<4x6xf32, 6x1> {
    %0 = migraphx.neg %x : <4x6xf32, 10x1> -> <4x6xf32, 6x1>
    return %0 : !migraphx.shaped<4x6xf32, 6x1>
  }
  func.func @broadcast_axis(%x: !migraphx.shaped<2x3x5xf32, 15x5x1>, %b: !migraphx.shaped<3xf32, 1>) -> !migraphx.shaped<2x3x5xf32, 15x5x1> {
    %0 = migraphx.broadcast %b {axis = 1 : i64, out_lens = [2, 3, 5]} : <3xf32, 1> -> <2x3x5xf32, 0x1x0>
    %1 = migraphx.mul %x, %0 : <2x3x5xf32, 15x5x1>, <2x3x5xf32, 0x1x0> -> <2x3x5xf32, 15x5x1>
    return %1 : !migraphx.shaped<2x3x5xf32, 15x5x1>
  }
  func.func @colmajor_arg(%x: !migraphx.shaped<3x7xf32, 1x3>) -> !migraphx.shaped<3x7xf32, 7x1> {
    %0 = migraphx.exp %x : <3x7xf32, 1x3> -> <3x7xf32, 7x1>
    return %0 : !migraphx.shaped<3x7xf32, 7x1>
  }
}

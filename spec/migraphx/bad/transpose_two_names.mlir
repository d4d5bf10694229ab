// ERROR: 3:8: error: migraphx.transpose: both 'permutation' and its older name 'dims'
func.func @f(%x: !migraphx.shaped<3x4xf32, 4x1>) -> !migraphx.shaped<4x3xf32, 3x1> {
  %0 = migraphx.transpose %x {permutation = [1, 0], dims = [1, 0]} : <3x4xf32, 4x1> -> <4x3xf32, 1x4>
  return %0 : !migraphx.shaped<4x3xf32, 3x1>
}

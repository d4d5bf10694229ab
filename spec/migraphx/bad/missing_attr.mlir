// ERROR: 3:8: error: migraphx.transpose: missing attribute 'permutation'
func.func @f(%x: !migraphx.shaped<3x4xf32, 4x1>) -> !migraphx.shaped<4x3xf32, 3x1> {
  %0 = migraphx.transpose %x : <3x4xf32, 4x1> -> <4x3xf32, 1x4>
  return %0 : !migraphx.shaped<4x3xf32, 3x1>
}

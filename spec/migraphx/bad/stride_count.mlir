// ERROR: 2:18: error: the type has 3 dimensions but 2 strides
func.func @f(%x: !migraphx.shaped<2x3x4xf32, 12x4>) -> !migraphx.shaped<2x3x4xf32, 12x4x1> {
  %0 = migraphx.relu %x : <2x3x4xf32, 12x4x1> -> <2x3x4xf32, 12x4x1>
  return %0 : !migraphx.shaped<2x3x4xf32, 12x4x1>
}

// ERROR: 3:25: error: unknown value %y
func.func @f(%x: !migraphx.shaped<3x4xf32, 4x1>) -> !migraphx.shaped<3x4xf32, 4x1> {
  %0 = migraphx.add %x, %y : <3x4xf32, 4x1>, <3x4xf32, 4x1> -> <3x4xf32, 4x1>
  return %0 : !migraphx.shaped<3x4xf32, 4x1>
}

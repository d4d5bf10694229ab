// ERROR: 3:64: error: migraphx.dot result 1: the type says [3,5]f32 but the value is [3,6]f32
func.func @f(%a: !migraphx.shaped<3x4xf32, 4x1>, %b: !migraphx.shaped<4x6xf32, 6x1>) -> !migraphx.shaped<3x5xf32, 5x1> {
  %0 = migraphx.dot %a, %b : <3x4xf32, 4x1>, <4x6xf32, 6x1> -> <3x5xf32, 5x1>
  return %0 : !migraphx.shaped<3x5xf32, 5x1>
}

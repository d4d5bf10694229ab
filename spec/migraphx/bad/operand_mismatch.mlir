// ERROR: 3:27: error: migraphx.relu operand 1: the type says [4,3]f32 but the value is [3,4]f32
func.func @f(%x: !migraphx.shaped<3x4xf32, 4x1>) -> !migraphx.shaped<3x4xf32, 4x1> {
  %0 = migraphx.relu %x : <4x3xf32, 3x1> -> <4x3xf32, 3x1>
  return %0 : !migraphx.shaped<3x4xf32, 4x1>
}

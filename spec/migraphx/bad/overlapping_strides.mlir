// ERROR: 2:18: error: argument %x: dimensions 0 and 1 have the same stride 1 (overlapping memory)
func.func @f(%x: !migraphx.shaped<3x4xf32, 1x1>) -> !migraphx.shaped<3x4xf32, 4x1> {
  %0 = migraphx.relu %x : <3x4xf32, 4x1> -> <3x4xf32, 4x1>
  return %0 : !migraphx.shaped<3x4xf32, 4x1>
}

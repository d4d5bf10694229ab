// ERROR: 3:12: error: mhal.launch @g: the input defines no function @g
func.func @f(%x: !migraphx.shaped<3x4xf32, 4x1>) -> !migraphx.shaped<3x4xf32, 4x1> {
  %t, %r = mhal.launch @g (%x) : (!migraphx.shaped<3x4xf32, 4x1>) -> !migraphx.shaped<3x4xf32, 4x1>
  return %r : !migraphx.shaped<3x4xf32, 4x1>
}

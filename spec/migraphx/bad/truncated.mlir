// ERROR: 4:1: error: function @f has no return
func.func @f(%x: !migraphx.shaped<3x4xf32, 4x1>) -> !migraphx.shaped<3x4xf32, 4x1> {
  %0 = migraphx.relu %x : <3x4xf32, 4x1> -> <3x4xf32, 4x1>

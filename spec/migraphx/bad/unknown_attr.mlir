// ERROR: 3:29: error: migraphx.softmax: attribute 'temperature' is not supported (supported: axis perf_config xdlopsV2 out_dyn_dims)
func.func @f(%x: !migraphx.shaped<3x4xf32, 4x1>) -> !migraphx.shaped<3x4xf32, 4x1> {
  %0 = migraphx.softmax %x {temperature = 2.0 : f32} : <3x4xf32, 4x1> -> <3x4xf32, 4x1>
  return %0 : !migraphx.shaped<3x4xf32, 4x1>
}

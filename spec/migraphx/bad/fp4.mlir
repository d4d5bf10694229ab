// ERROR: 2:37: error: element type f4E2M1FN is not supported (kiln has no fp4 / fp6 types)
func.func @f(%x: !migraphx.shaped<4xf4E2M1FN, 1>) -> !migraphx.shaped<4xf32, 1> {
  %0 = migraphx.convert %x : <4xf4E2M1FN, 1> to <4xf32, 1>
  return %0 : !migraphx.shaped<4xf32, 1>
}

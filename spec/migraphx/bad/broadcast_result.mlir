// ERROR: 4:15: error: result 1: strides 0x1 are not a dense layout (kiln writes results densely)
func.func @f(%x: !migraphx.shaped<1x4xf32, 4x1>) -> !migraphx.shaped<3x4xf32, 0x1> {
  %0 = migraphx.multibroadcast %x {out_lens = [3, 4]} : <1x4xf32, 4x1> -> <3x4xf32, 0x1>
  return %0 : !migraphx.shaped<3x4xf32, 0x1>
}

// ERROR: 3:8: error: migraphx.multibroadcast: out_lens has 2 dims, the result type 3
func.func @f(%x: !migraphx.shaped<1x4xf32, 4x1>) -> !migraphx.shaped<2x3x4xf32, 12x4x1> {
  %0 = migraphx.multibroadcast %x {out_lens = [3, 4]} : <1x4xf32, 4x1> -> <2x3x4xf32, 0x0x1>
  %1 = migraphx.abs %0 : <2x3x4xf32, 0x0x1> -> <2x3x4xf32, 12x4x1>
  return %1 : !migraphx.shaped<2x3x4xf32, 12x4x1>
}

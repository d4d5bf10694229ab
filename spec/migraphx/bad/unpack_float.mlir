// ERROR: 3:8: error: migraphx.unpack: the input must be i8 or ui8, got f32
func.func @f(%x: !migraphx.shaped<3x4xf32, 4x1>) -> !migraphx.shaped<3x8xf32, 8x1> {
  %0 = migraphx.unpack %x {axis = 1 : i64} : <3x4xf32, 4x1> -> <3x8xf32, 8x1>
  return %0 : !migraphx.shaped<3x8xf32, 8x1>
}

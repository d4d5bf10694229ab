// ERROR: 2:37: error: unknown element type 'f33' (supported: f32 f16 bf16 i8 si8 ui8 i32 si32 i64 f64 i1 f8E4M3FN f8E5M2 f8E4M3FNUZ f8E5M2FNUZ)
func.func @f(%x: !migraphx.shaped<4xf33, 1>) -> !migraphx.shaped<4xf32, 1> {
  return %x : !migraphx.shaped<4xf32, 1>
}

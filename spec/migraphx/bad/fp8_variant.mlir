// ERROR: 2:37: error: element type f8E4M3B11FNUZ is not supported (fp8 types: f8E4M3FN f8E5M2 f8E4M3FNUZ f8E5M2FNUZ)
func.func @f(%x: !migraphx.shaped<4xf8E4M3B11FNUZ, 1>) -> !migraphx.shaped<4xf32, 1> {
  %0 = migraphx.convert %x : <4xf8E4M3B11FNUZ, 1> to <4xf32, 1>
  return %0 : !migraphx.shaped<4xf32, 1>
}

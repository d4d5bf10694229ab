// Element-wise ops and literals, no module wrapper: a literal from a nested list with hex
// floats, a hex-blob literal, splats, convert with target_type, recip (1/x), clip with
// tensor bounds, where, pow, min/max, sqrt/rsqrt, numpy broadcasting, two results.
// KERNELS: ew_chain=3 literals=1 convert_where=1
func.func @ew_chain(%a: !migraphx.shaped<4x8xf32, 8x1>, %b: !migraphx.shaped<4x8xf32, 8x1>) -> (!migraphx.shaped<4x8xf32, 8x1>, !migraphx.shaped<4x8xf32, 8x1>) {
  %0 = migraphx.abs %a : <4x8xf32, 8x1> -> <4x8xf32, 8x1>
  %one = migraphx.literal (dense<1.0> : tensor<1xf32>) : <1xf32, 0>
  %oneb = migraphx.multibroadcast %one {out_lens = [4, 8]} : <1xf32, 0> -> <4x8xf32, 0x0>
  %1 = migraphx.add %0, %oneb : <4x8xf32, 8x1>, <4x8xf32, 0x0> -> <4x8xf32, 8x1>
  %2 = migraphx.sqrt %1 : <4x8xf32, 8x1> -> <4x8xf32, 8x1>
  %3 = migraphx.rsqrt %1 : <4x8xf32, 8x1> -> <4x8xf32, 8x1>
  %4 = migraphx.recip %1 : <4x8xf32, 8x1> -> <4x8xf32, 8x1>
  %5 = migraphx.pow %1, %b : <4x8xf32, 8x1>, <4x8xf32, 8x1> -> <4x8xf32, 8x1>
  %6 = migraphx.max %2, %3 : <4x8xf32, 8x1>, <4x8xf32, 8x1> -> <4x8xf32, 8x1>
  %7 = migraphx.min %6, %4 : <4x8xf32, 8x1>, <4x8xf32, 8x1> -> <4x8xf32, 8x1>
  %8 = migraphx.sub %5, %7 : <4x8xf32, 8x1>, <4x8xf32, 8x1> -> <4x8xf32, 8x1>
  %9 = migraphx.div %8, %1 : <4x8xf32, 8x1>, <4x8xf32, 8x1> -> <4x8xf32, 8x1>
  %lo = migraphx.literal (dense<-0.5> : tensor<4x8xf32>) : <4x8xf32, 8x1>
  %hi = migraphx.literal (dense<0.75> : tensor<4x8xf32>) : <4x8xf32, 8x1>
  %10 = migraphx.clip %b, %lo, %hi : <4x8xf32, 8x1>, <4x8xf32, 8x1>, <4x8xf32, 8x1> -> <4x8xf32, 8x1>
  %11 = migraphx.tanh %10 : <4x8xf32, 8x1> -> <4x8xf32, 8x1>
  %12 = migraphx.sigmoid %11 : <4x8xf32, 8x1> -> <4x8xf32, 8x1>
  %13 = migraphx.neg %12 : <4x8xf32, 8x1> -> <4x8xf32, 8x1>
  %14 = migraphx.exp %13 : <4x8xf32, 8x1> -> <4x8xf32, 8x1>
  %15 = migraphx.log %1 : <4x8xf32, 8x1> -> <4x8xf32, 8x1>
  %16 = migraphx.mul %14, %15 : <4x8xf32, 8x1>, <4x8xf32, 8x1> -> <4x8xf32, 8x1>
  %17 = migraphx.relu %9 : <4x8xf32, 8x1> -> <4x8xf32, 8x1>
  return %16, %17 : !migraphx.shaped<4x8xf32, 8x1>, !migraphx.shaped<4x8xf32, 8x1>
}
func.func @literals(%x: !migraphx.shaped<2x3xf32, 3x1>) -> !migraphx.shaped<2x3xf32, 3x1> {
  %c = "migraphx.literal"() {value = dense<[[0x1.8p1, -2.5, 1.0e-1], [4, 0x1p-2, -0x1.0p0]]> : tensor<2x3xf32>} : () -> !migraphx.shaped<2x3xf32, 3x1>
  %h = migraphx.literal (dense<"0x0000803F000000C00000404000000000000080BF0000003F"> : tensor<2x3xf32>) : <2x3xf32, 3x1>
  %r = migraphx.literal (dense<3.0> : tensor<3xf32>) : <3xf32, 1>
  %0 = migraphx.mul %x, %c : <2x3xf32, 3x1>, <2x3xf32, 3x1> -> <2x3xf32, 3x1>
  %1 = migraphx.add %0, %h : <2x3xf32, 3x1>, <2x3xf32, 3x1> -> <2x3xf32, 3x1>
  %2 = migraphx.sub %1, %r : <2x3xf32, 3x1>, <3xf32, 1> -> <2x3xf32, 3x1>
  return %2 : !migraphx.shaped<2x3xf32, 3x1>
}
func.func @convert_where(%x: !migraphx.shaped<6x5xf16, 5x1>, %c: !migraphx.shaped<6x5xi8, 5x1>, %y: !migraphx.shaped<6x5xf32, 5x1>) -> !migraphx.shaped<6x5xf32, 5x1> {
  %0 = migraphx.convert %x {target_type = 2 : i64} : <6x5xf16, 5x1> to <6x5xf32, 5x1>
  %1 = migraphx.where %c, %0, %y : <6x5xi8, 5x1>, <6x5xf32, 5x1>, <6x5xf32, 5x1> -> <6x5xf32, 5x1>
  return %1 : !migraphx.shaped<6x5xf32, 5x1>
}

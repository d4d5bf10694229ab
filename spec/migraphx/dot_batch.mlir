// Dots: batched (rank 3 and 4), a batch broadcast through stride 0, the generic op form,
// a scale from a splat literal, a transposed operand, bf16.
// KERNELS: dot_scale=1 dot_batch_broadcast=1 dot4_generic=1 dot_transposed=1 dot_bf16_tanh=1
func.func @dot_scale(%a: !migraphx.shaped<2x5x12xf32, 60x12x1>, %b: !migraphx.shaped<2x12x7xf32, 84x7x1>) -> !migraphx.shaped<2x5x7xf32, 35x7x1> {
  %0 = migraphx.dot %a, %b: <2x5x12xf32, 60x12x1>, <2x12x7xf32, 84x7x1> -> <2x5x7xf32, 35x7x1>
  %s = migraphx.literal (dense<1.250000e-01> : tensor<1xf32>) : <1xf32, 0>
  %sb = migraphx.multibroadcast %s {out_dyn_dims = [], out_lens = [2, 5, 7]} : <1xf32, 0> -> <2x5x7xf32, 0x0x0>
  %1 = migraphx.mul %0, %sb : <2x5x7xf32, 35x7x1>, <2x5x7xf32, 0x0x0> -> <2x5x7xf32, 35x7x1>
  return %1 : !migraphx.shaped<2x5x7xf32, 35x7x1>
}
func.func @dot_batch_broadcast(%a: !migraphx.shaped<3x4x8xf32, 32x8x1>, %w: !migraphx.shaped<3x8x6xf32, 0x6x1>) -> !migraphx.shaped<3x4x6xf32, 24x6x1> {
  %0 = migraphx.dot %a,%w :<3x4x8xf32,32x8x1>,   <3x8x6xf32, 0x6x1>->  <3x4x6xf32, 24x6x1>
  return %0 : !migraphx.shaped<3x4x6xf32, 24x6x1>
}
func.func @dot4_generic(%a: !migraphx.shaped<2x2x3x16xf16, 96x48x16x1>, %b: !migraphx.shaped<2x2x16x5xf16, 160x80x5x1>) -> !migraphx.shaped<2x2x3x5xf16, 30x15x5x1> {
  %0 = "migraphx.dot"(%a, %b) {perf_config = "v2:16,16,4,16,16,4,1,1,1"} : (!migraphx.shaped<2x2x3x16xf16, 96x48x16x1>, !migraphx.shaped<2x2x16x5xf16, 160x80x5x1>) -> !migraphx.shaped<2x2x3x5xf16, 30x15x5x1>
  return %0 : !migraphx.shaped<2x2x3x5xf16, 30x15x5x1>
}
func.func @dot_transposed(%a: !migraphx.shaped<9x6xf32, 1x9>, %b: !migraphx.shaped<9x4xf32, 4x1>) -> !migraphx.shaped<6x4xf32, 4x1> {
  %t = migraphx.transpose %a {permutation = [1 : i64, 0 : i64]} : <9x6xf32, 1x9> -> <6x9xf32, 9x1>
  %0 = migraphx.dot %t, %b : <6x9xf32, 9x1>, <9x4xf32, 4x1> -> <6x4xf32, 4x1>
  return %0 : !migraphx.shaped<6x4xf32, 4x1>
}
func.func @dot_bf16_tanh(%a: !migraphx.shaped<8x32xbf16, 32x1>, %b: !migraphx.shaped<32x8xbf16, 8x1>) -> !migraphx.shaped<8x8xbf16, 8x1> {
  %0 = migraphx.dot %a, %b : <8x32xbf16, 32x1>, <32x8xbf16, 8x1> -> <8x8xbf16, 8x1>
  %1 = migraphx.tanh %0 : <8x8xbf16, 8x1> -> <8x8xbf16, 8x1>
  return %1 : !migraphx.shaped<8x8xbf16, 8x1>
}

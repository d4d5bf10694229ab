// An f32 result computed through an f16 intermediate: an f16 batched dot (K = 256) read
// back as f32 into a row log-sum-exp. The f16 dot's rounding can land one f16 unit from the
// reference's rounding of the exact sum, so the f32 outputs are checked at f16's tolerance
// (kiln migraphx --verify: the narrowest computed float dtype an output depends on); the
// f32-only function beside it keeps f32's.
// KERNELS: lse_f16_dot=3 lse_f32_dot=3
module {
  func.func @lse_f16_dot(%q: !migraphx.shaped<2x96x256xf16, 24576x256x1>, %k: !migraphx.shaped<2x256x256xf16, 65536x256x1>) -> (!migraphx.shaped<2x96x1xf32, 96x1x1>, !migraphx.shaped<2x96x256xf16, 24576x256x1>) {
    %0 = migraphx.dot %q, %k : <2x96x256xf16, 24576x256x1>, <2x256x256xf16, 65536x256x1> -> <2x96x256xf16, 24576x256x1>
    %1 = migraphx.convert %0 {target_type = 2 : i64} : <2x96x256xf16, 24576x256x1> to <2x96x256xf32, 24576x256x1>
    %2 = migraphx.reduce_max %1 {axes = [2]} : <2x96x256xf32, 24576x256x1> -> <2x96x1xf32, 96x1x1>
    %3 = migraphx.multibroadcast %2 {out_lens = [2, 96, 256]} : <2x96x1xf32, 96x1x1> -> <2x96x256xf32, 96x1x0>
    %4 = migraphx.sub %1, %3 : <2x96x256xf32, 24576x256x1>, <2x96x256xf32, 96x1x0> -> <2x96x256xf32, 24576x256x1>
    %5 = migraphx.exp %4 : <2x96x256xf32, 24576x256x1> -> <2x96x256xf32, 24576x256x1>
    %6 = migraphx.reduce_sum %5 {axes = [2]} : <2x96x256xf32, 24576x256x1> -> <2x96x1xf32, 96x1x1>
    %7 = migraphx.log %6 : <2x96x1xf32, 96x1x1> -> <2x96x1xf32, 96x1x1>
    %8 = migraphx.add %2, %7 : <2x96x1xf32, 96x1x1>, <2x96x1xf32, 96x1x1> -> <2x96x1xf32, 96x1x1>
    return %8, %0 : !migraphx.shaped<2x96x1xf32, 96x1x1>, !migraphx.shaped<2x96x256xf16, 24576x256x1>
  }
  func.func @lse_f32_dot(%q: tensor<2x24x192xf32>, %k: tensor<2x192x40xf32>) -> (tensor<2x24x1xf32>, tensor<2x24x40xf32>) {
    %0 = migraphx.dot(%q, %k) : (tensor<2x24x192xf32>, tensor<2x192x40xf32>) -> tensor<2x24x40xf32>
    %2 = migraphx.reduce_max(%0) {axes = [2]} : (tensor<2x24x40xf32>) -> tensor<2x24x1xf32>
    %3 = migraphx.multibroadcast(%2) {out_lens = [2, 96, 256]} : (tensor<2x24x1xf32>) -> tensor<2x24x40xf32>
    %4 = migraphx.sub(%0, %3) : (tensor<2x24x40xf32>, tensor<2x24x40xf32>) -> tensor<2x24x40xf32>
    %5 = migraphx.exp(%4) : (tensor<2x24x40xf32>) -> tensor<2x24x40xf32>
    %6 = migraphx.reduce_sum(%5) {axes = [2]} : (tensor<2x24x40xf32>) -> tensor<2x24x1xf32>
    %7 = migraphx.log(%6) : (tensor<2x24x1xf32>) -> tensor<2x24x1xf32>
    %8 = migraphx.add(%2, %7) : (tensor<2x24x1xf32>, tensor<2x24x1xf32>) -> tensor<2x24x1xf32>
    return %8, %0 : tensor<2x24x1xf32>, tensor<2x24x40xf32>
  }
}

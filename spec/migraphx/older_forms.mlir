// Forms of older MIGraphX output: a multibroadcast whose out_lens disagree with its
// declared result type (the result type is the shape, as rocMLIR lowers it), a tosa.const
// constant (a literal) broadcast into an element-wise op, and several results.
// KERNELS: mbcast_result_type=2 tosa_const_scale=1
module {
  func.func @mbcast_result_type(%a: !migraphx.shaped<2x6x5xf32, 30x5x1>, %b: !migraphx.shaped<2x6x1xf32, 6x1x1>) -> (!migraphx.shaped<2x6x5xf32, 30x5x1>, !migraphx.shaped<2x6x5xf32, 30x5x1>) {
    %0 = migraphx.multibroadcast %b {out_lens = [2, 5, 5]} : <2x6x1xf32, 6x1x1> -> <2x6x5xf32, 6x1x0>
    %1 = migraphx.sub %a, %0 : <2x6x5xf32, 30x5x1>, <2x6x5xf32, 6x1x0> -> <2x6x5xf32, 30x5x1>
    %2 = migraphx.tanh %1 : <2x6x5xf32, 30x5x1> -> <2x6x5xf32, 30x5x1>
    return %1, %2 : !migraphx.shaped<2x6x5xf32, 30x5x1>, !migraphx.shaped<2x6x5xf32, 30x5x1>
  }
  func.func @tosa_const_scale(%x: tensor<3x4x6xf32>) -> tensor<3x4x6xf32> {
    %c = "tosa.const"() {value = dense<-7.500000e-01> : tensor<1xf32>} : () -> tensor<1xf32>
    %0 = migraphx.multibroadcast(%c) {out_dyn_dims = [], out_lens = [3, 4, 6]} : (tensor<1xf32>) -> tensor<3x4x6xf32>
    %1 = migraphx.mul(%x, %0) : (tensor<3x4x6xf32>, tensor<3x4x6xf32>) -> tensor<3x4x6xf32>
    return %1 : tensor<3x4x6xf32>
  }
}

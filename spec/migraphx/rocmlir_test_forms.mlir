// Forms rocMLIR's own MIGraphX test files use: the xdlopsV2 tuning hint on a convolution
// and a dot (ignored, as perf_config), transpose's older attribute name `dims`, the older
// constant op `"migraphx.constant"() {value = dense<...>}`, a splat literal whose dense
// type differs from the result type (the splat fills the result, as rocMLIR lowers it),
// and a quantizelinear of an integer x (the i32 of an i8 convolution, converted to the
// scale's float type first); arguments with an innermost stride > 1 (every other element,
// as the scales of rocMLIR's int4 attention test), plain and permuted.
// KERNELS: conv_hint=1 dot_dims_transpose=1 old_constant=1 splat_reshaped=1 quantize_i32=1 every_other=2
module {
  func.func @conv_hint(%x: tensor<2x3x9x7xf32>, %w: tensor<4x3x3x3xf32>, %b: tensor<1x4x1x1xf32>) -> tensor<2x4x7x5xf32> attributes {kernel = "mixr"} {
    %0 = migraphx.multibroadcast(%b) {out_dyn_dims = [], out_lens = [2, 4, 7, 5]} : (tensor<1x4x1x1xf32>) -> tensor<2x4x7x5xf32>
    %1 = migraphx.convolution(%x, %w) {dilation = [1, 1], group = 1 : i64, padding = [0, 0, 0, 0], padding_mode = 0 : i64, stride = [1, 1], xdlopsV2 = true} : (tensor<2x3x9x7xf32>, tensor<4x3x3x3xf32>) -> tensor<2x4x7x5xf32>
    %2 = migraphx.add(%1, %0) : (tensor<2x4x7x5xf32>, tensor<2x4x7x5xf32>) -> tensor<2x4x7x5xf32>
    return %2 : tensor<2x4x7x5xf32>
  }
  func.func @dot_dims_transpose(%a: tensor<3x5x6xf32>, %b: tensor<3x7x6xf32>) -> tensor<3x5x7xf32> {
    %0 = migraphx.transpose(%b) {dims = [0:i64, 2:i64, 1:i64]} : (tensor<3x7x6xf32>) -> tensor<3x6x7xf32>
    %1 = migraphx.dot(%a, %0) {xdlopsV2 = true} : tensor<3x5x6xf32>, tensor<3x6x7xf32> -> tensor<3x5x7xf32>
    return %1 : tensor<3x5x7xf32>
  }
  func.func @old_constant(%x: tensor<4x6xf32>) -> tensor<4x6xf32> {
    %0 = "migraphx.constant"() {value = dense<[[1.5, -2.0, 0.25, 3.0, -0.5, 1.0]]> : tensor<1x6xf32>} : () -> tensor<1x6xf32>
    %1 = migraphx.multibroadcast(%0) {out_lens = [4, 6]} : (tensor<1x6xf32>) -> tensor<4x6xf32>
    %2 = "migraphx.mul"(%x, %1) : (tensor<4x6xf32>, tensor<4x6xf32>) -> tensor<4x6xf32>
    return %2 : tensor<4x6xf32>
  }
  func.func @splat_reshaped(%x: !migraphx.shaped<2x5xf16, 5x1>) -> !migraphx.shaped<2x5xf16, 5x1> {
    %0 = migraphx.literal (dense<-1.250000e+00> : tensor<3x3xf16>) : <2x5xf16, 5x1>
    %1 = migraphx.sub %x, %0 : <2x5xf16, 5x1>, <2x5xf16, 5x1> -> <2x5xf16, 5x1>
    return %1 : !migraphx.shaped<2x5xf16, 5x1>
  }
  func.func @quantize_i32(%x: tensor<1x8x6x6xi8>, %w: tensor<8x8x3x3xi8>, %s: tensor<1x8x1x1xf32>) -> tensor<1x8x4x4xi8> {
    %0 = migraphx.quant_convolution(%x, %w) {dilation = [1, 1], group = 1 : i64, padding = [0, 0, 0, 0], padding_mode = 0 : i64, stride = [1, 1]} : (tensor<1x8x6x6xi8>, tensor<8x8x3x3xi8>) -> tensor<1x8x4x4xi32>
    %1 = "migraphx.quantizelinear"(%0, %s) : (tensor<1x8x4x4xi32>, tensor<1x8x1x1xf32>) -> tensor<1x8x4x4xi8>
    return %1 : tensor<1x8x4x4xi8>
  }
  func.func @every_other(%s: !migraphx.shaped<4x6xf16, 24x2>, %x: !migraphx.shaped<4x6xf16, 6x1>, %t: !migraphx.shaped<4x3xf32, 2x8>) -> (!migraphx.shaped<4x6xf16, 6x1>, !migraphx.shaped<4x3xf32, 3x1>) {
    %0 = migraphx.mul %x, %s : <4x6xf16, 6x1>, <4x6xf16, 24x2> -> <4x6xf16, 6x1>
    %1 = migraphx.exp %t : <4x3xf32, 2x8> -> <4x3xf32, 3x1>
    return %0, %1 : !migraphx.shaped<4x6xf16, 6x1>, !migraphx.shaped<4x3xf32, 3x1>
  }
}

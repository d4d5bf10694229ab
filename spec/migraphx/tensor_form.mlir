// The older tensor<> types with parenthesized operands: a padded 3x3 conv with a
// multibroadcast bias, a strided conv with asymmetric padding, a grouped conv.
// KERNELS: conv3x3=1 conv_stride2=1 conv_grouped=1
module {
  func.func @conv3x3(%arg0: tensor<1x8x1x1xf32>, %arg1: tensor<2x8x6x6xf32>, %arg2: tensor<8x8x3x3xf32>) -> tensor<2x8x6x6xf32> {
    %0 = migraphx.multibroadcast(%arg0) {out_lens = [2, 8, 6, 6]} : (tensor<1x8x1x1xf32>) -> tensor<2x8x6x6xf32>
    %1 = migraphx.convolution(%arg1, %arg2) {dilation = [1, 1], group = 1 : i64, padding = [1, 1, 1, 1], padding_mode = 0 : i64, stride = [1, 1]} : (tensor<2x8x6x6xf32>, tensor<8x8x3x3xf32>) -> tensor<2x8x6x6xf32>
    %2 = migraphx.add(%1, %0) : (tensor<2x8x6x6xf32>, tensor<2x8x6x6xf32>) -> tensor<2x8x6x6xf32>
    %3 = migraphx.relu(%2) : (tensor<2x8x6x6xf32>) -> tensor<2x8x6x6xf32>
    return %3 : tensor<2x8x6x6xf32>
  }
  func.func @conv_stride2(%x: tensor<1x4x9x8xf16>, %w: tensor<6x4x3x2xf16>) -> tensor<1x6x5x4xf16> {
    // padding [top, left, bottom, right] = [1, 0, 1, 1]: (9+2-3)/2+1 = 5, (8+1-2)/2+1 = 4
    %0 = migraphx.convolution(%x, %w) {dilation = [1, 1], group = 1 : i64, padding = [1, 0, 1, 1], padding_mode = 0 : i64, stride = [2, 2]} : (tensor<1x4x9x8xf16>, tensor<6x4x3x2xf16>) -> tensor<1x6x5x4xf16>
    %1 = migraphx.sigmoid(%0) : (tensor<1x6x5x4xf16>) -> tensor<1x6x5x4xf16>
    return %1 : tensor<1x6x5x4xf16>
  }
  func.func @conv_grouped(%x: tensor<1x8x7x7xf32>, %w: tensor<8x2x3x3xf32>) -> tensor<1x8x3x3xf32> {
    %0 = migraphx.convolution(%x, %w) {dilation = [2, 2], group = 4 : i64, padding = [0, 0], stride = [1, 1]} : (tensor<1x8x7x7xf32>, tensor<8x2x3x3xf32>) -> tensor<1x8x3x3xf32>
    return %0 : tensor<1x8x3x3xf32>
  }
}

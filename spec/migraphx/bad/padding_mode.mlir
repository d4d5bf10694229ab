// ERROR: 3:92: error: migraphx.convolution: padding_mode 1 is not supported (only 0)
func.func @f(%x: tensor<1x2x5x5xf32>, %w: tensor<2x2x3x3xf32>) -> tensor<1x2x5x5xf32> {
  %0 = migraphx.convolution(%x, %w) {dilation = [1, 1], group = 1 : i64, padding = [1, 1], padding_mode = 1 : i64, stride = [1, 1]} : (tensor<1x2x5x5xf32>, tensor<2x2x3x3xf32>) -> tensor<1x2x5x5xf32>
  return %0 : tensor<1x2x5x5xf32>
}

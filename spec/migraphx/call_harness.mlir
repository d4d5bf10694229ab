// An older rocMLIR test file's harness: a function calls two kernels (call and func.call)
// and compares their results with tosa ops; the called kernels are built and verified,
// the harness is skipped unread.
// KERNELS: k_ref=1 k_fused=1
func.func @k_ref(%x: tensor<2x8x5x5xf32>, %w: tensor<4x8x1x1xf32>, %b: tensor<1x4x1x1xf32>) -> tensor<2x4x5x5xf32> {
  %0 = migraphx.multibroadcast(%b) {out_lens = [2, 4, 5, 5]} : (tensor<1x4x1x1xf32>) -> tensor<2x4x5x5xf32>
  %1 = migraphx.convolution(%x, %w) {dilation = [1, 1], group = 1 : i64, padding = [0, 0, 0, 0], padding_mode = 0 : i64, stride = [1, 1]} : (tensor<2x8x5x5xf32>, tensor<4x8x1x1xf32>) -> tensor<2x4x5x5xf32>
  %2 = migraphx.add(%1, %0) : (tensor<2x4x5x5xf32>, tensor<2x4x5x5xf32>) -> tensor<2x4x5x5xf32>
  return %2 : tensor<2x4x5x5xf32>
}
func.func @k_fused(%x: tensor<2x8x5x5xf32>, %w: tensor<4x8x1x1xf32>, %b: tensor<1x4x1x1xf32>) -> tensor<2x4x5x5xf32> attributes {kernel = "mixr"} {
  %0 = migraphx.multibroadcast(%b) {out_lens = [2, 4, 5, 5]} : (tensor<1x4x1x1xf32>) -> tensor<2x4x5x5xf32>
  %1 = migraphx.convolution(%x, %w) {dilation = [1, 1], group = 1 : i64, padding = [0, 0, 0, 0], padding_mode = 0 : i64, stride = [1, 1]} : (tensor<2x8x5x5xf32>, tensor<4x8x1x1xf32>) -> tensor<2x4x5x5xf32>
  %2 = migraphx.add(%1, %0) : (tensor<2x4x5x5xf32>, tensor<2x4x5x5xf32>) -> tensor<2x4x5x5xf32>
  %3 = migraphx.relu(%2) : (tensor<2x4x5x5xf32>) -> tensor<2x4x5x5xf32>
  return %3 : tensor<2x4x5x5xf32>
}
func.func @harness(%x: tensor<2x8x5x5xf32>, %w: tensor<4x8x1x1xf32>, %b: tensor<1x4x1x1xf32>) -> tensor<1x1x1x1xf32> {
  %r = call @k_ref(%x, %w, %b) : (tensor<2x8x5x5xf32>, tensor<4x8x1x1xf32>, tensor<1x4x1x1xf32>) -> tensor<2x4x5x5xf32>
  %v = func.call @k_fused(%x, %w, %b) : (tensor<2x8x5x5xf32>, tensor<4x8x1x1xf32>, tensor<1x4x1x1xf32>) -> tensor<2x4x5x5xf32>
  %d = "tosa.sub"(%v, %r) : (tensor<2x4x5x5xf32>, tensor<2x4x5x5xf32>) -> tensor<2x4x5x5xf32>
  %s = "tosa.reduce_sum"(%d) {axis = 1 : i64} : (tensor<2x4x5x5xf32>) -> tensor<2x1x5x5xf32>
  %t = "tosa.reshape"(%s) {new_shape = array<i64: 1, 1, 1, 50>} : (tensor<2x1x5x5xf32>) -> tensor<1x1x1x50xf32>
  %u = "tosa.reduce_sum"(%t) {axis = 3 : i64} : (tensor<1x1x1x50xf32>) -> tensor<1x1x1x1xf32>
  return %u : tensor<1x1x1x1xf32>
}

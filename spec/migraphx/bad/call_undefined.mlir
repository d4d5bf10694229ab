// ERROR: 4:8: error: call @missing: the input defines no function @missing
func.func @harness(%a: tensor<4xf32>) -> tensor<4xf32> {
  // the harness calls a kernel the file does not define
  %r = call @missing(%a) : (tensor<4xf32>) -> tensor<4xf32>
  return %r : tensor<4xf32>
}

// ERROR: 3:8: error: tosa.add is not supported (only migraphx.* ops and tosa.const are read in a function body)
func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = "tosa.add"(%x, %x) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

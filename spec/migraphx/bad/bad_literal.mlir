// ERROR: 3:32: error: dense literal of shape [3] does not match its type's shape [4]
func.func @f(%x: !migraphx.shaped<4xf32, 1>) -> !migraphx.shaped<4xf32, 1> {
  %c = migraphx.literal (dense<[1.0, 2.0, 3.0]> : tensor<4xf32>) : <4xf32, 1>
  %0 = migraphx.add %x, %c : <4xf32, 1>, <4xf32, 1> -> <4xf32, 1>
  return %0 : !migraphx.shaped<4xf32, 1>
}

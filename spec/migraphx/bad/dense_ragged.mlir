// ERROR: 3:33: error: dense literal of shape (ragged) does not match its type's shape [2x2]
func.func @f(%x: !migraphx.shaped<2x2xf32, 2x1>) -> !migraphx.shaped<2x2xf32, 2x1> {
    %c = migraphx.literal(dense<[[1.0, 2.0], [3.0, [4.0]]]> : tensor<2x2xf32>) : <2x2xf32, 2x1>
    %0 = migraphx.add %x, %c : <2x2xf32, 2x1>, <2x2xf32, 2x1> -> <2x2xf32, 2x1>
  return %0 : !migraphx.shaped<2x2xf32, 2x1>
}

// ERROR: 3:33: error: dense literal of shape [2x3] does not match its type's shape [3x2]
func.func @f(%x: !migraphx.shaped<3x2xf32, 2x1>) -> !migraphx.shaped<3x2xf32, 2x1> {
    %c = migraphx.literal(dense<[[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]> : tensor<3x2xf32>) : <3x2xf32, 2x1>
    %0 = migraphx.add %x, %c : <3x2xf32, 2x1>, <3x2xf32, 2x1> -> <3x2xf32, 2x1>
  return %0 : !migraphx.shaped<3x2xf32, 2x1>
}

// ERROR: 3:33: error: dense literal element 1 (256) is not a ui8 value
func.func @f(%x: !migraphx.shaped<2xui8, 1>) -> !migraphx.shaped<2xui8, 1> {
    %c = migraphx.literal(dense<[1, 256]> : tensor<2xui8>) : <2xui8, 1>
    %0 = migraphx.add %x, %c : <2xui8, 1>, <2xui8, 1> -> <2xui8, 1>
  return %0 : !migraphx.shaped<2xui8, 1>
}

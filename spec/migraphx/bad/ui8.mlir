// ERROR: 2:37: error: element type ui8 is not supported (kiln has no unsigned 8-bit type)
func.func @f(%x: !migraphx.shaped<4xui8, 1>) -> !migraphx.shaped<4xui8, 1> {
  return %x : !migraphx.shaped<4xui8, 1>
}

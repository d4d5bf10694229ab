// ERROR: 4:10: error: migraphx.frobnicate is not supported (supported: add sub mul div
module {
  func.func @f(%x: !migraphx.shaped<4xf32, 1>) -> !migraphx.shaped<4xf32, 1> {
    %0 = migraphx.frobnicate %x : <4xf32, 1> -> <4xf32, 1>
    return %0 : !migraphx.shaped<4xf32, 1>
  }
}

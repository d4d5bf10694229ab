// floor and ceil (rocMLIR's MIGraphX dialect has both; tosa.floor / tosa.ceil): of values
// scaled to a few units so the inputs straddle integers of both signs, in f32, f16 and
// bf16 (exact: the reference's floor / ceil rounded to the dtype), and of an integer (x).
// KERNELS: floor_ceil_f32=3 floor_ceil_half=2 floor_ceil_i32=1
module {
  func.func @floor_ceil_f32(%x: !migraphx.shaped<6x10xf32, 10x1>) -> (!migraphx.shaped<6x10xf32, 10x1>, !migraphx.shaped<6x10xf32, 10x1>) {
    %k = migraphx.literal (dense<7.250000e+00> : tensor<1xf32>) : <1xf32, 0>
    %0 = migraphx.multibroadcast %k {out_lens = [6, 10]} : <1xf32, 0> -> <6x10xf32, 0x0>
    %1 = migraphx.mul %x, %0 : <6x10xf32, 10x1>, <6x10xf32, 0x0> -> <6x10xf32, 10x1>
    %2 = migraphx.floor %1 : <6x10xf32, 10x1> -> <6x10xf32, 10x1>
    %3 = migraphx.ceil %1 : <6x10xf32, 10x1> -> <6x10xf32, 10x1>
    return %2, %3 : !migraphx.shaped<6x10xf32, 10x1>, !migraphx.shaped<6x10xf32, 10x1>
  }
  func.func @floor_ceil_half(%h: tensor<4x8xf16>, %b: tensor<4x8xbf16>) -> (tensor<4x8xf16>, tensor<4x8xbf16>) {
    %c = "tosa.const"() {value = dense<5.5> : tensor<1xf16>} : () -> tensor<1xf16>
    %cb = "tosa.const"() {value = dense<-9.0> : tensor<1xbf16>} : () -> tensor<1xbf16>
    %0 = migraphx.multibroadcast(%c) {out_lens = [4, 8]} : (tensor<1xf16>) -> tensor<4x8xf16>
    %1 = migraphx.multibroadcast(%cb) {out_lens = [4, 8]} : (tensor<1xbf16>) -> tensor<4x8xbf16>
    %2 = migraphx.mul(%h, %0) : (tensor<4x8xf16>, tensor<4x8xf16>) -> tensor<4x8xf16>
    %3 = migraphx.mul(%b, %1) : (tensor<4x8xbf16>, tensor<4x8xbf16>) -> tensor<4x8xbf16>
    %4 = migraphx.ceil(%2) : (tensor<4x8xf16>) -> tensor<4x8xf16>
    %5 = migraphx.floor(%3) : (tensor<4x8xbf16>) -> tensor<4x8xbf16>
    return %4, %5 : tensor<4x8xf16>, tensor<4x8xbf16>
  }
  func.func @floor_ceil_i32(%i: !migraphx.shaped<3x5xi32, 5x1>) -> !migraphx.shaped<3x5xi32, 5x1> {
    %0 = migraphx.floor %i : <3x5xi32, 5x1> -> <3x5xi32, 5x1>
    %1 = migraphx.ceil %0 : <3x5xi32, 5x1> -> <3x5xi32, 5x1>
    %2 = migraphx.add %1, %i : <3x5xi32, 5x1>, <3x5xi32, 5x1> -> <3x5xi32, 5x1>
    return %2 : !migraphx.shaped<3x5xi32, 5x1>
  }
}

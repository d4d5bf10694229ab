// quantizelinear to the fp8 types (rocMLIR's mixr-quantizelinear tests): the result has
// the zero point's fp8 type, or the result type's with no zero point; x / scale (+ zero
// point) saturates to the fp8's largest finite value and converts, with no rounding to an
// integer; then a quant_dot of the fp8 result (f32).
// KERNELS: q_e4m3fn=2 q_e4m3fnuz_zp=1 q_e5m2_zp=1 q_e5m2fnuz=1
module {
  func.func @q_e4m3fn(%x: !migraphx.shaped<6x8xf32, 8x1>, %s: !migraphx.shaped<6x8xf32, 8x1>, %w: !migraphx.shaped<8x5xf8E4M3FN, 5x1>) -> (!migraphx.shaped<6x8xf8E4M3FN, 8x1>, !migraphx.shaped<6x5xf32, 5x1>) {
    %0 = migraphx.quantizelinear %x, %s : <6x8xf32, 8x1>, <6x8xf32, 8x1> -> <6x8xf8E4M3FN, 8x1>
    %1 = migraphx.quant_dot %0, %w : <6x8xf8E4M3FN, 8x1>, <8x5xf8E4M3FN, 5x1> -> <6x5xf32, 5x1>
    return %0, %1 : !migraphx.shaped<6x8xf8E4M3FN, 8x1>, !migraphx.shaped<6x5xf32, 5x1>
  }
  func.func @q_e4m3fnuz_zp(%x: !migraphx.shaped<4x6xf32, 6x1>, %s: !migraphx.shaped<1xf32, 0>, %z: !migraphx.shaped<4x6xf8E4M3FNUZ, 6x1>) -> !migraphx.shaped<4x6xf8E4M3FNUZ, 6x1> {
    %0 = migraphx.multibroadcast %s {out_lens = [4, 6]} : <1xf32, 0> -> <4x6xf32, 0x0>
    %1 = migraphx.quantizelinear %x, %0, %z : <4x6xf32, 6x1>, <4x6xf32, 0x0>, !migraphx.shaped<4x6xf8E4M3FNUZ, 6x1> -> <4x6xf8E4M3FNUZ, 6x1>
    return %1 : !migraphx.shaped<4x6xf8E4M3FNUZ, 6x1>
  }
  func.func @q_e5m2_zp(%x: !migraphx.shaped<3x7xf16, 7x1>, %s: !migraphx.shaped<3x7xf16, 7x1>, %z: !migraphx.shaped<3x7xf8E5M2, 7x1>) -> !migraphx.shaped<3x7xf8E5M2, 7x1> {
    %0 = migraphx.quantizelinear %x, %s, %z : <3x7xf16, 7x1>, <3x7xf16, 7x1>, !migraphx.shaped<3x7xf8E5M2, 7x1> -> <3x7xf8E5M2, 7x1>
    return %0 : !migraphx.shaped<3x7xf8E5M2, 7x1>
  }
  func.func @q_e5m2fnuz(%x: !migraphx.shaped<5x4xf32, 4x1>, %s: !migraphx.shaped<5x4xf32, 4x1>) -> !migraphx.shaped<5x4xf8E5M2FNUZ, 4x1> {
    %0 = migraphx.quantizelinear %x, %s : <5x4xf32, 4x1>, <5x4xf32, 4x1> -> <5x4xf8E5M2FNUZ, 4x1>
    return %0 : !migraphx.shaped<5x4xf8E5M2FNUZ, 4x1>
  }
}

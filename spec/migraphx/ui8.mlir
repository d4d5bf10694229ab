// Unsigned 8-bit integers (ui8; kiln's u8): element-wise ops whose results depend on the
// operands being unsigned (values above 127: div, max / min, greater, clip, sub wrapping
// mod 256), converts to and from f32 / i32 / i8 (float -> ui8 truncates and saturates to
// 0..255), reductions (max, sum wrapping mod 256, sum in i32), ui8 literals (decimal and
// hex, splats), quant_dot / quant_convolution of ui8 (accumulated and returned in i32),
// quantizelinear with a ui8 zero point (ui8 result) and dequantizelinear of ui8, both
// type syntaxes. Random ui8 inputs cover 0..255.
// KERNELS: ew_ui8=3 convert_ui8=4 reduce_ui8=3 literal_ui8=1 qdot_ui8=1 qconv_ui8=1 quant_ui8=2 dequant_ui8=1 tensor_ui8=1
// (one kernel per result of a multi-result element-wise function; the GEMM / conv epilogues fuse)
module {
  func.func @ew_ui8(%a: !migraphx.shaped<7x33xui8, 33x1>, %b: !migraphx.shaped<7x33xui8, 33x1>) -> (!migraphx.shaped<7x33xui8, 33x1>, !migraphx.shaped<7x33xui8, 33x1>, !migraphx.shaped<7x33xui8, 33x1>) {
    %0 = migraphx.div %a, %b : <7x33xui8, 33x1>, <7x33xui8, 33x1> -> <7x33xui8, 33x1>
    %1 = migraphx.max %a, %b : <7x33xui8, 33x1>, <7x33xui8, 33x1> -> <7x33xui8, 33x1>
    %2 = migraphx.sub %1, %0 : <7x33xui8, 33x1>, <7x33xui8, 33x1> -> <7x33xui8, 33x1>
    %3 = migraphx.greater %a, %b : <7x33xui8, 33x1>, <7x33xui8, 33x1> -> <7x33xui8, 33x1>
    %4 = migraphx.mul %3, %a : <7x33xui8, 33x1>, <7x33xui8, 33x1> -> <7x33xui8, 33x1>
    %5 = migraphx.sub %a, %b : <7x33xui8, 33x1>, <7x33xui8, 33x1> -> <7x33xui8, 33x1>
    %6 = migraphx.add %4, %5 : <7x33xui8, 33x1>, <7x33xui8, 33x1> -> <7x33xui8, 33x1>
    return %2, %6, %3 : !migraphx.shaped<7x33xui8, 33x1>, !migraphx.shaped<7x33xui8, 33x1>, !migraphx.shaped<7x33xui8, 33x1>
  }
  func.func @convert_ui8(%a: !migraphx.shaped<5x20xui8, 20x1>, %f: !migraphx.shaped<5x20xf32, 20x1>) -> (!migraphx.shaped<5x20xf32, 20x1>, !migraphx.shaped<5x20xui8, 20x1>, !migraphx.shaped<5x20xi32, 20x1>, !migraphx.shaped<5x20xi8, 20x1>) {
    %c = migraphx.literal(dense<150.0> : tensor<1xf32>) : <1xf32, 0>
    %cb = migraphx.multibroadcast %c {out_lens = [5, 20]} : <1xf32, 0> -> <5x20xf32, 0x0>
    %0 = migraphx.convert %a {target_type = 2 : i64} : <5x20xui8, 20x1> to <5x20xf32, 20x1>
    %1 = migraphx.mul %f, %cb : <5x20xf32, 20x1>, <5x20xf32, 0x0> -> <5x20xf32, 20x1>
    %2 = migraphx.add %1, %0 : <5x20xf32, 20x1>, <5x20xf32, 20x1> -> <5x20xf32, 20x1>
    %3 = migraphx.convert %2 {target_type = 4 : i64} : <5x20xf32, 20x1> to <5x20xui8, 20x1>
    %4 = migraphx.convert %a : <5x20xui8, 20x1> to <5x20xi32, 20x1>
    %5 = migraphx.convert %a : <5x20xui8, 20x1> to <5x20xi8, 20x1>
    return %2, %3, %4, %5 : !migraphx.shaped<5x20xf32, 20x1>, !migraphx.shaped<5x20xui8, 20x1>, !migraphx.shaped<5x20xi32, 20x1>, !migraphx.shaped<5x20xi8, 20x1>
  }
  func.func @reduce_ui8(%a: !migraphx.shaped<6x40xui8, 40x1>) -> (!migraphx.shaped<6x1xui8, 1x1>, !migraphx.shaped<6x1xui8, 1x1>, !migraphx.shaped<6x1xi32, 1x1>) {
    %0 = migraphx.reduce_max %a {axes = [1]} : <6x40xui8, 40x1> -> <6x1xui8, 1x1>
    %1 = migraphx.reduce_sum %a {axes = [1 : i64]} : <6x40xui8, 40x1> -> <6x1xui8, 1x1>
    %2 = migraphx.convert %a : <6x40xui8, 40x1> to <6x40xi32, 40x1>
    %3 = migraphx.reduce_sum %2 {axes = [1]} : <6x40xi32, 40x1> -> <6x1xi32, 1x1>
    return %0, %1, %3 : !migraphx.shaped<6x1xui8, 1x1>, !migraphx.shaped<6x1xui8, 1x1>, !migraphx.shaped<6x1xi32, 1x1>
  }
  func.func @literal_ui8(%x: !migraphx.shaped<3x4xui8, 4x1>) -> !migraphx.shaped<3x4xui8, 4x1> {
    %c = migraphx.literal(dense<[200, 255, 0x80, 7]> : tensor<4xui8>) : <4xui8, 1>
    %h = migraphx.literal(dense<"0xC8FF8007"> : tensor<4xui8>) : <4xui8, 1>
    %cb = migraphx.multibroadcast %c {out_lens = [3, 4]} : <4xui8, 1> -> <3x4xui8, 0x1>
    %hb = migraphx.multibroadcast %h {out_lens = [3, 4]} : <4xui8, 1> -> <3x4xui8, 0x1>
    %0 = migraphx.min %x, %cb : <3x4xui8, 4x1>, <3x4xui8, 0x1> -> <3x4xui8, 4x1>
    %1 = migraphx.add %0, %hb : <3x4xui8, 4x1>, <3x4xui8, 0x1> -> <3x4xui8, 4x1>
    return %1 : !migraphx.shaped<3x4xui8, 4x1>
  }
  func.func @qdot_ui8(%a: !migraphx.shaped<2x9x70xui8, 630x70x1>, %b: !migraphx.shaped<2x70x13xui8, 910x13x1>, %bias: !migraphx.shaped<1x1x13xi32, 13x13x1>) -> !migraphx.shaped<2x9x13xi32, 117x13x1> {
    %0 = migraphx.quant_dot %a, %b : <2x9x70xui8, 630x70x1>, <2x70x13xui8, 910x13x1> -> <2x9x13xi32, 117x13x1>
    %1 = migraphx.add %0, %bias : <2x9x13xi32, 117x13x1>, <1x1x13xi32, 13x13x1> -> <2x9x13xi32, 117x13x1>
    return %1 : !migraphx.shaped<2x9x13xi32, 117x13x1>
  }
  func.func @qconv_ui8(%x: !migraphx.shaped<1x6x7x7xui8, 294x1x42x6>, %w: !migraphx.shaped<5x6x3x3xui8, 54x9x3x1>) -> !migraphx.shaped<1x5x7x7xi32, 245x49x7x1> {
    %0 = migraphx.quant_convolution %x, %w {dilation = [1, 1], group = 1 : i64, padding = [1, 1, 1, 1], padding_mode = 0 : i64, stride = [1, 1]} : <1x6x7x7xui8, 294x1x42x6>, <5x6x3x3xui8, 54x9x3x1> -> <1x5x7x7xi32, 245x49x7x1>
    %1 = migraphx.relu %0 : <1x5x7x7xi32, 245x49x7x1> -> <1x5x7x7xi32, 245x49x7x1>
    return %1 : !migraphx.shaped<1x5x7x7xi32, 245x49x7x1>
  }
  func.func @quant_ui8(%x: !migraphx.shaped<8x20xf32, 20x1>, %s: !migraphx.shaped<8x20xf32, 0x0>, %x2: !migraphx.shaped<8x20xf32, 20x1>) -> (!migraphx.shaped<8x20xui8, 20x1>, !migraphx.shaped<8x20xui8, 20x1>) {
    %zp = migraphx.literal(dense<128> : tensor<1xui8>) : <1xui8, 0>
    %zb = migraphx.multibroadcast %zp {out_lens = [8, 20]} : <1xui8, 0> -> <8x20xui8, 0x0>
    %0 = migraphx.quantizelinear %x, %s, %zb : <8x20xf32, 20x1>, <8x20xf32, 0x0>, <8x20xui8, 0x0> -> <8x20xui8, 20x1>
    %1 = migraphx.quantizelinear %x2, %s : <8x20xf32, 20x1>, <8x20xf32, 0x0> -> <8x20xui8, 20x1>
    return %0, %1 : !migraphx.shaped<8x20xui8, 20x1>, !migraphx.shaped<8x20xui8, 20x1>
  }
  func.func @dequant_ui8(%q: !migraphx.shaped<5x3x16xui8, 48x16x1>, %s: !migraphx.shaped<5x3x16xf16, 0x0x1>, %z: !migraphx.shaped<5x3x16xui8, 0x0x1>) -> !migraphx.shaped<5x3x16xf16, 48x16x1> {
    %0 = migraphx.dequantizelinear %q, %s, %z : <5x3x16xui8, 48x16x1>, <5x3x16xf16, 0x0x1>, <5x3x16xui8, 0x0x1> -> <5x3x16xf16, 48x16x1>
    return %0 : !migraphx.shaped<5x3x16xf16, 48x16x1>
  }
  func.func @tensor_ui8(%a: tensor<4x10xui8>, %b: tensor<4x10xui8>) -> tensor<4x10xui8> {
    %0 = migraphx.greater_or_equal(%a, %b) : (tensor<4x10xui8>, tensor<4x10xui8>) -> tensor<4x10xui8>
    %1 = "migraphx.where"(%0, %a, %b) : (tensor<4x10xui8>, tensor<4x10xui8>, tensor<4x10xui8>) -> tensor<4x10xui8>
    %2 = migraphx.clip(%1, %b, %a) : (tensor<4x10xui8>, tensor<4x10xui8>, tensor<4x10xui8>) -> tensor<4x10xui8>
    return %2 : tensor<4x10xui8>
  }
}

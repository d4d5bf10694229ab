// fp8 element types (the MLIR names f8E4M3FNUZ f8E5M2FNUZ of gfx942, the OCP f8E4M3FN
// f8E5M2): quant_dot / quant_convolution of fp8 operands with f32 results, converts to
// and from fp8, fp8 literals (decimal and hex codes), element-wise ops on fp8 operands
// with fp8 results (computed in f32, rounded once), both type syntaxes.
// KERNELS: qdot_fnuz=1 qdot_ocp_batch_scale=1 qconv_fp8=1 quantize_fp8=1 dequant_fp8=1 ew_fp8=1 literal_fp8=1 dot_fp8_out=1 qdot_mixed=1 softmax_fp8=1 reduce_fp8=1
// (the fp8 -> f16 operand converts of a GEMM fuse into its loads; element-wise chains are one kernel)
module {
  func.func @qdot_fnuz(%a: !migraphx.shaped<24x40xf8E4M3FNUZ, 40x1>, %b: !migraphx.shaped<40x17xf8E4M3FNUZ, 17x1>) -> !migraphx.shaped<24x17xf32, 17x1> {
    %0 = migraphx.quant_dot %a, %b : <24x40xf8E4M3FNUZ, 40x1>, <40x17xf8E4M3FNUZ, 17x1> -> <24x17xf32, 17x1>
    return %0 : !migraphx.shaped<24x17xf32, 17x1>
  }
  func.func @qdot_ocp_batch_scale(%a: tensor<2x9x33xf8E4M3FN>, %b: tensor<2x33x12xf8E4M3FN>, %s: tensor<1x1x12xf32>) -> tensor<2x9x12xf32> {
    %0 = migraphx.quant_dot(%a, %b) : (tensor<2x9x33xf8E4M3FN>, tensor<2x33x12xf8E4M3FN>) -> tensor<2x9x12xf32>
    %1 = migraphx.multibroadcast(%s) {out_lens = [2, 9, 12]} : (tensor<1x1x12xf32>) -> tensor<2x9x12xf32>
    %2 = migraphx.mul(%0, %1) : (tensor<2x9x12xf32>, tensor<2x9x12xf32>) -> tensor<2x9x12xf32>
    return %2 : tensor<2x9x12xf32>
  }
  func.func @qconv_fp8(%x: !migraphx.shaped<1x6x7x7xf8E5M2FNUZ, 294x49x7x1>, %w: !migraphx.shaped<5x6x3x3xf8E5M2FNUZ, 54x9x3x1>) -> !migraphx.shaped<1x5x7x7xf32, 245x49x7x1> {
    %0 = migraphx.quant_convolution %x, %w {dilation = [1, 1], group = 1 : i64, padding = [1, 1, 1, 1], padding_mode = 0 : i64, stride = [1, 1]} : <1x6x7x7xf8E5M2FNUZ, 294x49x7x1>, <5x6x3x3xf8E5M2FNUZ, 54x9x3x1> -> <1x5x7x7xf32, 245x49x7x1>
    return %0 : !migraphx.shaped<1x5x7x7xf32, 245x49x7x1>
  }
  func.func @quantize_fp8(%x: !migraphx.shaped<8x20xf32, 20x1>, %s: !migraphx.shaped<8x20xf32, 0x0>) -> !migraphx.shaped<8x20xf8E5M2, 20x1> {
    %0 = migraphx.div %x, %s : <8x20xf32, 20x1>, <8x20xf32, 0x0> -> <8x20xf32, 20x1>
    %1 = migraphx.convert %0 {target_type = 14 : i64} : <8x20xf32, 20x1> to <8x20xf8E5M2, 20x1>
    return %1 : !migraphx.shaped<8x20xf8E5M2, 20x1>
  }
  func.func @dequant_fp8(%q: !migraphx.shaped<5x3x16xf8E4M3FNUZ, 48x16x1>, %s: !migraphx.shaped<5x3x16xf16, 0x0x1>) -> !migraphx.shaped<5x3x16xf16, 48x16x1> {
    %0 = migraphx.convert %q : <5x3x16xf8E4M3FNUZ, 48x16x1> to <5x3x16xf16, 48x16x1>
    %1 = migraphx.mul %0, %s : <5x3x16xf16, 48x16x1>, <5x3x16xf16, 0x0x1> -> <5x3x16xf16, 48x16x1>
    return %1 : !migraphx.shaped<5x3x16xf16, 48x16x1>
  }
  func.func @ew_fp8(%a: !migraphx.shaped<6x31xf8E5M2FNUZ, 31x1>, %b: !migraphx.shaped<6x31xf8E5M2FNUZ, 31x1>) -> !migraphx.shaped<6x31xf8E4M3FNUZ, 31x1> {
    %0 = migraphx.add %a, %b : <6x31xf8E5M2FNUZ, 31x1>, <6x31xf8E5M2FNUZ, 31x1> -> <6x31xf8E5M2FNUZ, 31x1>
    %1 = migraphx.mul %0, %a : <6x31xf8E5M2FNUZ, 31x1>, <6x31xf8E5M2FNUZ, 31x1> -> <6x31xf8E5M2FNUZ, 31x1>
    %2 = migraphx.relu %1 : <6x31xf8E5M2FNUZ, 31x1> -> <6x31xf8E5M2FNUZ, 31x1>
    %3 = migraphx.convert %2 : <6x31xf8E5M2FNUZ, 31x1> to <6x31xf8E4M3FNUZ, 31x1>
    return %3 : !migraphx.shaped<6x31xf8E4M3FNUZ, 31x1>
  }
  func.func @literal_fp8(%x: !migraphx.shaped<3x4xf8E4M3FN, 4x1>) -> !migraphx.shaped<3x4xf32, 4x1> {
    %c = migraphx.literal(dense<[0.5, -1.25, 3.0, 448.0]> : tensor<4xf8E4M3FN>) : <4xf8E4M3FN, 1>
    %h = migraphx.literal(dense<"0x38B84070"> : tensor<4xf8E4M3FN>) : <4xf8E4M3FN, 1>
    %cb = migraphx.multibroadcast %c {out_lens = [3, 4]} : <4xf8E4M3FN, 1> -> <3x4xf8E4M3FN, 0x1>
    %hb = migraphx.multibroadcast %h {out_lens = [3, 4]} : <4xf8E4M3FN, 1> -> <3x4xf8E4M3FN, 0x1>
    %0 = migraphx.sub %x, %cb : <3x4xf8E4M3FN, 4x1>, <3x4xf8E4M3FN, 0x1> -> <3x4xf8E4M3FN, 4x1>
    %1 = migraphx.convert %0 : <3x4xf8E4M3FN, 4x1> to <3x4xf32, 4x1>
    %2 = migraphx.convert %hb : <3x4xf8E4M3FN, 0x1> to <3x4xf32, 0x1>
    %3 = migraphx.add %1, %2 : <3x4xf32, 4x1>, <3x4xf32, 0x1> -> <3x4xf32, 4x1>
    return %3 : !migraphx.shaped<3x4xf32, 4x1>
  }
  func.func @dot_fp8_out(%a: !migraphx.shaped<16x64xf8E5M2, 64x1>, %b: !migraphx.shaped<64x8xf8E5M2, 8x1>) -> !migraphx.shaped<16x8xf8E5M2, 8x1> {
    %0 = migraphx.dot %a, %b : <16x64xf8E5M2, 64x1>, <64x8xf8E5M2, 8x1> -> <16x8xf8E5M2, 8x1>
    %1 = migraphx.relu %0 : <16x8xf8E5M2, 8x1> -> <16x8xf8E5M2, 8x1>
    return %1 : !migraphx.shaped<16x8xf8E5M2, 8x1>
  }
  func.func @qdot_mixed(%a: !migraphx.shaped<2x12x40xf8E4M3FNUZ, 480x40x1>, %b: !migraphx.shaped<2x40x9xf8E5M2FNUZ, 360x9x1>) -> !migraphx.shaped<2x12x9xf32, 108x9x1> {
    %0 = migraphx.quant_dot %a, %b : <2x12x40xf8E4M3FNUZ, 480x40x1>, <2x40x9xf8E5M2FNUZ, 360x9x1> -> <2x12x9xf32, 108x9x1>
    return %0 : !migraphx.shaped<2x12x9xf32, 108x9x1>
  }
  func.func @softmax_fp8(%x: !migraphx.shaped<6x300xf8E4M3FN, 300x1>) -> !migraphx.shaped<6x300xf8E4M3FN, 300x1> {
    %0 = migraphx.softmax %x {axis = 1 : i64} : <6x300xf8E4M3FN, 300x1> -> <6x300xf8E4M3FN, 300x1>
    return %0 : !migraphx.shaped<6x300xf8E4M3FN, 300x1>
  }
  func.func @reduce_fp8(%x: !migraphx.shaped<5x700xf8E5M2FNUZ, 700x1>) -> !migraphx.shaped<5x1xf8E5M2FNUZ, 1x1> {
    %0 = migraphx.reduce_sum %x {axes = [1]} : <5x700xf8E5M2FNUZ, 700x1> -> <5x1xf8E5M2FNUZ, 1x1>
    return %0 : !migraphx.shaped<5x1xf8E5M2FNUZ, 1x1>
  }
}

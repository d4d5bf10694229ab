// The MIGraphX ops the graph DSL composes from its own: erf, comparisons feeding where,
// quantizelinear / dequantizelinear, quant_dot and quant_convolution on i8 (i32 results),
// 1-D and 3-D convolutions (MIGraphX padding order [begins..., ends...]).
// KERNELS: erf_gelu=1 compare_where=1 quant_roundtrip=1 qdot=1 qconv=1 conv1d=1 conv3d=1 conv3d_ndhwc_bias_relu=1 qconv3d_depthwise=1
// (1-D and 3-D convs are one implicit-GEMM kernel each, with their epilogue)
module {
  func.func @erf_gelu(%x: !migraphx.shaped<4x33xf32, 33x1>) -> !migraphx.shaped<4x33xf32, 33x1> {
    %c = migraphx.literal(dense<0.707106769> : tensor<1xf32>) : <1xf32, 0>
    %cb = migraphx.multibroadcast %c {out_lens = [4, 33]} : <1xf32, 0> -> <4x33xf32, 0x0>
    %0 = migraphx.mul %x, %cb : <4x33xf32, 33x1>, <4x33xf32, 0x0> -> <4x33xf32, 33x1>
    %1 = migraphx.erf %0 : <4x33xf32, 33x1> -> <4x33xf32, 33x1>
    %2 = migraphx.mul %1, %x : <4x33xf32, 33x1>, <4x33xf32, 33x1> -> <4x33xf32, 33x1>
    return %2 : !migraphx.shaped<4x33xf32, 33x1>
  }
  func.func @compare_where(%a: !migraphx.shaped<8x16xf16, 16x1>, %b: !migraphx.shaped<8x16xf16, 16x1>) -> !migraphx.shaped<8x16xf16, 16x1> {
    %0 = migraphx.greater %a, %b : <8x16xf16, 16x1>, <8x16xf16, 16x1> -> <8x16xf16, 16x1>
    %1 = migraphx.greater_or_equal %b, %a : <8x16xf16, 16x1>, <8x16xf16, 16x1> -> <8x16xf16, 16x1>
    %2 = migraphx.add %0, %1 : <8x16xf16, 16x1>, <8x16xf16, 16x1> -> <8x16xf16, 16x1>
    %c = migraphx.convert %0 {target_type = 0 : i64} : <8x16xf16, 16x1> to <8x16xi8, 16x1>
    %3 = migraphx.where %c, %a, %2 : <8x16xi8, 16x1>, <8x16xf16, 16x1>, <8x16xf16, 16x1> -> <8x16xf16, 16x1>
    return %3 : !migraphx.shaped<8x16xf16, 16x1>
  }
  func.func @quant_roundtrip(%x: !migraphx.shaped<6x10xf32, 10x1>, %s: !migraphx.shaped<6x10xf32, 0x0>, %z: !migraphx.shaped<6x10xi8, 0x0>) -> !migraphx.shaped<6x10xf32, 10x1> {
    %0 = migraphx.quantizelinear %x, %s, %z : <6x10xf32, 10x1>, <6x10xf32, 0x0>, <6x10xi8, 0x0> -> <6x10xi8, 10x1>
    %1 = migraphx.dequantizelinear %0, %s, %z : <6x10xi8, 10x1>, <6x10xf32, 0x0>, <6x10xi8, 0x0> -> <6x10xf32, 10x1>
    return %1 : !migraphx.shaped<6x10xf32, 10x1>
  }
  func.func @qdot(%a: !migraphx.shaped<2x9x40xi8, 360x40x1>, %b: !migraphx.shaped<2x40x7xi8, 280x7x1>) -> !migraphx.shaped<2x9x7xi32, 63x7x1> {
    %0 = migraphx.quant_dot %a, %b : <2x9x40xi8, 360x40x1>, <2x40x7xi8, 280x7x1> -> <2x9x7xi32, 63x7x1>
    return %0 : !migraphx.shaped<2x9x7xi32, 63x7x1>
  }
  func.func @qconv(%x: !migraphx.shaped<1x8x6x6xi8, 288x36x6x1>, %w: !migraphx.shaped<4x8x3x3xi8, 72x9x3x1>) -> !migraphx.shaped<1x4x6x6xi32, 144x36x6x1> {
    %0 = migraphx.quant_convolution %x, %w {dilation = [1, 1], group = 1 : i64, padding = [1, 1, 1, 1], padding_mode = 0 : i64, stride = [1, 1]} : <1x8x6x6xi8, 288x36x6x1>, <4x8x3x3xi8, 72x9x3x1> -> <1x4x6x6xi32, 144x36x6x1>
    return %0 : !migraphx.shaped<1x4x6x6xi32, 144x36x6x1>
  }
  func.func @conv1d(%x: !migraphx.shaped<2x6x17xf32, 102x17x1>, %w: !migraphx.shaped<5x6x3xf32, 18x3x1>) -> !migraphx.shaped<2x5x8xf32, 40x8x1> {
    %0 = migraphx.convolution %x, %w {dilation = [1], group = 1 : i64, padding = [1, 0], padding_mode = 0 : i64, stride = [2]} : <2x6x17xf32, 102x17x1>, <5x6x3xf32, 18x3x1> -> <2x5x8xf32, 40x8x1>
    return %0 : !migraphx.shaped<2x5x8xf32, 40x8x1>
  }
  func.func @conv3d(%x: !migraphx.shaped<1x4x5x6x6xf32, 720x180x36x6x1>, %w: !migraphx.shaped<3x4x3x3x3xf32, 108x27x9x3x1>) -> !migraphx.shaped<1x3x5x6x6xf32, 540x180x36x6x1> {
    %0 = migraphx.convolution %x, %w {dilation = [1, 1, 1], group = 1 : i64, padding = [1, 1, 1, 1, 1, 1], padding_mode = 0 : i64, stride = [1, 1, 1]} : <1x4x5x6x6xf32, 720x180x36x6x1>, <3x4x3x3x3xf32, 108x27x9x3x1> -> <1x3x5x6x6xf32, 540x180x36x6x1>
    return %0 : !migraphx.shaped<1x3x5x6x6xf32, 540x180x36x6x1>
  }
  func.func @conv3d_ndhwc_bias_relu(%x: !migraphx.shaped<1x8x5x6x7xf16, 1680x1x336x56x8>, %w: !migraphx.shaped<6x4x3x3x2xf16, 72x1x24x8x4>, %b: !migraphx.shaped<1x6x5x3x6xf16, 0x1x0x0x0>) -> !migraphx.shaped<1x6x5x3x6xf16, 540x1x108x36x6> {
    %0 = migraphx.convolution %x, %w {dilation = [1, 1, 2], group = 2 : i64, padding = [1, 0, 1, 1, 1, 0], padding_mode = 0 : i64, stride = [1, 2, 1]} : <1x8x5x6x7xf16, 1680x1x336x56x8>, <6x4x3x3x2xf16, 72x1x24x8x4> -> <1x6x5x3x6xf16, 540x1x108x36x6>
    %1 = migraphx.add %0, %b : <1x6x5x3x6xf16, 540x1x108x36x6>, <1x6x5x3x6xf16, 0x1x0x0x0> -> <1x6x5x3x6xf16, 540x1x108x36x6>
    %2 = migraphx.relu %1 : <1x6x5x3x6xf16, 540x1x108x36x6> -> <1x6x5x3x6xf16, 540x1x108x36x6>
    return %2 : !migraphx.shaped<1x6x5x3x6xf16, 540x1x108x36x6>
  }
  func.func @qconv3d_depthwise(%x: !migraphx.shaped<2x3x4x5x5xi8, 300x100x25x5x1>, %w: !migraphx.shaped<3x1x2x3x3xi8, 18x18x9x3x1>) -> !migraphx.shaped<2x3x2x5x5xi32, 150x50x25x5x1> {
    %0 = migraphx.quant_convolution %x, %w {dilation = [1, 1, 1], group = 3 : i64, padding = [0, 1, 1, 1, 1, 1], padding_mode = 0 : i64, stride = [2, 1, 1]} : <2x3x4x5x5xi8, 300x100x25x5x1>, <3x1x2x3x3xi8, 18x18x9x3x1> -> <2x3x2x5x5xi32, 150x50x25x5x1>
    return %0 : !migraphx.shaped<2x3x2x5x5xi32, 150x50x25x5x1>
  }
}

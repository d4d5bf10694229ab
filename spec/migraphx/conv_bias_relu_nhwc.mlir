// A 1x1 convolution 2048 -> 512 on 7x7 in f16, NHWC through strides, with a per-channel
// bias (stride-0 dims: a broadcast of a 512-element param) and relu: one kernel. On sm_90(a) and
// gfx942 the split-K heuristic splits K = 2048 for these 49 output rows: the partial GEMMs,
// then one element-wise kernel for their sum, the bias and relu.
// KERNELS: conv_bias_relu=1
// KERNELS ON sm_90: conv_bias_relu=2
// KERNELS ON sm_90a: conv_bias_relu=2
// KERNELS ON gfx942: conv_bias_relu=2
module {
  func.func @conv_bias_relu(%x: !migraphx.shaped<1x2048x7x7xf16, 100352x1x14336x2048>,
                            %w: !migraphx.shaped<512x2048x1x1xf16, 2048x1x2048x2048>,
                            %b: !migraphx.shaped<1x512x7x7xf16, 0x1x0x0>)
      -> !migraphx.shaped<1x512x7x7xf16, 25088x1x3584x512> {
    %0 = migraphx.convolution %x, %w {dilation = [1, 1], group = 1 : i64, padding = [0, 0, 0, 0], padding_mode = 0 : i64, stride = [1, 1]} : <1x2048x7x7xf16, 100352x1x14336x2048>, <512x2048x1x1xf16, 2048x1x2048x2048> -> <1x512x7x7xf16, 25088x1x3584x512>
    %1 = migraphx.add %0, %b : <1x512x7x7xf16, 25088x1x3584x512>, <1x512x7x7xf16, 0x1x0x0> -> <1x512x7x7xf16, 25088x1x3584x512>
    %2 = migraphx.relu %1 : <1x512x7x7xf16, 25088x1x3584x512> -> <1x512x7x7xf16, 25088x1x3584x512>
    return %2 : !migraphx.shaped<1x512x7x7xf16, 25088x1x3584x512>
  }
}

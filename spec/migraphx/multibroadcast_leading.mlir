// multibroadcast of a lower-rank input: numpy's trailing alignment, and where it does not
// fit, the dims the result type's strides keep (rocMLIR's reading): [2,3] -> [2,3,1,5]
// with result strides 3x1x0x0 puts the input at dims 0 and 1; a compare against it feeds
// where (a kv-cache mask as rocMLIR's attention tests build it).
// KERNELS: lead_mask=1 trailing=1
module {
  func.func @lead_mask(%len: !migraphx.shaped<2x3xi32, 3x1>, %x: !migraphx.shaped<2x3x1x5xf32, 15x5x5x1>) -> !migraphx.shaped<2x3x1x5xf32, 15x5x5x1> {
    %pos = migraphx.literal(dense<[0, 1, 2, 3, 4]> : tensor<5xi32>) : <5xi32, 1>
    %ninf = migraphx.literal(dense<-1.0e4> : tensor<1xf32>) : <1xf32, 1>
    %p = migraphx.multibroadcast %pos {out_lens = [2, 3, 1, 5]} : <5xi32, 1> -> <2x3x1x5xi32, 0x0x0x1>
    %l = migraphx.multibroadcast %len {out_lens = [2, 3, 1, 5]} : <2x3xi32, 3x1> -> <2x3x1x5xi32, 3x1x0x0>
    %n = migraphx.multibroadcast %ninf {out_lens = [2, 3, 1, 5]} : <1xf32, 1> -> <2x3x1x5xf32, 0x0x0x0>
    %m = migraphx.greater_or_equal %p, %l : <2x3x1x5xi32, 0x0x0x1>, <2x3x1x5xi32, 3x1x0x0> -> <2x3x1x5xi32, 15x5x5x1>
    %c = migraphx.convert %m : <2x3x1x5xi32, 15x5x5x1> to <2x3x1x5xi8, 15x5x5x1>
    %w = migraphx.where %c, %n, %x : <2x3x1x5xi8, 15x5x5x1>, <2x3x1x5xf32, 0x0x0x0>, <2x3x1x5xf32, 15x5x5x1> -> <2x3x1x5xf32, 15x5x5x1>
    return %w : !migraphx.shaped<2x3x1x5xf32, 15x5x5x1>
  }
  func.func @trailing(%b: !migraphx.shaped<5xf32, 1>, %x: !migraphx.shaped<2x5x5xf32, 25x5x1>) -> !migraphx.shaped<2x5x5xf32, 25x5x1> {
    %bb = migraphx.multibroadcast %b {out_lens = [2, 5, 5]} : <5xf32, 1> -> <2x5x5xf32, 0x0x1>
    %0 = migraphx.add %x, %bb : <2x5x5xf32, 25x5x1>, <2x5x5xf32, 0x0x1> -> <2x5x5xf32, 25x5x1>
    return %0 : !migraphx.shaped<2x5x5xf32, 25x5x1>
  }
}

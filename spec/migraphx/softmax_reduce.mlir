// Softmax on an axis, reductions keeping the reduced dims as 1, and a hand-written
// log-softmax from reduce_max / sub / exp / reduce_sum / log (two kernels: the max, then
// the sum with exp(x - max) fused in its loads and log and the subtractions after it).
// KERNELS: softmax_axis=1 reduce_sum_max=2 log_softmax=2
module {
  func.func @softmax_axis(%x: !migraphx.shaped<2x6x10xf32, 60x10x1>) -> !migraphx.shaped<2x6x10xf32, 60x10x1> {
    %0 = migraphx.softmax %x{axis = 1 : i64} : <2x6x10xf32, 60x10x1> -> <2x6x10xf32, 60x10x1>
    return %0 : !migraphx.shaped<2x6x10xf32, 60x10x1>
  }
  func.func @reduce_sum_max(%x: !migraphx.shaped<4x5x6xf32, 30x6x1>) -> (!migraphx.shaped<4x1x6xf32, 6x6x1>, !migraphx.shaped<1x5x1xf32, 5x1x1>) {
    %0 = migraphx.reduce_sum %x {axes = [1]} : <4x5x6xf32, 30x6x1> -> <4x1x6xf32, 6x6x1>
    %1 = migraphx.reduce_max %x {axes = [0, 2]} : <4x5x6xf32, 30x6x1> -> <1x5x1xf32, 5x1x1>
    return %0, %1 : !migraphx.shaped<4x1x6xf32, 6x6x1>, !migraphx.shaped<1x5x1xf32, 5x1x1>
  }
  func.func @log_softmax(%x: !migraphx.shaped<3x16xf32, 16x1>) -> !migraphx.shaped<3x16xf32, 16x1> {
    %m = migraphx.reduce_max %x {axes = [1]} : <3x16xf32, 16x1> -> <3x1xf32, 1x1>
    %mb = migraphx.multibroadcast %m {out_lens = [3, 16]} : <3x1xf32, 1x1> -> <3x16xf32, 1x0>
    %d = migraphx.sub %x, %mb : <3x16xf32, 16x1>, <3x16xf32, 1x0> -> <3x16xf32, 16x1>
    %e = migraphx.exp %d : <3x16xf32, 16x1> -> <3x16xf32, 16x1>
    %s = migraphx.reduce_sum %e {axes = [1]} : <3x16xf32, 16x1> -> <3x1xf32, 1x1>
    %l = migraphx.log %s : <3x1xf32, 1x1> -> <3x1xf32, 1x1>
    %lb = migraphx.multibroadcast %l {out_lens = [3, 16]} : <3x1xf32, 1x1> -> <3x16xf32, 1x0>
    %r = migraphx.sub %d, %lb : <3x16xf32, 16x1>, <3x16xf32, 1x0> -> <3x16xf32, 16x1>
    return %r : !migraphx.shaped<3x16xf32, 16x1>
  }
}

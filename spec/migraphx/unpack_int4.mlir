// unpack (MIGraphX's unpack_int4, as rocMLIR's realize-int4 tests use it): two 4-bit values
// a byte along an axis, the low nibble first; signed (isUnsigned = false: -8..7), unsigned
// (0..15; the default for a ui8 result), after a transpose and a reshape of the packed
// bytes, and feeding a dequantizelinear and a dot (int4 weights).
// KERNELS: unpack_signed=1 unpack_unsigned_t=1 unpack_reshaped=1 int4_weights=1
module {
  func.func @unpack_signed(%x: !migraphx.shaped<5x3xi8, 3x1>) -> !migraphx.shaped<5x6xi8, 6x1> {
    %0 = migraphx.unpack %x {axis = 1 : i64, isUnsigned = false} : <5x3xi8, 3x1> -> <5x6xi8, 6x1>
    return %0 : !migraphx.shaped<5x6xi8, 6x1>
  }
  func.func @unpack_unsigned_t(%x: !migraphx.shaped<4x2x6xui8, 12x1x2>) -> !migraphx.shaped<4x6x4xui8, 24x4x1> {
    %0 = migraphx.transpose %x {permutation = [0, 2, 1]} : <4x2x6xui8, 12x1x2> -> <4x6x2xui8, 12x2x1>
    %1 = migraphx.unpack %0 {axis = 2 : i64} : <4x6x2xui8, 12x2x1> -> <4x6x4xui8, 24x4x1>
    return %1 : !migraphx.shaped<4x6x4xui8, 24x4x1>
  }
  func.func @unpack_reshaped(%x: !migraphx.shaped<3x8xi8, 8x1>) -> !migraphx.shaped<6x2x4xi8, 8x4x1> {
    %0 = migraphx.reshape %x {dims = [3, 2, 4]} : <3x8xi8, 8x1> -> <3x2x4xi8, 8x4x1>
    %1 = migraphx.unpack %0 {axis = 0 : i64, isUnsigned = true} : <3x2x4xi8, 8x4x1> -> <6x2x4xi8, 8x4x1>
    return %1 : !migraphx.shaped<6x2x4xi8, 8x4x1>
  }
  func.func @int4_weights(%a: !migraphx.shaped<6x16xf16, 16x1>, %w: !migraphx.shaped<16x4xui8, 4x1>, %s: !migraphx.shaped<16x8xf16, 8x1>, %z: !migraphx.shaped<16x8xui8, 8x1>) -> !migraphx.shaped<6x8xf16, 8x1> {
    %0 = migraphx.unpack %w {axis = 1 : i64} : <16x4xui8, 4x1> -> <16x8xui8, 8x1>
    %1 = migraphx.dequantizelinear %0, %s, %z : <16x8xui8, 8x1>, <16x8xf16, 8x1>, !migraphx.shaped<16x8xui8, 8x1> -> <16x8xf16, 8x1>
    %2 = migraphx.dot %a, %1 : <6x16xf16, 16x1>, <16x8xf16, 8x1> -> <6x8xf16, 8x1>
    return %2 : !migraphx.shaped<6x8xf16, 8x1>
  }
}

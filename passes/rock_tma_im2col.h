/* rock_tma_im2col.h — TMA im2col mode (cp.async.bulk.tensor.4d ... .im2col) for the activation
 * operand of an implicit-GEMM 2-D convolution on sm_90a: rock-gridwise-to-blockwise{tma-im2col=1}
 * (0 / auto: off, KL_TMA_IM2COL_DEFAULT_STR, until measured on the GPU).
 *
 * The operand: a [G, K, D] view of a kernel argument (no prologue, 16-bit elements) that is
 * not a plain tiled box (kl_tma_operand refused it) and that is, point for point, the
 * implicit-GEMM view of an NHWC tensor (memory order C innermost, then W, H, N; strides sW,
 * sH, sN elements, each nested in the next, multiples of 16 bytes), split in G slices of Ck =
 * C / G channels (split-k-workspace's channel slices; G = 1 unsplit):
 *   k = (r S + s) Ck + c   (K: filter taps r < R, s < S, channels c < Ck innermost; Kd = R S Ck)
 *   d = (n Ho + ho) Wo + wo   (D: output pixels, d < N Ho Wo; past that: padding)
 *   (g, k, d) -> element (n, ho sh - ph + r dh, wo sw - pw + s dw, g Ck + c), zero outside the image.
 * kl_tma_im2col_operand finds C (the stride-1 dim of the argument), then the rest from the view
 * itself: the valid filter taps (k = t Ck) of the first output pixels, the first pixel d* that
 * sees every tap (the taps' offsets there: S, dh, dw), the first pixel of each tap (ph, pw),
 * where the row and the image change (Wo, Ho Wo, sw, sh); then it checks the model against the
 * view (valid or padding, and the address): every K point at four pixels of slices 0 and G-1,
 * every D point of the first two images (at most 1 << 16) at two taps, and 1024 pseudo-random
 * points of any slice. Conv groups, other layouts, K padded past R S Ck (the taps past R would
 * load real pixels, not zeros) and Ck not a multiple of the K panel are refused (the register
 * path keeps them).
 *
 * The map (cuTensorMapEncodeIm2col, runtime/device.h): rank 4, dims {C, W, H, N}, strides
 * {sW, sH, sN} bytes, pixel-box lower corner {-pw, -ph}, upper corner {(Wo-1) sw - pw - (W-1),
 * (Ho-1) sh - ph - (H-1)} (so the bounding box holds exactly the Wo x Ho window origins of one
 * image at the traversal strides), elementStrides {1, sw, sh, 1}, channelsPerPixel = the
 * panel (box[0], 64 f16 at the 128-byte swizzle), pixelsPerColumn = DB (box[1]), the
 * swizzle of the tiled K-major boxes. Hardware limits (PTX ISA, tensor im2col mode, rank 4):
 * corners in [-128, 127], im2col offsets in [0, 255] ((R-1) dh, (S-1) dw), traversal strides
 * 1..8, pixels per column <= 256 here; outside them the operand stays on the register path.
 *
 * One box per K panel and step: coordinates {c, w, h, n} = {g Ck + k0 % Ck, wo sw - pw, ho sh -
 * ph, n} of the tile's first pixel d0 = (n, ho, wo) and im2col offsets {s dw, r dh} of the
 * panel's tap t = k0 / Ck. The hardware walks the DB pixels from there through the bounding
 * box, W first (step sw), then H (step sh, W back to the lower corner), then N (H and W back
 * to the lower corners), loads C channels c .. c+panel-1 of each pixel at the walk's position
 * plus the offsets (zeros outside the tensor: the conv's padding, and every pixel past image
 * N-1: the D padding), and writes pixel p as row p of the box: the same [DB, panel] swizzled
 * K-major LDS tile as a tiled box {panel, DB}, which the wgmma descriptors read unchanged.
 * An M / N tile crossing image rows or images is the walk's wrap. spec/c/test_accel.c
 * (test_tma_im2col) interprets exactly this walk. */
#ifndef KL_ROCK_TMA_IM2COL_H
#define KL_ROCK_TMA_IM2COL_H
#include "passes/rock_tma.h"

/* The option's default (rock-gridwise-to-blockwise{tma-im2col=0|1|auto}) and what auto means:
 * off until GPU-measured (bench rows @im2col, gpu_suite section tma_im2col). */
#define KL_TMA_IM2COL_DEFAULT_STR "0"
#define KL_TMA_IM2COL_AUTO        0

/* Whether operand v ([G, K, D]; prologue: a fused op writes it) loads through TMA im2col mode
 * with D tiles of DB and K boxes of panel elements: true + *m (im2col set, box {panel, DB, 1,
 * 1}), else false + the reason in why. */
bool kl_tma_im2col_operand(kl_value *v, bool prologue, int64_t DB, int64_t panel, kl_tma_map *m, char *why, size_t n);
/* The coordinates {c, w, h, n} and im2col offsets {s dw, r dh} of the box at (g, k, d) (k a
 * multiple of the panel, d the tile's first pixel; c = g Ck + k % Ck), for rock.tma_load: 6
 * values in out. */
int kl_tma_im2col_coords(kl_emitter *e, const kl_tma_map *m, kl_value *g, kl_value *k, kl_value *d, kl_value **out);
#endif

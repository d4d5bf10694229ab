/* rock_conv_to_gemm.c — the `rock-conv-to-gemm` pass: every rock.conv (1-D, 2-D, 3-D)
 * becomes a rock.gemm over the implicit-GEMM views of its three buffers (core/view_conv.h):
 *   filter [K, C/G, W...] -> A [G, gemmK = C/G*prod(W), gemmM = K/G]
 *   input  [N, C, S...]   -> B [G, gemmK, gemmN = N*prod(O)]   (Unmerge of C into G x C/G,
 *                            Pad, Embed windows w*dil + o*stride per spatial dim, Merge)
 *   output [N, K, O...]   -> C [G, gemmM, gemmN]
 * The buffers are logical (N,C,spatial... / K,C/G,window... / N,K,spatial...); their
 * strides are the layout. When an operand is a kernel buffer (not a view) stored channels
 * last (NDHWC / KZYXC / NDHWK: strides the dense permutation [0, 2, ..., r-1, 1]), gemmK is
 * linearised in memory order ((window...)*C/G + c) and the layout's view is composed with
 * a permutation back to the logical dims, so the views only ever address logical
 * coordinates. A filter that is a view (rock.transform, e.g. split-k-workspace's channel
 * slices of a channels-last filter: reshape, transpose, reshape) takes the channels-last
 * gemmK order too (kl_conv_desc.k_last) when the views, composed down to its buffer, prove
 * longer vectors along c than along the innermost window dim (kl_tile_vector_len): the
 * GEMM's copies then read 16-byte vectors along K (and qualify for cp.async) as for the
 * buffer itself. Stride, padding ([begin, end] per spatial dim), dilation and groups come
 * from the conv's attributes (rock.conv's verifier checks them and the shapes; absent:
 * 1 / 0 / 1 / 1). A `split_k_partials` attribute (split-k-workspace) moves to the gemm.
 * Errors are diagnostics at the conv's location. */
#include "core/dialect_graph.h"
#include "core/infer.h"
#include "core/dialect_rock.h"
#include "core/pass.h"
#include "core/shape.h"
#include "core/view_conv.h"
#include "passes/pass_util.h"
#include "passes/perf_config.h"
#include <stdlib.h>
#include <string.h>

/* the channels-last permutation of rank r: [0, 2, ..., r-1, 1] */
static void last_perm(int r, int *perm) {
  perm[0] = 0;
  for (int i = 1; i + 1 < r; i++) perm[i] = i + 1;
  perm[r - 1] = 1;
}

/* true when v is a buffer (not a view) whose strides are the dense channels-last layout. */
static bool channels_last(kl_value *v) {
  if (v->def && !strcmp(v->def->name, "rock.transform")) return false;
  const kl_type *t = v->type;
  int perm[KL_MAX_RANK], want[KL_MAX_RANK];
  if (t->rank < 3 || !kl_strides_to_perm(t->rank, t->shape, t->strides, perm)) return false;
  last_perm(t->rank, want);
  return !memcmp(perm, want, sizeof(int) * (size_t)t->rank);
}

/* *v := compose(*v, P) where P maps the channels-last order of `logical` back to it. */
static bool to_logical(kl_view **v, int r, const int64_t *logical, const char *const *names, kl_view_err *err) {
  int perm[KL_MAX_RANK];
  last_perm(r, perm);
  kl_view *id = kl_view_identity(r, logical, names, err);
  kl_view *p = id ? kl_view_transpose(id, r, perm, err) : NULL;
  kl_view *c = p ? kl_view_compose(*v, p, err) : NULL;
  kl_view *s = c ? kl_view_simplify(c) : NULL;
  kl_view_free(id);
  kl_view_free(p);
  kl_view_free(c);
  if (!s) return false;
  kl_view_free(*v);
  *v = s;
  return true;
}

/* true when v is a view whose composition down to its buffer proves longer vectors along
 * the channel dim (1) than along the innermost window dim: channels last in memory. */
static bool view_channels_last(kl_value *v) {
  if (!v->def || strcmp(v->def->name, "rock.transform")) return false;
  const kl_type *t = v->type;
  kl_view_err err = { 0 };
  kl_view *id = kl_view_identity(t->rank, t->shape, NULL, &err);
  if (!id) return false;
  int64_t vc = kl_tile_vector_len(id, v, 1), vw = kl_tile_vector_len(id, v, t->rank - 1);
  kl_view_free(id);
  return vc > 1 && vc > vw;
}

static kl_status lower_conv(kl_op *conv) {
  kl_ctx *ctx = conv->ctx;
  kl_value *in = conv->opnds[0].value, *fil = conv->opnds[1].value, *out = conv->opnds[2].value;
  const kl_type *it = in->type, *ft = fil->type;
  int r = it->rank, sp = r - 2;
  kl_conv_params p;
  /* the verifier checked ranks, attributes and shapes */
  if (sp < 1 || sp > KL_CONV_MAX_SPATIAL || !kl_graph_conv_params(ctx, conv->loc, sp, conv->nattrs, conv->attrs, &p))
    return kl_emit_error(ctx, conv->loc, "rock-conv-to-gemm: bad rock.conv (ranks %s, %s)", it->text, ft->text);
  bool in_last = channels_last(in), fil_last = channels_last(fil), out_last = channels_last(out);
  kl_conv_desc d = { .spatial = sp,
                     .n = it->shape[0],
                     .c = it->shape[1],
                     .k = ft->shape[0],
                     .groups = p.groups,
                     .in_last = in_last,
                     .filter_last = fil_last,
                     .out_last = out_last,
                     .k_last = !fil_last && view_channels_last(fil) };
  for (int i = 0; i < sp; i++) {
    d.in[i] = it->shape[2 + i], d.win[i] = ft->shape[2 + i];
    d.stride[i] = p.stride[i], d.dil[i] = p.dilation[i];
    d.pad[2 * i] = p.pad[2 * i], d.pad[2 * i + 1] = p.pad[2 * i + 1];
  }
  kl_view_err err = { 0 };
  kl_conv_views cv;
  if (!kl_conv_nd_views_build(&d, &cv, &err)) return kl_emit_error(ctx, conv->loc, "rock-conv-to-gemm: %s", err.msg);
  /* the logical dims keep the names view_conv.h gives them in the channels-first layouts */
  static const char *const in_all[] = { "ni", "ci", "di", "hi", "wi" }, *const fil_all[] = { "k", "c", "z", "y", "x" },
                           *const out_all[] = { "no", "ko", "do", "ho", "wo" };
  const char *in_names[KL_CONV_MAX_SPATIAL + 2], *fil_names[KL_CONV_MAX_SPATIAL + 2],
      *out_names[KL_CONV_MAX_SPATIAL + 2];
  for (int i = 0; i < 2; i++) in_names[i] = in_all[i], fil_names[i] = fil_all[i], out_names[i] = out_all[i];
  for (int i = 0; i < sp; i++) {
    int j = 2 + KL_CONV_MAX_SPATIAL - sp + i;
    in_names[2 + i] = in_all[j], fil_names[2 + i] = fil_all[j], out_names[2 + i] = out_all[j];
  }
  bool ok = (!in_last || to_logical(&cv.input, r, it->shape, in_names, &err)) &&
      (!fil_last || to_logical(&cv.filter, r, ft->shape, fil_names, &err)) &&
      (!out_last || to_logical(&cv.output, r, out->type->shape, out_names, &err));
  if (!ok) {
    kl_conv_views_free(&cv);
    return kl_emit_error(ctx, conv->loc, "rock-conv-to-gemm: %s", err.msg);
  }
  kl_value *o[3] = { kl_pu_transform(ctx, conv->loc, fil, cv.filter, NULL, conv),
                     kl_pu_transform(ctx, conv->loc, in, cv.input, NULL, conv),
                     kl_pu_transform(ctx, conv->loc, out, cv.output, NULL, conv) };
  kl_conv_views_free(&cv);
  kl_named_attr st[2] = { { "store", kl_attr_str(ctx, "set") },
                          { "split_k_partials", kl_op_attr(conv, "split_k_partials") } };
  kl_op *gemm = kl_op_create(ctx, "rock.gemm", conv->loc, 3, o, 0, NULL, st[1].value ? 2 : 1, st, 0);
  kl_op_insert_before(conv, gemm);
  return kl_op_erase(conv);
}

kl_status kl_rock_conv_to_gemm(kl_op *root) {
  int n;
  kl_op **ops = kl_collect_ops(root, &n);
  kl_status st = KL_OK;
  for (int i = 0; i < n && st == KL_OK; i++)
    if (!strcmp(ops[i]->name, "rock.conv")) st = lower_conv(ops[i]);
  free(ops);
  return st;
}

static kl_status run_c2g(kl_op *module, const kl_pass_options *o, void *user) { return kl_rock_conv_to_gemm(module); }

void kl__register_rock_conv_to_gemm(kl_ctx *ctx);
void kl__register_rock_conv_to_gemm(kl_ctx *ctx) {
  kl_pass_info info = {
    "rock-conv-to-gemm",
    "rewrites rock.conv (1-D, 2-D, 3-D) as rock.gemm over the implicit-GEMM views of filter, input and "
    "output (any layout, stride, padding, dilation, groups)",
    NULL,
    0,
    run_c2g,
    NULL
  };
  kl_register_pass(ctx, &info);
}

/* rock_conv_to_gemm.c — the `rock-conv-to-gemm` pass: every rock.conv becomes a
 * rock.gemm over the implicit-GEMM views of its three buffers (core/view_conv.h):
 *   filter [K, C/G, Y, X] -> A [G, gemmK = C/G*Y*X, gemmM = K/G]
 *   input  [N, C, Hi, Wi] -> B [G, gemmK, gemmN = N*Ho*Wo]   (Unmerge of C into G x C/G,
 *                            Pad, Embed windows y*dil + ho*stride, Merge)
 *   output [N, K, Ho, Wo] -> C [G, gemmM, gemmN]
 * The buffers are logical (N,C,H,W / K,C/G,Y,X / N,K,Ho,Wo); their strides are the
 * layout. When an operand is a kernel buffer (not a view) stored NHWC / KYXC / NHWK
 * (strides a dense permutation [0,2,3,1]), gemmK is linearised in memory order
 * ((y*X + x)*C/G + c) and the layout's view is composed with a permutation back to the
 * logical dims, so the views only ever address logical coordinates. Stride, padding,
 * dilation and groups come from the conv's attributes (defaults 1 / 0 / 1 / 1).
 * A `split_k_partials` attribute (split-k-workspace) moves to the gemm. Errors (ranks,
 * shapes that disagree with the attributes) are diagnostics at the conv's location. */
#include "core/dialect_rock.h"
#include "core/pass.h"
#include "core/shape.h"
#include "core/view_conv.h"
#include "passes/pass_util.h"
#include <stdlib.h>
#include <string.h>

/* true when v is a buffer (not a view) whose strides are the dense layout [0,2,3,1]. */
static bool channels_last(kl_value *v) {
  if (v->def && !strcmp(v->def->name, "rock.transform")) return false;
  const kl_type *t = v->type;
  int perm[4];
  if (t->rank != 4 || !kl_strides_to_perm(4, t->shape, t->strides, perm)) return false;
  return perm[0] == 0 && perm[1] == 2 && perm[2] == 3 && perm[3] == 1;
}

/* *v := compose(*v, P) where P maps the channels-last order of `logical` back to it. */
static bool to_logical(kl_view **v, const int64_t *logical, const char *const *names, kl_view_err *err) {
  kl_view *id = kl_view_identity(4, logical, names, err);
  kl_view *p = id ? kl_view_transpose(id, 4, (const int[]){ 0, 2, 3, 1 }, err) : NULL;
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

static kl_status lower_conv(kl_op *conv) {
  kl_ctx *ctx = conv->ctx;
  kl_value *in = conv->opnds[0].value, *fil = conv->opnds[1].value, *out = conv->opnds[2].value;
  const kl_type *it = in->type, *ft = fil->type, *ot = out->type;
  if (it->rank != 4 || ft->rank != 4 || ot->rank != 4)
    return kl_emit_error(ctx, conv->loc, "rock-conv-to-gemm: rock.conv needs rank-4 buffers, got %s, %s, %s", it->text,
                         ft->text, ot->text);
  int64_t stride[2] = { 1, 1 }, pad[4] = { 0, 0, 0, 0 }, dil[2] = { 1, 1 }, groups = 1;
  if ((kl_op_attr(conv, "stride") && kl_op_attr_i64s(conv, "stride", stride, 2) != 2) ||
      (kl_op_attr(conv, "padding") && kl_op_attr_i64s(conv, "padding", pad, 4) != 4) ||
      (kl_op_attr(conv, "dilation") && kl_op_attr_i64s(conv, "dilation", dil, 2) != 2) ||
      (kl_op_attr(conv, "groups") && !kl_op_attr_i64(conv, "groups", &groups) &&
       kl_op_attr_i64s(conv, "groups", &groups, 1) != 1))
    return kl_emit_error(ctx, conv->loc, "rock-conv-to-gemm: bad stride / padding / dilation / groups attribute");
  bool nhwc = channels_last(in), kyxc = channels_last(fil), nhwk = channels_last(out);
  kl_conv2d d = { .n = it->shape[0],
                  .c = it->shape[1],
                  .hi = it->shape[2],
                  .wi = it->shape[3],
                  .k = ft->shape[0],
                  .y = ft->shape[2],
                  .x = ft->shape[3],
                  .groups = groups,
                  .stride_h = stride[0],
                  .stride_w = stride[1],
                  .dil_h = dil[0],
                  .dil_w = dil[1],
                  .pad_top = pad[0],
                  .pad_bottom = pad[1],
                  .pad_left = pad[2],
                  .pad_right = pad[3],
                  .in_layout = nhwc ? KL_CONV_NHWC : KL_CONV_NCHW,
                  .filter_layout = kyxc ? KL_CONV_KYXC : KL_CONV_KCYX,
                  .out_layout = nhwk ? KL_CONV_NHWK : KL_CONV_NKHW };
  kl_view_err err = { 0 };
  int64_t ho, wo;
  if (!kl_conv_out_size(&d, &ho, &wo, &err)) return kl_emit_error(ctx, conv->loc, "rock-conv-to-gemm: %s", err.msg);
  if (groups < 1 || d.c % groups || ft->shape[1] != d.c / groups || ot->shape[0] != d.n || ot->shape[1] != d.k ||
      ot->shape[2] != ho || ot->shape[3] != wo)
    return kl_emit_error(ctx, conv->loc,
                         "rock-conv-to-gemm: shapes disagree: input %s, filter %s, output %s "
                         "(expected filter [%lld,%lld,Y,X] and output [%lld,%lld,%lld,%lld])",
                         it->text, ft->text, ot->text, (long long)d.k, (long long)(groups ? d.c / groups : 0),
                         (long long)d.n, (long long)d.k, (long long)ho, (long long)wo);
  kl_conv_views cv;
  if (!kl_conv_views_build(&d, &cv, &err)) return kl_emit_error(ctx, conv->loc, "rock-conv-to-gemm: %s", err.msg);
  /* the logical dims keep the names view_conv.h gives them in the NCHW / KCYX / NKHW layouts */
  static const char *const in_names[4] = { "ni", "ci", "hi", "wi" }, *const fil_names[4] = { "k", "c", "y", "x" },
                           *const out_names[4] = { "no", "ko", "ho", "wo" };
  bool ok = (!nhwc || to_logical(&cv.input, it->shape, in_names, &err)) &&
      (!kyxc || to_logical(&cv.filter, ft->shape, fil_names, &err)) &&
      (!nhwk || to_logical(&cv.output, ot->shape, out_names, &err));
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
  kl_pass_info info = { "rock-conv-to-gemm",
                        "rewrites rock.conv as rock.gemm over the implicit-GEMM views of filter, input and output "
                        "(any layout, stride, padding, dilation, groups)",
                        NULL,
                        0,
                        run_c2g,
                        NULL };
  kl_register_pass(ctx, &info);
}

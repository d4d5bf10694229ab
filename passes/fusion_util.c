/* fusion_util.c — uses through views, chain views and the GEMM-operand-to-inputs walk
 * of regular form (passes/fusion_util.h). */
#include "passes/fusion_util.h"
#include "core/dialect_rock.h"
#include "passes/lower_loops.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static bool is_transform_use(const kl_use *u) {
  return u->index == 0 && kl_op_has_trait(u->user, KL_TRAIT_VIEW) && u->user->nresults == 1 &&
      u->user->results[0].type->kind == KL_TY_BUFFER;
}

static void uses_rec(kl_value *v, int depth, kl_fu_use **out, int *n, int *cap) {
  for (kl_use *u = v->first_use; u; u = u->next) {
    if (is_transform_use(u)) {
      uses_rec(&u->user->results[0], depth + 1, out, n, cap);
      continue;
    }
    if (*n == *cap) {
      *cap = *cap ? 2 * *cap : 8;
      *out = kl_xrealloc(*out, (size_t)*cap * sizeof **out);
    }
    (*out)[(*n)++] = (kl_fu_use){ u->user, u->index, v, depth };
  }
}

int kl_fu_uses(kl_value *buf, kl_fu_use **out) {
  int n = 0, cap = 0;
  *out = NULL;
  uses_rec(buf, 0, out, &n, &cap);
  return n;
}

bool kl_fu_is_global_alloc(const kl_value *buf) {
  return buf->def && !strcmp(buf->def->name, "rock.alloc") && buf->def->nopnds == 0 &&
      buf->type->kind == KL_TY_BUFFER && buf->type->space == KL_SPACE_GLOBAL;
}

bool kl_fu_fusing_write(const kl_op *op, int i) { return kl_op_has_trait(op, KL_TRAIT_FUSING) && i == op->nopnds - 1; }
bool kl_fu_fusing_read(const kl_op *op, int i) {
  return kl_op_has_trait(op, KL_TRAIT_FUSING) && i >= 0 && i < op->nopnds - 1;
}

kl_view *kl_fu_chain_view(kl_value *v, kl_value **under, char *err, size_t n) {
  return kl_ll_access_view(NULL, v, under, err, n);
}

const char *kl_fu_value_name(const kl_value *v, char *buf, size_t n) {
  if (v->name_hint && *v->name_hint) {
    snprintf(buf, n, "%%%s", v->name_hint);
    return buf;
  }
  char loc[256];
  if (v->def) {
    kl_loc_format(v->def->loc, loc, sizeof loc);
    snprintf(buf, n, "the %s at %s", v->def->name, loc);
  } else {
    snprintf(buf, n, "block argument %d", v->index);
  }
  return buf;
}

static int fail(char *err, size_t n, const char *msg) {
  if (err && n) snprintf(err, n, "%s", msg);
  return -1;
}

int kl_fu_operand_inputs(kl_value *opnd, kl_op **writer, kl_value **alloc, kl_fu_input **inputs, char *err, size_t n) {
  char e[512];
  *inputs = NULL;
  kl_value *a;
  kl_view *P = kl_fu_chain_view(opnd, &a, e, sizeof e);
  if (!P) return fail(err, n, e);
  if (!kl_fu_is_global_alloc(a)) {
    kl_view_free(P);
    return fail(err, n, "the operand does not read a global rock.alloc");
  }
  kl_fu_use *us;
  int nu = kl_fu_uses(a, &us);
  kl_op *w = NULL;
  const char *why = NULL;
  for (int i = 0; i < nu && !why; i++) {
    if (!kl_fu_fusing_write(us[i].user, us[i].index)) continue;
    if (w)
      why = "the buffer has several fusing writers";
    else if (us[i].depth)
      why = "the buffer's fusing writer writes it through a view (not regular: run rock-regularize)";
    w = us[i].user;
  }
  for (int i = 0; i < nu && !why && w; i++)
    if (us[i].user == w && !kl_fu_fusing_write(w, us[i].index)) why = "the writer also reads the buffer";
  free(us);
  if (!why && !w) why = "no fusing op writes the buffer";
  if (why) {
    kl_view_free(P);
    return fail(err, n, why);
  }
  int nin = w->nopnds - 1;
  kl_fu_input *in = kl_xcalloc((size_t)(nin + 1), sizeof *in);
  for (int j = 0; j < nin; j++) {
    kl_value *base;
    kl_view *X = kl_fu_chain_view(w->opnds[j].value, &base, e, sizeof e);
    kl_view_err ve = { 0 };
    kl_view *c = X ? kl_view_compose(P, X, &ve) : NULL;
    if (X && !c) snprintf(e, sizeof e, "cannot compose the operand's view with input %d's: %s", j, ve.msg);
    kl_view_free(X);
    if (!c) {
      kl_view_free(P);
      kl_fu_inputs_free(in, j);
      return fail(err, n, e);
    }
    in[j].base = base;
    in[j].view = kl_view_simplify(c);
    in[j].writer_operand = j;
    kl_view_free(c);
  }
  kl_view_free(P);
  *writer = w;
  *alloc = a;
  *inputs = in;
  return nin;
}

void kl_fu_inputs_free(kl_fu_input *inputs, int n) {
  if (!inputs) return;
  for (int i = 0; i < n; i++) kl_view_free(inputs[i].view);
  free(inputs);
}

/* kernel_access.c — the global accesses of a lowered kernel (see kernel_access.h). */
#include "driver/kernel_access.h"
#include "core/arena.h"
#include "core/context.h"
#include "core/attr.h"
#include "core/type.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
  kl_block *entry;
  const char *const *names;
  int nargs;
  kl_access_info *a;
  int n, cap;
  int *argi; /* argument index of each entry, for sorting */
} walk_st;

static int64_t access_bytes(const kl_type *t) {
  const kl_type *e = t->kind == KL_TY_VECTOR ? t->elem : t;
  int64_t lanes = t->kind == KL_TY_VECTOR ? t->shape[0] : 1, b = (kl_type_bits(e) + 7) / 8;
  return (b < 1 ? 1 : b) * lanes;
}

static kl_walk_result visit(kl_op *op, void *ud) {
  walk_st *s = ud;
  bool load = !strcmp(op->name, "rock.load"), store = !strcmp(op->name, "rock.store");
  bool acopy = !strcmp(op->name, "rock.async_copy"); /* cp.async: a load of its source argument */
  bool tma = !strcmp(op->name, "rock.tma_load");     /* TMA: a load of one box of its argument */
  if (!load && !store && !acopy && !tma) return KL_WALK_ADVANCE;
  int bi = load || acopy || tma ? 0 : 1;
  if (op->nopnds <= bi || (load && op->nresults != 1)) return KL_WALK_ADVANCE;
  kl_value *buf = op->opnds[bi].value;
  if (buf->def || buf->block != s->entry || buf->index >= s->nargs) return KL_WALK_ADVANCE;
  int64_t len = 0;
  if (acopy && (!kl_op_attr_i64(op, "len", &len) || len < 1)) return KL_WALK_ADVANCE;
  if (tma) { /* the box's elements */
    int64_t box[8];
    int nb = 0;
    if (!kl_attr_get_i64_array(kl_op_attr(op, "box"), 8, box, &nb) || nb < 1) return KL_WALK_ADVANCE;
    len = 1;
    for (int i = 0; i < nb; i++) len *= box[i];
  }
  int64_t bytes = acopy || tma ? len * access_bytes(buf->type->elem)
                               : access_bytes(load ? op->results[0].type : op->opnds[0].value->type);
  load = load || acopy || tma;
  const char *kind = load ? "load" : "store";
  for (int i = 0; i < s->n; i++)
    if (s->argi[i] == buf->index && !strcmp(s->a[i].kind, kind) && s->a[i].bytes == bytes) {
      s->a[i].count++;
      return KL_WALK_ADVANCE;
    }
  if (s->n == s->cap) {
    s->cap = s->cap ? 2 * s->cap : 8;
    s->a = kl_xrealloc(s->a, s->cap * sizeof *s->a);
    s->argi = kl_xrealloc(s->argi, s->cap * sizeof *s->argi);
  }
  const char *name = s->names && s->names[buf->index] ? s->names[buf->index] : NULL;
  if (!name) {
    char b[32];
    snprintf(b, sizeof b, "arg%d", buf->index);
    name = kl_intern(op->ctx, b);
  }
  s->argi[s->n] = buf->index;
  s->a[s->n++] = (kl_access_info){ name, kind, bytes, 1 };
  return KL_WALK_ADVANCE;
}

kl_access_info *kl_kernel_accesses(kl_op *fn, const char *const *arg_names, int nargs, int *n) {
  walk_st s = { .entry = fn && fn->nregions ? fn->regions[0].first : NULL, .names = arg_names, .nargs = nargs };
  *n = 0;
  if (!s.entry) return NULL;
  kl_walk_pre(fn, visit, &s);
  /* insertion sort: argument, loads first, width */
  for (int i = 1; i < s.n; i++)
    for (int j = i; j > 0; j--) {
      kl_access_info *x = &s.a[j - 1], *y = &s.a[j];
      int ax = s.argi[j - 1], ay = s.argi[j];
      bool lx = x->kind[0] == 'l', ly = y->kind[0] == 'l';
      bool after = ax > ay || (ax == ay && ((!lx && ly) || (lx == ly && x->bytes > y->bytes)));
      if (!after) break;
      kl_access_info t = *x;
      *x = *y;
      *y = t;
      int ti = s.argi[j - 1];
      s.argi[j - 1] = s.argi[j];
      s.argi[j] = ti;
    }
  free(s.argi);
  *n = s.n;
  return s.a;
}

/* lower_loops_wgmma.c — rock-lower-loops: a rock.wgmma_desc (passes/rock_wgmma.h) whose
 * LDS operand became a rock.transform chain after the blockwise lowering (rock-output-swizzle
 * grows the K-loop LDS buffer into a slice of a larger one) is re-addressed on the
 * underlying buffer: the chain's composed view is emitted at the op's indices (kl_view_emit;
 * the blockwise lowering proved every tile coordinate valid), the op is recreated on the
 * buffer with those coordinates, so the transform chain dies and is erased with the others. */
#include "passes/rock_wgmma.h"
#include "passes/rock_tma.h"
#include "passes/lower_loops.h"
#include "passes/perf_config.h"
#include "core/view_emit.h"
#include <stdio.h>
#include <string.h>

/* The indices opnds[first..first + rank) of `op` into `buf` (a rock.transform chain over an
 * LDS buffer) re-addressed on the underlying buffer: its coordinates emitted before `op` into
 * lower[], the buffer returned (NULL after a located failure naming `what`). */
static kl_value *readdress(kl_rewriter *rw, kl_op *op, kl_value *buf, int first, const char *what, kl_value **lower) {
  const kl_type *bt = buf->type;
  char err[512];
  const char *names[KL_VIEW_MAX_DIMS];
  char nb[KL_VIEW_MAX_DIMS][16];
  for (int i = 0; i < bt->rank; i++) {
    snprintf(nb[i], sizeof nb[i], "d%d", i);
    names[i] = nb[i];
  }
  kl_vb b;
  kl_vb_identity(&b, bt->rank, bt->shape, names);
  kl_view *top = kl_vb_finish(&b, err, sizeof err);
  kl_value *raw = NULL;
  kl_view *v = top ? kl_tile_compose_to_buffer(top, buf, &raw, err, sizeof err) : NULL;
  kl_view_free(top);
  if (!v) {
    kl_rewriter_fail(rw, op->loc, "%s: %s", what, err);
    return NULL;
  }
  kl_rewriter_set_insertion_before(rw, op);
  kl_emitter e = { rw, op->loc };
  kl_value *up[KL_VIEW_MAX_DIMS], *valid = NULL;
  for (int i = 0; i < bt->rank; i++) up[i] = op->opnds[first + i].value;
  kl_view_emit(&e, v, up, lower, &valid);
  kl_view_free(v);
  return raw;
}

bool kl__ll_lower_wgmma_desc(const kl_pattern *pat, kl_op *op, kl_rewriter *rw) {
  (void)pat;
  kl_value *buf = op->opnds[0].value;
  if (!buf->def || strcmp(buf->def->name, "rock.transform"))
    return kl_rewriter_notify_no_match(rw, "the descriptor addresses its buffer directly");
  const kl_type *bt = buf->type;
  if (bt->kind != KL_TY_BUFFER || op->nopnds != 1 + bt->rank) {
    kl_rewriter_fail(rw, op->loc, "rock.wgmma_desc: needs a buffer and %d indices", bt->rank);
    return false;
  }
  kl_value *lower[KL_VIEW_MAX_DIMS];
  kl_value *raw = readdress(rw, op, buf, 1, "rock.wgmma_desc", lower);
  if (!raw) return false;
  kl_value *o[1 + KL_VIEW_MAX_DIMS];
  o[0] = raw;
  int rank = raw->type->rank;
  for (int i = 0; i < rank; i++) o[1 + i] = lower[i];
  const kl_type *rt = op->results[0].type;
  kl_op *n = kl_rewriter_create(rw, "rock.wgmma_desc", op->loc, 1 + rank, o, 1, &rt, op->nattrs, op->attrs, 0);
  kl_value *res = &n->results[0];
  kl_rewriter_replace_op(rw, op, &res);
  return true;
}

/* rock.tma_load(%src, %bars, %bi, %lds, %li..., %c...) whose LDS destination is a
 * rock.transform chain: the destination element re-addressed on the underlying buffer
 * (the box lands dense from there: the chain is a slice of a larger buffer or the join of
 * the K loop's tiles, contiguous, which join_lds guarantees). */
bool kl__ll_lower_tma_dst(const kl_pattern *pat, kl_op *op, kl_rewriter *rw) {
  (void)pat;
  kl_value *buf = op->nopnds > 3 ? op->opnds[3].value : NULL;
  if (!buf || !buf->def || strcmp(buf->def->name, "rock.transform"))
    return kl_rewriter_notify_no_match(rw, "the TMA load addresses its LDS buffer directly");
  const kl_type *bt = buf->type;
  int nc = op->nopnds - 4 - bt->rank;
  if (bt->kind != KL_TY_BUFFER || nc < 1) {
    kl_rewriter_fail(rw, op->loc, "rock.tma_load: needs an LDS buffer and %d indices", bt->rank);
    return false;
  }
  kl_value *lower[KL_VIEW_MAX_DIMS];
  kl_value *raw = readdress(rw, op, buf, 4, "rock.tma_load", lower);
  if (!raw) return false;
  kl_value *o[4 + 2 * KL_VIEW_MAX_DIMS];
  int no = 0;
  for (int i = 0; i < 3; i++) o[no++] = op->opnds[i].value;
  o[no++] = raw;
  for (int i = 0; i < raw->type->rank; i++) o[no++] = lower[i];
  for (int i = 0; i < nc; i++) o[no++] = op->opnds[4 + bt->rank + i].value;
  kl_op *n = kl_rewriter_create(rw, "rock.tma_load", op->loc, no, o, 0, NULL, op->nattrs, op->attrs, 0);
  (void)n;
  kl_rewriter_erase_op(rw, op);
  return true;
}

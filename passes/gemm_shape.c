/* gemm_shape.c — the GEMM a conv / dot becomes and the config it gets (contract in
 * gemm_shape.h). */
#include "passes/gemm_shape.h"
#include "passes/fusion_util.h"
#include "passes/rock_wgmma.h"
#include "core/dialect_rock.h"
#include "passes/lower_barrier.h"
#include "passes/lower_loops.h"
#include <string.h>

static bool flag(const kl_op *op, const char *name) {
  const kl_attr *a = kl_op_attr(op, name);
  return a && (a->kind == KL_AT_UNIT || (a->kind == KL_AT_BOOL && a->i));
}

bool kl_gemm_shape_of(const kl_op *anchor, kl_gemm_shape *out) {
  if (!anchor || anchor->nopnds < 2 || anchor->nresults < 1) return false;
  const kl_type *at = anchor->opnds[0].value->type, *bt = anchor->opnds[1].value->type, *yt = anchor->results[0].type;
  kl_gemm_shape s = { 0, 0, 0, 0, 0, 1, 0, false };
  switch (kl_op_kernel_kind(anchor)) {
    case KL_KERNEL_CONV: {
      if (at->rank != 4 || bt->rank != 4 || yt->rank != 4) return false;
      int64_t g = 1;
      if (!kl_op_attr_i64(anchor, "groups", &g)) kl_op_attr_i64s(anchor, "groups", &g, 1);
      if (g < 1) g = 1;
      s.conv = true;
      s.groups = s.G = g;
      s.M = bt->shape[0] / g;
      s.N = yt->shape[0] * yt->shape[2] * yt->shape[3];
      s.K = bt->shape[1] * bt->shape[2] * bt->shape[3];
      s.k_extent = bt->shape[1];
      s.a_operand = 1;
      break;
    }
    case KL_KERNEL_DOT: {
      if (yt->rank < 2 || at->rank < 2) return false;
      bool ta = flag(anchor, "transpose_a");
      s.G = 1;
      for (int i = 0; i < yt->rank - 2; i++) s.G *= yt->shape[i];
      s.M = yt->shape[yt->rank - 2];
      s.N = yt->shape[yt->rank - 1];
      s.K = s.k_extent = at->shape[ta ? at->rank - 2 : at->rank - 1];
      s.a_operand = 0;
      break;
    }
    default: return false;
  }
  if (s.G < 1 || s.M < 1 || s.N < 1 || s.K < 1) return false;
  *out = s;
  return true;
}

bool kl_gemm_config_pick(const kl_target *t, const kl_type *ea, const kl_type *eb, const char *given, unsigned flags,
                         int64_t G, int64_t M, int64_t N, int64_t K, kl_gemm_config *out, char *err, size_t errlen) {
  if (given && !*given) given = NULL;
  memset(out, 0, sizeof *out);
  int bytes = (kl_type_bits(ea) + 7) / 8;
  if ((kl_type_bits(eb) + 7) / 8 > bytes) bytes = (kl_type_bits(eb) + 7) / 8;
  kl_accel_config ac;
  memset(&ac, 0, sizeof ac);
  const kl_accel_desc *ad = NULL;
  bool use_accel = flags & KL_GEMM_PICK_ACCEL;
  /* the Hopper path (sm_90a's default): only its heuristic here; a "v3:" string goes
   * through kl_accel_select */
  int accel = use_accel && (flags & KL_GEMM_PICK_WGMMA) && !given
      ? kl_wgmma_select(t, ea, eb, NULL, G, M, N, K, &ac, &ad, err, errlen)
      : 0;
  if (use_accel && !accel) accel = kl_accel_select(t, ea, eb, given, G, M, N, K, &ac, &ad, err, errlen);
  if (accel < 0) return false;
  /* both operands async (the cp.async pipeline): mma.sync's heuristic for it */
  if (accel && !given && (flags & KL_GEMM_PICK_ASYNC) && ad->kind == KL_ACCEL_MMA_SYNC &&
      !kl_accel_config_heuristic_async(t, ad, G, M, N, K, bytes, &ac))
    return kl_perf_errf(err, errlen, "no perf config fits target %s", t->name);
  kl_perf_config pc = { 0 };
  pc.split_k = 1;
  if (accel) {
    pc = (kl_perf_config){ ac.m_per_block, ac.n_per_block, ac.k_per_block, 1, 1, ac.kpack, ac.split_k };
    kl_accel_thread_tile(&ac, ad, &pc.m_per_thread, &pc.n_per_thread);
    out->ac = ac;
    out->ad = ad;
    out->path = ad->kind == KL_ACCEL_WGMMA ? KL_GEMM_PATH_WGMMA : KL_GEMM_PATH_ACCEL;
  } else if (given) {
    if (!kl_perf_config_parse(given, &pc, err, errlen) || !kl_perf_config_validate(&pc, t, bytes, err, errlen))
      return false;
  } else if (!kl_perf_config_heuristic(t, G, M, N, K, bytes, &pc)) {
    return kl_perf_errf(err, errlen, "no perf config fits target %s", t->name);
  }
  if (pc.split_k < 1) pc.split_k = 1;
  out->pc = pc;
  return true;
}

kl_async_major kl_gemm_async_major(kl_value *v) {
  if (!v || v->type->kind != KL_TY_BUFFER || v->type->rank != 3 || kl_type_bits(v->type->elem) != 16)
    return KL_ASYNC_NONE;
  int nc;
  kl_value *u = kl_rock_underlying(v, NULL, &nc, 0);
  if (!u || u->def || u->type->kind != KL_TY_BUFFER || u->type->space == KL_SPACE_LDS) return KL_ASYNC_NONE;
  kl_op *w = NULL;
  kl_value *al = NULL;
  kl_fu_input *in = NULL;
  int n = kl_fu_operand_inputs(v, &w, &al, &in, NULL, 0);
  if (n > 0) kl_fu_inputs_free(in, n);
  if (n >= 1) return KL_ASYNC_NONE; /* an input-fusion prologue (n < 0: none) */
  char err[256];
  kl_vb vb;
  static const char *const names[] = { "g", "k", "x" };
  kl_vb_identity(&vb, 3, v->type->shape, names);
  kl_view *id = kl_vb_finish(&vb, err, sizeof err);
  kl_async_major r = !id                  ? KL_ASYNC_NONE
      : kl_tile_vector_len(id, v, 1) >= 8 ? KL_ASYNC_K
      : kl_tile_vector_len(id, v, 2) >= 8 ? KL_ASYNC_MN
                                          : KL_ASYNC_NONE;
  kl_view_free(id);
  return r;
}

bool kl_gemm_bounded_operand(kl_value *v) {
  kl_op *ops[16];
  int n = 0;
  kl_rock_underlying(v, ops, &n, 16);
  for (int i = 0; i < n && i < 16; i++) {
    const kl_view *w = kl_ll_op_view(ops[i]);
    if (w && kl_view_invalid_dims(w)) return true;
  }
  return false;
}

/* the widest load (bytes, <= 16) along dims 1 (K) and 2 (X) of the view `full` into the
 * buffer under (kl_ll_vector_len); 16 where it cannot tell */
static int64_t view_load_bytes(const kl_view *full, kl_value *under) {
  const kl_type *bt = under->type;
  if (!full || bt->kind != KL_TY_BUFFER || kl_view_lower_rank(full) != bt->rank || kl_view_rank(full) != 3) return 16;
  int64_t v1 = kl_ll_vector_len(full, under, 1), v2 = kl_ll_vector_len(full, under, 2);
  int64_t best = (v1 > v2 ? v1 : v2) * ((kl_type_bits(bt->elem) + 7) / 8);
  return best > 16 ? 16 : best;
}

int64_t kl_gemm_load_bytes(kl_value *v) {
  if (!v || v->type->kind != KL_TY_BUFFER || v->type->rank != 3 || kl_gemm_bounded_operand(v)) return 16;
  kl_op *w = NULL;
  kl_value *al = NULL;
  kl_fu_input *in = NULL;
  int n = kl_fu_operand_inputs(v, &w, &al, &in, NULL, 0);
  if (n >= 1) { /* an input-fusion prologue: its inputs' loads */
    int64_t bytes = 16;
    for (int j = 0; j < n; j++) {
      int64_t b = view_load_bytes(in[j].view, in[j].base);
      if (b < bytes) bytes = b;
    }
    kl_fu_inputs_free(in, n);
    return bytes;
  }
  char err[256];
  kl_vb vb;
  static const char *const names[] = { "g", "k", "x" };
  kl_vb_identity(&vb, 3, v->type->shape, names);
  kl_view *id = kl_vb_finish(&vb, err, sizeof err);
  if (!id) return 16;
  kl_value *u = NULL;
  kl_view *full = kl_tile_compose_to_buffer(id, v, &u, NULL, 0);
  int64_t bytes = full ? view_load_bytes(full, u) : 16;
  kl_view_free(full);
  kl_view_free(id);
  return bytes;
}

bool kl_gemm_amd_k_loop(kl_op *gemm, const kl_target *t) {
  if (!t || t->arch != KL_ARCH_AMDGPU || !kl_amdgpu_barrier_drains(t->cpu) || gemm->nopnds < 2) return false;
  return !kl_gemm_bounded_operand(gemm->opnds[0].value) && !kl_gemm_bounded_operand(gemm->opnds[1].value);
}

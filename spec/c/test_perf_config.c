/* test_perf_config.c — perf configs (parse, print, validation messages naming the
 * field, the heuristic on every target) and a numeric check of the tiled GEMM passes:
 * kernels with a rock.gemm over random odd sizes, operand layouts (plain, transposed
 * through views, strided buffer types) and perf configs (heuristic and given, host and
 * GPU targets, kpack > 1) go through rock-gemm-to-gridwise + rock-gridwise-to-blockwise
 * (and then rock-blockwise-to-threadwise); a small interpreter runs the resulting
 * program for every workgroup and thread (threads in lock step; views evaluated with
 * kl_view_eval through each rock.transform chain; LDS accesses checked for races
 * between barriers; every C element must be written exactly once; padding reads 0 and
 * padding writes are dropped) and the result is compared exactly with a direct matmul
 * of small random integers (never zeros), plus an all-ones run (C = K exactly: every k
 * counted once). */
#include "core/pass.h"
#include "ctx_test_util.h"
#include "core/print.h"
#include "core/verify.h"
#include "core/dialect_rock.h"
#include "core/dialect_builtin.h"
#include "core/target.h"
#include "passes/perf_config.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"

static uint64_t rng = 0x9e3779b97f4a7c15ull;
static uint64_t rnd(void) {
  rng ^= rng << 13;
  rng ^= rng >> 7;
  rng ^= rng << 17;
  return rng;
}
static int64_t rnd_in(int64_t lo, int64_t hi) { return lo + (int64_t)(rnd() % (uint64_t)(hi - lo + 1)); }

/* ------------------------------------------------------------ parse / validate */
static void test_parse(void) {
  kl_perf_config pc;
  char err[512], buf[160];
  CHECK(kl_perf_config_parse("v1:64,32,16,8,4,2", &pc, err, sizeof err));
  CHECK(pc.m_per_block == 64 && pc.n_per_block == 32 && pc.k_per_block == 16 && pc.m_per_thread == 8 &&
        pc.n_per_thread == 4 && pc.kpack == 2);
  CHECK(!strcmp(kl_perf_config_print(&pc, buf, sizeof buf), "v1:64,32,16,8,4,2"));
  CHECK(kl_perf_config_block_size(&pc) == 64);
  CHECK(pc.split_k == 1); /* six fields: no split */
  /* the optional 7th field, splitK: printed only when > 1 */
  CHECK(kl_perf_config_parse("v1:64,32,16,8,4,2,8", &pc, err, sizeof err) && pc.split_k == 8 && pc.kpack == 2);
  CHECK(!strcmp(kl_perf_config_print(&pc, buf, sizeof buf), "v1:64,32,16,8,4,2,8"));
  CHECK(kl_perf_config_parse("v1:64,32,16,8,4,2,1", &pc, err, sizeof err) && pc.split_k == 1);
  CHECK(!strcmp(kl_perf_config_print(&pc, buf, sizeof buf), "v1:64,32,16,8,4,2"));
  CHECK(kl_perf_config_parse("v1:64,32,16,8,4,2", &pc, err, sizeof err));
  struct {
    const char *s, *want;
  } bad[] = {
    { "v2:64,64,16,64,64,1", "bad version \"v2\"" },
    { "64,64,16,64,64,1", "missing version prefix" },
    { "v1:64,64,16,64,64", "too few fields (5" },
    { "v1:64,64,16,64,64", "missing kpack" },
    { "v1:64,64,16,64,64,1,1,1", "too many fields (8; expected 6 or 7" },
    { "v1:64,64,16,64,64,1,0", "field splitK must be positive, got 0" },
    { "v1:64,64,16,64,64,1,-3", "field splitK must be positive, got -3" },
    { "v1:64,64,16,64,64,1,", "field splitK is empty" },
    { "v1:64,x,16,64,64,1", "field nPerBlock \"x\" is not an integer" },
    { "v1:64,64,0,64,64,1", "field kPerBlock must be positive, got 0" },
    { "v1:64,64,16,-4,64,1", "field mPerThread must be positive, got -4" },
    { "v1:64,64,16,64,,1", "field nPerThread is empty" },
    { "v1:64,64,16,64,64,1 ", "field kpack \"1 \" is not an integer" },
    { "v1:", "field mPerBlock is empty" },
    { "v1:99999999999999999999,1,1,1,1,1", "field mPerBlock is too large" },
  };
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    err[0] = 0;
    bool ok = kl_perf_config_parse(bad[i].s, &pc, err, sizeof err);
    CHECK(!ok && strstr(err, bad[i].want), "\"%s\": got \"%s\", want \"%s\"", bad[i].s, err, bad[i].want);
  }
  printf("parse/print: ok\n");
}

static void test_validate(void) {
  const kl_target *host = kl_target_lookup("host"), *gfx = kl_target_lookup("gfx942"), *sm = kl_target_lookup("sm_90");
  char err[512];
  struct {
    const char *s;
    const kl_target *t;
    int eb;
    const char *want;
  } cases[] = {
    { "v1:64,64,16,64,64,1", NULL, 4, NULL },
    { "v1:64,64,64,64,64,1", NULL, 8, NULL }, /* exactly 64 KiB */
    { "v1:64,64,65,64,64,1", NULL, 8, "tile larger than LDS" },
    { "v1:64,64,16,32,64,1", NULL, 4, "block size (mPerBlock/mPerThread)*(nPerBlock/nPerThread) = 2 exceeds" },
    { "v1:64,64,16,3,64,1", NULL, 4, "mPerBlock (64) is not a multiple of mPerThread (3)" },
    { "v1:64,60,16,64,7,1", NULL, 4, "nPerBlock (60) is not a multiple of nPerThread (7)" },
    { "v1:64,64,12,64,64,8", NULL, 4, "kPerBlock (12) is not a multiple of kpack (8)" },
    { "v1:128,128,16,8,8,1", (const kl_target *)1, 4, NULL },
    { "v1:128,128,16,8,8,4", (const kl_target *)1, 2, NULL },
    { "v1:256,256,64,8,8,1", (const kl_target *)1, 4,
      "tile larger than LDS: kPerBlock*(mPerBlock+nPerBlock)*4 bytes = 131072 > 65536" },
    { "v1:256,256,16,4,4,1", (const kl_target *)1, 4,
      "block size (mPerBlock/mPerThread)*(nPerBlock/nPerThread) = 4096 exceeds the max workgroup size 1024" },
    { "v1:128,128,1,8,8,1", (const kl_target *)1, 4,
      "kPerBlock*mPerBlock (128) is not a multiple of the block size 256" },
    { "v1:128,8,8,1,1,1", (const kl_target *)1, 4,
      "kPerBlock*nPerBlock (64) is not a multiple of the block size 1024" },
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    kl_perf_config pc;
    const kl_target *t = cases[i].t == (const kl_target *)1 ? gfx : cases[i].t ? cases[i].t : host;
    CHECK(kl_perf_config_parse(cases[i].s, &pc, err, sizeof err));
    err[0] = 0;
    bool ok = kl_perf_config_validate(&pc, t, cases[i].eb, err, sizeof err);
    if (!cases[i].want)
      CHECK(ok, "%s on %s: %s", cases[i].s, t->name, err);
    else
      CHECK(!ok && strstr(err, cases[i].want), "%s on %s: got \"%s\", want \"%s\"", cases[i].s, t->name, err,
            cases[i].want);
  }
  /* sm_90 has more LDS: 256x256x64 f16 fits (64 KiB), 1024 threads ok */
  kl_perf_config pc = { 256, 256, 64, 8, 8, 1, 1 };
  CHECK(kl_perf_config_validate(&pc, sm, 2, err, sizeof err));
  pc.m_per_block = 0;
  CHECK(!kl_perf_config_validate(&pc, sm, 2, err, sizeof err) && strstr(err, "mPerBlock must be positive"));
  CHECK(kl_perf_config_grid_size(&(kl_perf_config){ 64, 32, 1, 1, 1, 1, 1 }, 3, 129, 33) == 3 * 3 * 2);
  printf("validate: ok\n");
}

static void test_heuristic(void) {
  int64_t sizes[] = { 1, 3, 7, 17, 64, 129, 1000, 4096 };
  int ebs[] = { 1, 2, 4, 8 };
  for (int ti = 0; ti < kl_target_count(); ti++) {
    const kl_target *t = kl_target_at(ti);
    for (int e = 0; e < 4; e++)
      for (int i = 0; i < 8; i++)
        for (int j = 0; j < 8; j++) {
          int64_t M = sizes[i], N = sizes[j], K = sizes[(i + j) % 8];
          kl_perf_config pc, pc2;
          char err[512];
          bool ok = kl_perf_config_heuristic(t, 1, M, N, K, ebs[e], &pc);
          CHECK(ok, "heuristic failed on %s", t->name);
          if (!ok) continue;
          CHECK(kl_perf_config_validate(&pc, t, ebs[e], err, sizeof err), "%s: %s", t->name, err);
          CHECK(kl_perf_config_heuristic(t, 1, M, N, K, ebs[e], &pc2) &&
                !memcmp(&pc, &pc2, sizeof pc)); /* deterministic */
          if (t->max_workgroup_size == 1) CHECK(kl_perf_config_block_size(&pc) == 1);
        }
  }
  /* host: big problems get the big tile (the host micro-kernel model: 256x256, K 32 so
   * that the LDS tiles fit 64 KB); tiny ones do not pad K=1 up to 64 */
  kl_perf_config pc;
  CHECK(kl_perf_config_heuristic(kl_target_lookup("host"), 1, 1024, 1024, 1024, 4, &pc));
  CHECK(pc.m_per_block == 256 && pc.n_per_block == 256 && pc.k_per_block == 32);
  CHECK(kl_perf_config_heuristic(kl_target_lookup("host"), 1, 64, 64, 1, 4, &pc));
  CHECK(pc.k_per_block == 1);
  CHECK(kl_perf_config_heuristic(kl_target_lookup("host"), 1, 1, 1024, 1024, 4, &pc));
  CHECK(pc.m_per_block == 1);
  /* GPU: large problems get 256-thread 128x128 tiles with 8x8 per thread */
  CHECK(kl_perf_config_heuristic(kl_target_lookup("gfx942"), 1, 8192, 8192, 4096, 4, &pc));
  CHECK(pc.m_per_block == 128 && pc.n_per_block == 128 && pc.m_per_thread == 8 && pc.n_per_thread == 8);
  CHECK(kl_perf_config_heuristic(kl_target_lookup("gfx942"), 1, 3, 5, 7, 4, &pc));
  CHECK(kl_perf_config_block_size(&pc) >= 64 && kl_perf_config_block_size(&pc) <= 256);
  printf("heuristic: ok\n");
}

/* ------------------------------------------------------------ interpreter */
typedef struct mem {
  kl_value *base;
  int space;  /* KL_SPACE_* */
  int64_t n;  /* elements per copy */
  int copies; /* private: block size */
  double *data;
  int64_t *wr_ep, *rd_ep;
  int *wr_tid, *rd_tid; /* LDS race tracking */
  int *writes;          /* global: write count per element */
} mem;
typedef struct slot {
  kl_value *v;
  int64_t *iv;
  mem *m;
} slot;
typedef struct sim {
  int bs;
  int64_t bid;
  int64_t epoch;
  slot *slots;
  int nslots, cap;
  mem *mems[64];
  int nmems;
  int errors;
  char first_err[512];
  int64_t macs;
} sim;

static void sim_err(sim *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void sim_err(sim *s, const char *fmt, ...) {
  if (!s->errors++) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(s->first_err, sizeof s->first_err, fmt, ap);
    va_end(ap);
  }
}
static slot *get_slot(sim *s, kl_value *v, bool create) {
  size_t h = ((uintptr_t)v >> 4) * 0x9e3779b97f4a7c15ull;
  for (int i = 0; i < s->cap; i++) {
    slot *sl = &s->slots[(h + i) & (s->cap - 1)];
    if (sl->v == v) return sl;
    if (!sl->v) {
      if (!create) return NULL;
      sl->v = v;
      s->nslots++;
      return sl;
    }
  }
  return NULL;
}
static int64_t *ivals(sim *s, kl_value *v) {
  slot *sl = get_slot(s, v, true);
  if (!sl->iv) sl->iv = kl_xcalloc(s->bs, sizeof *sl->iv);
  return sl->iv;
}
static mem *new_mem(sim *s, kl_value *base, int space, int64_t n, int copies) {
  mem *m = kl_xcalloc(1, sizeof *m);
  m->base = base;
  m->space = space;
  m->n = n;
  m->copies = copies;
  m->data = kl_xmalloc(n * copies * sizeof *m->data);
  for (int64_t i = 0; i < n * copies; i++) m->data[i] = NAN;
  if (space == KL_SPACE_LDS) {
    m->wr_ep = kl_xmalloc(n * sizeof *m->wr_ep);
    m->rd_ep = kl_xmalloc(n * sizeof *m->rd_ep);
    m->wr_tid = kl_xmalloc(n * sizeof *m->wr_tid);
    m->rd_tid = kl_xmalloc(n * sizeof *m->rd_tid);
    for (int64_t i = 0; i < n; i++) {
      m->wr_ep[i] = m->rd_ep[i] = -1;
      m->wr_tid[i] = m->rd_tid[i] = -1;
    }
  }
  if (space == KL_SPACE_GLOBAL) m->writes = kl_xcalloc(n, sizeof *m->writes);
  get_slot(s, base, true)->m = m;
  s->mems[s->nmems++] = m;
  return m;
}
static void free_mem(mem *m) {
  free(m->data);
  free(m->wr_ep);
  free(m->rd_ep);
  free(m->wr_tid);
  free(m->rd_tid);
  free(m->writes);
  free(m);
}
static int64_t buf_extent(const kl_type *t) {
  int64_t e = 1;
  for (int i = 0; i < t->rank; i++) e += (t->shape[i] - 1) * t->strides[i];
  return e;
}

/* Element of value v (through its rock.transform chain) at coords for thread tid. */
static bool locate(sim *s, kl_value *v, const int64_t *coords, int tid, mem **mo, int64_t *idx) {
  int64_t cur[KL_VIEW_MAX_DIMS], nxt[KL_VIEW_MAX_DIMS];
  int rank = v->type->rank;
  for (int i = 0; i < rank; i++) cur[i] = coords[i];
  for (int i = 0; i < rank; i++)
    if (cur[i] < 0 || cur[i] >= v->type->shape[i]) {
      sim_err(s, "coordinate out of range of %s", v->type->text);
      return false;
    }
  bool valid = true;
  while (v->def && !strcmp(v->def->name, "rock.transform")) {
    const kl_view *vw = kl_attr_view(kl_op_attr(v->def, "view"));
    valid = kl_view_eval(vw, cur, nxt) && valid;
    v = v->def->opnds[0].value;
    rank = v->type->rank;
    memcpy(cur, nxt, rank * sizeof *cur);
    if (!valid) return false;
  }
  slot *sl = get_slot(s, v, false);
  if (!sl || !sl->m) {
    sim_err(s, "access to a buffer with no memory");
    return false;
  }
  int64_t a = 0;
  for (int i = 0; i < rank; i++) {
    if (cur[i] < 0 || cur[i] >= v->type->shape[i]) {
      sim_err(s, "valid coordinate out of range of %s", v->type->text);
      return false;
    }
    a += cur[i] * v->type->strides[i];
  }
  *mo = sl->m;
  *idx = a + (sl->m->space == KL_SPACE_PRIVATE ? (int64_t)tid * sl->m->n : 0);
  return true;
}
static double rd(sim *s, mem *m, int64_t i, int tid) {
  if (m->space == KL_SPACE_LDS) {
    if (m->wr_ep[i] == s->epoch && m->wr_tid[i] != tid)
      sim_err(s, "LDS race: read after another thread's write without a barrier");
    if (m->rd_ep[i] == s->epoch && m->rd_tid[i] != tid)
      m->rd_tid[i] = -2;
    else {
      m->rd_ep[i] = s->epoch;
      m->rd_tid[i] = tid;
    }
  }
  return m->data[i];
}
static void wr(sim *s, mem *m, int64_t i, int tid, double v) {
  if (m->space == KL_SPACE_LDS) {
    if (m->wr_ep[i] == s->epoch && m->wr_tid[i] != tid)
      sim_err(s, "LDS race: two threads write one element without a barrier");
    if (m->rd_ep[i] == s->epoch && m->rd_tid[i] != tid)
      sim_err(s, "LDS race: write after another thread's read without a barrier");
    m->wr_ep[i] = s->epoch;
    m->wr_tid[i] = tid;
  }
  if (m->writes) m->writes[i]++;
  m->data[i] = v;
}
static double round_to(const kl_type *t, double v) { return kl_round_to_type(t, v); }

/* The rank-2 element addresses of value v for thread tid (NULL mem = invalid). */
static void table2(sim *s, kl_value *v, int tid, mem **ms, int64_t *ix) {
  int64_t R = v->type->shape[0], C = v->type->shape[1];
  for (int64_t r = 0; r < R; r++)
    for (int64_t c = 0; c < C; c++) {
      int64_t co[2] = { r, c };
      if (!locate(s, v, co, tid, &ms[r * C + c], &ix[r * C + c])) ms[r * C + c] = NULL;
    }
}

static void exec_block(sim *s, kl_block *b);
static void exec_threadwise(sim *s, kl_op *op, bool read) {
  const kl_view *vw = kl_attr_view(kl_op_attr(op, "view"));
  kl_value *src = op->opnds[0].value, *dst = op->opnds[1].value;
  kl_value *reg = read ? dst : src, *glob = read ? src : dst;
  int ne = op->nopnds - 2;
  if (!vw || reg->type->rank != 1 || kl_view_rank(vw) != ne + 1 || kl_view_size(vw, ne) != reg->type->shape[0]) {
    sim_err(s, "%s: bad view / register buffer", op->name);
    return;
  }
  int64_t n = reg->type->shape[0], vlen = 1;
  if (!kl_op_attr_i64(op, "vector_len", &vlen) || vlen < 1 || n % vlen) {
    sim_err(s, "%s: vector_len %lld missing or not dividing %lld", op->name, (long long)vlen, (long long)n);
    return;
  }
  mem **gms = kl_xmalloc(n * sizeof *gms);
  int64_t *gis = kl_xmalloc(n * sizeof *gis);
  for (int t = 0; t < s->bs; t++) {
    int64_t up[KL_VIEW_MAX_DIMS], lo[KL_VIEW_MAX_DIMS];
    for (int e = 0; e < ne; e++) up[e] = ivals(s, op->opnds[2 + e].value)[t];
    for (int64_t it = 0; it < n; it++) {
      up[ne] = it;
      bool valid = kl_view_eval(vw, up, lo);
      mem *gm = NULL, *rm = NULL;
      int64_t gi = 0, ri = 0;
      if (!locate(s, reg, &it, t, &rm, &ri)) {
        sim_err(s, "register access failed");
        goto out;
      }
      if (valid) valid = locate(s, glob, lo, t, &gm, &gi);
      gms[it] = valid ? gm : NULL;
      gis[it] = valid ? gi - (gm->space == KL_SPACE_PRIVATE ? (int64_t)t * gm->n : 0) : 0;
      if (read)
        wr(s, rm, ri, t, valid ? round_to(reg->type->elem, rd(s, gm, gi, t)) : 0.0);
      else if (valid)
        wr(s, gm, gi, t, round_to(glob->type->elem, rd(s, rm, ri, t)));
    }
    /* the recorded vector length must hold: each aligned run all invalid, or all valid,
     * contiguous and aligned in one buffer */
    for (int64_t r = 0; r < n; r += vlen) {
      bool all_invalid = true, ok = true;
      for (int64_t i = 0; i < vlen; i++) all_invalid &= gms[r + i] == NULL;
      if (all_invalid) continue;
      for (int64_t i = 0; i < vlen && ok; i++) ok = gms[r + i] == gms[r] && gis[r + i] == gis[r] + i;
      if (!ok || gis[r] % vlen) {
        sim_err(s, "%s: vector_len %lld does not hold at iter %lld", op->name, (long long)vlen, (long long)r);
        goto out;
      }
    }
  }
out:
  free(gms);
  free(gis);
}
static void exec_blockwise(sim *s, kl_op *op) {
  kl_value *A = op->opnds[0].value, *B = op->opnds[1].value, *acc = op->opnds[2].value, *tidv = op->opnds[3].value;
  int64_t MT, NT, NB, KB, MB;
  kl_op_attr_i64(op, "m_per_thread", &MT);
  kl_op_attr_i64(op, "n_per_thread", &NT);
  kl_op_attr_i64(op, "n_per_block", &NB);
  kl_op_attr_i64(op, "k_per_block", &KB);
  kl_op_attr_i64(op, "m_per_block", &MB);
  mem **ma = kl_xmalloc(KB * MB * sizeof *ma), **mb = kl_xmalloc(KB * NB * sizeof *mb);
  int64_t *ia = kl_xmalloc(KB * MB * sizeof *ia), *ib = kl_xmalloc(KB * NB * sizeof *ib);
  table2(s, A, 0, ma, ia);
  table2(s, B, 0, mb, ib);
  for (int t = 0; t < s->bs; t++) {
    int64_t tid = ivals(s, tidv)[t], tm = tid / (NB / NT), tn = tid % (NB / NT);
    for (int64_t i = 0; i < MT; i++)
      for (int64_t j = 0; j < NT; j++) {
        mem *cm;
        int64_t ci, flat = i * NT + j;
        if (!locate(s, acc, &flat, t, &cm, &ci)) {
          sim_err(s, "acc access failed");
          goto out;
        }
        double sum = rd(s, cm, ci, t);
        for (int64_t k = 0; k < KB; k++) {
          int64_t xa = k * MB + tm * MT + i, xb = k * NB + tn * NT + j;
          double av = ma[xa] ? rd(s, ma[xa], ia[xa], t) : 0, bv = mb[xb] ? rd(s, mb[xb], ib[xb], t) : 0;
          sum += av * bv;
          s->macs++;
        }
        wr(s, cm, ci, t, round_to(acc->type->elem, sum));
      }
  }
out:
  free(ma);
  free(mb);
  free(ia);
  free(ib);
}
static void exec_threadwise_gemm(sim *s, kl_op *op) {
  kl_value *A = op->opnds[0].value, *B = op->opnds[1].value, *C = op->opnds[2].value;
  int64_t K = A->type->shape[0], M = A->type->shape[1], N = B->type->shape[1];
  if (B->type->shape[0] != K || C->type->shape[0] != M || C->type->shape[1] != N) {
    sim_err(s, "threadwise_gemm shapes");
    return;
  }
  mem **ma = kl_xmalloc(K * M * sizeof *ma), **mb = kl_xmalloc(K * N * sizeof *mb),
      **mc = kl_xmalloc(M * N * sizeof *mc);
  int64_t *ia = kl_xmalloc(K * M * sizeof *ia), *ib = kl_xmalloc(K * N * sizeof *ib),
          *ic = kl_xmalloc(M * N * sizeof *ic);
  for (int t = 0; t < s->bs; t++) {
    table2(s, A, t, ma, ia);
    table2(s, B, t, mb, ib);
    table2(s, C, t, mc, ic);
    for (int64_t m = 0; m < M; m++)
      for (int64_t n = 0; n < N; n++) {
        if (!mc[m * N + n]) {
          sim_err(s, "threadwise_gemm: invalid accumulator element");
          goto out;
        }
        double sum = rd(s, mc[m * N + n], ic[m * N + n], t);
        for (int64_t k = 0; k < K; k++) {
          double av = ma[k * M + m] ? rd(s, ma[k * M + m], ia[k * M + m], t) : 0;
          double bv = mb[k * N + n] ? rd(s, mb[k * N + n], ib[k * N + n], t) : 0;
          sum += av * bv;
          s->macs++;
        }
        wr(s, mc[m * N + n], ic[m * N + n], t, round_to(C->type->elem, sum));
      }
  }
out:
  free(ma);
  free(mb);
  free(mc);
  free(ia);
  free(ib);
  free(ic);
}
static void exec_op(sim *s, kl_op *op) {
  const char *n = op->name;
  if (!strcmp(n, "arith.constant")) {
    const kl_attr *v = kl_op_attr(op, "value");
    int64_t *iv = ivals(s, kl_op_result(op, 0));
    for (int t = 0; t < s->bs; t++) iv[t] = v->i;
  } else if (!strcmp(n, "rock.workgroup_id")) {
    int64_t *iv = ivals(s, kl_op_result(op, 0));
    for (int t = 0; t < s->bs; t++) iv[t] = s->bid;
  } else if (!strcmp(n, "rock.workitem_id")) {
    int64_t *iv = ivals(s, kl_op_result(op, 0));
    for (int t = 0; t < s->bs; t++) iv[t] = t;
  } else if (!strcmp(n, "rock.alloc")) {
    const kl_type *t = op->results[0].type;
    slot *sl = get_slot(s, kl_op_result(op, 0), false);
    if (sl && sl->m) { /* re-executed alloc (inside a loop): keep one buffer per block */
      for (int64_t i = 0; i < sl->m->n * sl->m->copies; i++) sl->m->data[i] = NAN;
    } else if (t->space == KL_SPACE_GLOBAL)
      sim_err(s, "global rock.alloc in a GEMM kernel");
    else
      new_mem(s, kl_op_result(op, 0), t->space, buf_extent(t), t->space == KL_SPACE_PRIVATE ? s->bs : 1);
  } else if (!strcmp(n, "rock.transform") || !strcmp(n, "scf.yield") || !strcmp(n, "func.return")) {
  } else if (!strcmp(n, "rock.fill")) {
    const kl_attr *v = kl_op_attr(op, "value");
    double x = v->kind == KL_AT_FLOAT ? v->f : (double)v->i;
    kl_value *b = op->opnds[0].value;
    if (b->def && !strcmp(b->def->name, "rock.transform")) {
      sim_err(s, "fill through a view");
      return;
    }
    mem *m = get_slot(s, b, false)->m;
    for (int t = 0; t < m->copies; t++)
      for (int64_t i = 0; i < m->n; i++) wr(s, m, t * m->n + i, t, x);
  } else if (!strcmp(n, "scf.for")) {
    int64_t lb = ivals(s, op->opnds[0].value)[0], ub = ivals(s, op->opnds[1].value)[0],
            st = ivals(s, op->opnds[2].value)[0];
    for (int i = 0; i < 3; i++)
      for (int t = 1; t < s->bs; t++)
        if (ivals(s, op->opnds[i].value)[t] != ivals(s, op->opnds[i].value)[0]) sim_err(s, "non-uniform loop bounds");
    kl_block *body = op->regions[0].first;
    int64_t *iv = ivals(s, body->args[0]);
    for (int64_t x = lb; x < ub && !s->errors; x += st) {
      for (int t = 0; t < s->bs; t++) iv[t] = x;
      exec_block(s, body);
    }
  } else if (!strcmp(n, "rock.barrier")) {
    s->epoch++;
  } else if (!strcmp(n, "rock.threadwise_read_into")) {
    exec_threadwise(s, op, true);
  } else if (!strcmp(n, "rock.threadwise_write_all")) {
    exec_threadwise(s, op, false);
  } else if (!strcmp(n, "rock.blockwise_gemm")) {
    exec_blockwise(s, op);
  } else if (!strcmp(n, "rock.threadwise_gemm")) {
    exec_threadwise_gemm(s, op);
  } else {
    sim_err(s, "unsupported op %s", n);
  }
}
static void exec_block(sim *s, kl_block *b) {
  for (kl_op *op = b->first; op && !s->errors; op = op->next) exec_op(s, op);
}

/* Runs kernel fn (args = arrays indexed by buffer address) on every workgroup.
 * Returns the number of errors; err gets the first. */
static int simulate(kl_op *fn, double **args, int **writes, int64_t *macs, char *err, size_t errlen) {
  int64_t grid = 0, bs = 0;
  if (!kl_op_attr_i64(fn, "grid_size", &grid) || !kl_op_attr_i64(fn, "block_size", &bs) || grid < 1 || bs < 1) {
    snprintf(err, errlen, "kernel without grid_size / block_size");
    return 1;
  }
  kl_block *entry = fn->regions[0].first;
  int errors = 0;
  *macs = 0;
  for (int64_t bid = 0; bid < grid && !errors; bid++) {
    sim s = { .bs = (int)bs, .bid = bid, .cap = 1024 };
    s.slots = kl_xcalloc(s.cap, sizeof *s.slots);
    for (int i = 0; i < entry->nargs; i++) {
      mem *m = kl_xcalloc(1, sizeof *m);
      m->base = entry->args[i];
      m->space = KL_SPACE_GLOBAL;
      m->n = buf_extent(entry->args[i]->type);
      m->copies = 1;
      m->data = args[i];
      m->writes = writes[i];
      get_slot(&s, entry->args[i], true)->m = m;
      s.mems[s.nmems++] = m;
    }
    exec_block(&s, entry);
    errors += s.errors;
    *macs += s.macs;
    if (s.errors) snprintf(err, errlen, "workgroup %lld: %s", (long long)bid, s.first_err);
    for (int i = 0; i < s.nmems; i++) {
      if (i < entry->nargs)
        free(s.mems[i]); /* args: data/writes belong to the caller */
      else
        free_mem(s.mems[i]);
    }
    for (int i = 0; i < s.cap; i++) free(s.slots[i].iv);
    free(s.slots);
  }
  return errors;
}

/* ------------------------------------------------------------ kernels */
/* Operand layouts: 0 = the logical shape row-major; 1 = stored transposed (last two
 * dims swapped) and viewed back through a rock.transform; 2 = logical shape with a
 * permuted stride layout in the buffer type. */
typedef struct {
  int64_t G, M, N, K;
  int la, lb, lc;
  kl_type_kind in, out;
  const char *target, *perf;
} gcase;

static const kl_type *stored_type(kl_ctx *ctx, kl_type_kind et, int64_t d0, int64_t d1, int64_t d2, int layout) {
  const kl_type *e = kl_type_scalar(ctx, et);
  if (layout == 1) {
    int64_t s[3] = { d0, d2, d1 };
    return kl_type_buffer(ctx, e, 3, s, NULL, KL_SPACE_GLOBAL);
  }
  int64_t s[3] = { d0, d1, d2 };
  if (layout == 2) {
    int64_t st[3] = { d1 * d2, 1, d1 };
    return kl_type_buffer(ctx, e, 3, s, st, KL_SPACE_GLOBAL);
  }
  return kl_type_buffer(ctx, e, 3, s, NULL, KL_SPACE_GLOBAL);
}
/* address of logical element (i0, i1, i2) of an operand with logical dims d0 x d1 x d2 */
static int64_t addr_of(int64_t i0, int64_t i1, int64_t i2, int64_t d1, int64_t d2, int layout) {
  if (layout == 1) return (i0 * d2 + i2) * d1 + i1;
  if (layout == 2) return i0 * d1 * d2 + i1 + i2 * d1;
  return (i0 * d1 + i1) * d2 + i2;
}
static kl_value *logical(kl_ctx *ctx, kl_block *b, kl_value *arg, int layout, const char *const *names) {
  if (layout != 1) return arg;
  const kl_type *t = arg->type;
  const char *sn[3] = { names[0], names[2], names[1] };
  kl_view_err e;
  kl_view *id = kl_view_identity(3, t->shape, sn, &e);
  int perm[3] = { 0, 2, 1 };
  kl_view *v = kl_view_transpose(id, 3, perm, &e);
  int64_t shape[3] = { t->shape[0], t->shape[2], t->shape[1] };
  const kl_type *rt = kl_type_buffer(ctx, t->elem, 3, shape, NULL, KL_SPACE_GLOBAL);
  kl_named_attr a = { "view", kl_attr_from_view(ctx, v) };
  kl_op *op = kl_op_create(ctx, "rock.transform", KL_LOC_UNKNOWN, 1, &arg, 1, &rt, 1, &a, 0);
  kl_block_push_op(b, op);
  kl_view_free(id);
  kl_view_free(v);
  return kl_op_result(op, 0);
}
static kl_op *build_kernel(kl_ctx *ctx, const gcase *c, kl_op **fn_out) {
  kl_op *m = kl_module_create(ctx, kl_loc_make(ctx, "gemm.kir", 1, 1));
  kl_named_attr fa[3] = { { "sym_name", kl_attr_str(ctx, "gemm") }, { "kernel", kl_attr_unit(ctx) } };
  int nfa = 2;
  if (c->target) fa[nfa++] = (kl_named_attr){ "target", kl_attr_str(ctx, c->target) };
  kl_op *fn = kl_op_create(ctx, "func.func", kl_loc_make(ctx, "gemm.kir", 2, 1), 0, NULL, 0, NULL, nfa, fa, 1);
  kl_block *b = kl_block_create(ctx);
  kl_region_push_block(&fn->regions[0], b);
  kl_block_push_op(kl_module_body(m), fn);
  kl_value *a = kl_block_add_arg(ctx, b, stored_type(ctx, c->in, c->G, c->K, c->M, c->la));
  kl_value *bb = kl_block_add_arg(ctx, b, stored_type(ctx, c->in, c->G, c->K, c->N, c->lb));
  kl_value *cc = kl_block_add_arg(ctx, b, stored_type(ctx, c->out, c->G, c->M, c->N, c->lc));
  static const char *const an[] = { "g", "k", "m" }, *const bn[] = { "g", "k", "n" }, *const cn[] = { "g", "m", "n" };
  kl_value *o[3] = { logical(ctx, b, a, c->la, an), logical(ctx, b, bb, c->lb, bn), logical(ctx, b, cc, c->lc, cn) };
  kl_named_attr ga[2] = { { "store", kl_attr_str(ctx, "set") } };
  int nga = 1;
  if (c->perf) ga[nga++] = (kl_named_attr){ "perf_config", kl_attr_str(ctx, c->perf) };
  kl_block_push_op(b, kl_op_create(ctx, "rock.gemm", kl_loc_make(ctx, "gemm.kir", 3, 3), 3, o, 0, NULL, nga, ga, 0));
  kl_block_push_op(b, kl_op_create(ctx, "func.return", KL_LOC_UNKNOWN, 0, NULL, 0, NULL, 0, NULL, 0));
  *fn_out = fn;
  return m;
}

static int count_named(kl_op *root, const char *name) {
  int n, k = 0;
  kl_op **ops = kl_collect_ops(root, &n);
  for (int i = 0; i < n; i++)
    if (!strcmp(ops[i]->name, name)) k++;
  free(ops);
  return k;
}

static kl_status run_pipeline(kl_ctx *ctx, kl_op *m, const char *pipeline) {
  kl_pass_manager *pm = kl_pass_manager_create(ctx);
  kl_status st = kl_pass_manager_add_pipeline(pm, pipeline);
  if (st == KL_OK) st = kl_pass_manager_run(pm, m);
  kl_pass_manager_destroy(pm);
  return st;
}

static int64_t cases_run, total_macs;
/* fill: 0 = random small integers (never 0), 1 = all ones */
static void run_case(const gcase *c, int fill, bool threadwise) {
  kl_ctx *ctx = kl_test_ctx();
  kl_op *fn;
  kl_op *m = build_kernel(ctx, c, &fn);
  char label[256];
  snprintf(label, sizeof label, "G=%lld M=%lld N=%lld K=%lld layouts %d%d%d %s->%s target %s perf %s%s%s",
           (long long)c->G, (long long)c->M, (long long)c->N, (long long)c->K, c->la, c->lb, c->lc,
           kl_scalar_name(c->in), kl_scalar_name(c->out), c->target ? c->target : "(default)",
           c->perf ? c->perf : "(heuristic)", fill ? " ones" : "", threadwise ? " +threadwise" : "");
  const char *pipe = threadwise
      ? "rock-gemm-to-gridwise{accel=false},rock-gridwise-to-blockwise,rock-blockwise-to-threadwise"
      : "rock-gemm-to-gridwise{accel=false},rock-gridwise-to-blockwise";
  kl_status st = run_pipeline(ctx, m, pipe);
  char *d = kl_diag_take(ctx);
  CHECK(st == KL_OK, "%s: pipeline failed: %s", label, d);
  free(d);
  if (st != KL_OK) {
    kl_ctx_destroy(ctx);
    return;
  }
  CHECK(count_named(m, "rock.gemm") == 0 && count_named(m, "rock.gridwise_gemm") == 0);
  CHECK(count_named(m, "rock.blockwise_gemm") == (threadwise ? 0 : 1));
  CHECK(count_named(m, "rock.threadwise_gemm") == (threadwise ? 1 : 0));
  CHECK(count_named(m, "rock.barrier") == 2);
  /* exactly one write to global memory: the C tile */
  int n, gw = 0;
  kl_op **ops = kl_collect_ops(m, &n);
  for (int i = 0; i < n; i++)
    if (!strcmp(ops[i]->name, "rock.threadwise_write_all")) {
      kl_op *chain[16];
      int nc;
      kl_value *u = kl_rock_underlying(ops[i]->opnds[1].value, chain, &nc, 16);
      if (u->type->space == KL_SPACE_GLOBAL) gw++;
    }
  free(ops);
  CHECK(gw == 1);

  /* data */
  int64_t G = c->G, M = c->M, N = c->N, K = c->K;
  const kl_type *et = kl_type_scalar(ctx, c->in), *ot = kl_type_scalar(ctx, c->out);
  int64_t na = G * K * M, nb = G * K * N, nc = G * M * N;
  double *A = kl_xmalloc(na * sizeof *A), *B = kl_xmalloc(nb * sizeof *B), *C = kl_xmalloc(nc * sizeof *C);
  int *wa = kl_xcalloc(na, sizeof *wa), *wb = kl_xcalloc(nb, sizeof *wb), *wc = kl_xcalloc(nc, sizeof *wc);
  double *Al = kl_xmalloc(na * sizeof *Al), *Bl = kl_xmalloc(nb * sizeof *Bl);
  int lim = c->in == KL_TY_F16 || c->in == KL_TY_BF16 ? 2 : 4;
  for (int64_t i = 0; i < na; i++) {
    int64_t v = fill ? 1 : rnd_in(-lim, lim - 1);
    Al[i] = v >= 0 && !fill ? v + 1 : v;
  }
  for (int64_t i = 0; i < nb; i++) {
    int64_t v = fill ? 1 : rnd_in(-lim, lim - 1);
    Bl[i] = v >= 0 && !fill ? v + 1 : v;
  }
  for (int64_t g = 0; g < G; g++)
    for (int64_t k = 0; k < K; k++) {
      for (int64_t x = 0; x < M; x++) A[addr_of(g, k, x, K, M, c->la)] = Al[(g * K + k) * M + x];
      for (int64_t x = 0; x < N; x++) B[addr_of(g, k, x, K, N, c->lb)] = Bl[(g * K + k) * N + x];
    }
  for (int64_t i = 0; i < nc; i++) C[i] = NAN;
  double *args[3] = { A, B, C };
  int *writes[3] = { wa, wb, wc };
  char err[600] = "";
  int64_t macs = 0;
  int errors = simulate(fn, args, writes, &macs, err, sizeof err);
  CHECK(errors == 0, "%s: simulation: %s", label, err);
  int bad = 0, badw = 0;
  for (int64_t g = 0; g < G; g++)
    for (int64_t i = 0; i < M; i++)
      for (int64_t j = 0; j < N; j++) {
        double ref = 0;
        for (int64_t k = 0; k < K; k++) ref += Al[(g * K + k) * M + i] * Bl[(g * K + k) * N + j];
        ref = kl_round_to_type(ot, kl_round_to_type(kl_gemm_acc_type(ctx, et), ref));
        int64_t ad = addr_of(g, i, j, M, N, c->lc);
        if (!(C[ad] == ref)) {
          if (!bad)
            fprintf(stderr, "  %s: C[%lld,%lld,%lld] = %g, want %g\n", label, (long long)g, (long long)i, (long long)j,
                    C[ad], ref);
          bad++;
        }
        if (wc[ad] != 1) {
          if (!badw)
            fprintf(stderr, "  %s: C[%lld,%lld,%lld] written %d times\n", label, (long long)g, (long long)i,
                    (long long)j, wc[ad]);
          badw++;
        }
      }
  int wrote_inputs = 0;
  for (int64_t i = 0; i < na; i++) wrote_inputs += wa[i];
  for (int64_t i = 0; i < nb; i++) wrote_inputs += wb[i];
  CHECK(bad == 0, "%s: %d wrong elements", label, bad);
  CHECK(badw == 0, "%s: %d elements not written exactly once", label, badw);
  CHECK(wrote_inputs == 0);
  /* the padded work is what the tiles say: every (g, m, n, k) of the padded problem once */
  int64_t mb, nbk, kb;
  kl_perf_config pc;
  const char *pcs = kl_op_attr_string(fn, "perf_config");
  CHECK(pcs && kl_perf_config_parse(pcs, &pc, err, sizeof err));
  if (pcs && kl_perf_config_parse(pcs, &pc, err, sizeof err)) {
    mb = (M + pc.m_per_block - 1) / pc.m_per_block * pc.m_per_block;
    nbk = (N + pc.n_per_block - 1) / pc.n_per_block * pc.n_per_block;
    kb = (K + pc.k_per_block - 1) / pc.k_per_block * pc.k_per_block;
    CHECK(macs == G * mb * nbk * kb, "%s: %lld multiply-adds, want %lld", label, (long long)macs,
          (long long)(G * mb * nbk * kb));
  }
  total_macs += macs;
  cases_run++;
  free(A);
  free(B);
  free(C);
  free(wa);
  free(wb);
  free(wc);
  free(Al);
  free(Bl);
  kl_ctx_destroy(ctx);
}

static void test_numeric(void) {
  static const int64_t odd[] = { 1, 3, 7, 17, 129 };
  /* fixed cases: perf configs that exercise every path */
  gcase fixed[] = {
    { 1, 17, 7, 3, 0, 0, 0, KL_TY_F32, KL_TY_F32, NULL, NULL },
    { 2, 7, 17, 129, 1, 1, 1, KL_TY_F32, KL_TY_F32, "host", "v1:8,4,16,8,4,1" },
    { 1, 129, 3, 7, 2, 2, 2, KL_TY_F32, KL_TY_F32, "host", "v1:64,4,8,64,4,4" },
    { 3, 9, 10, 11, 1, 0, 2, KL_TY_F16, KL_TY_F32, "host", "v1:4,8,4,4,8,2" },
    { 1, 17, 17, 17, 0, 1, 0, KL_TY_I8, KL_TY_I32, "host", NULL },
    { 1, 33, 20, 19, 0, 0, 0, KL_TY_F32, KL_TY_F32, "gfx942", "v1:32,16,8,4,2,1" }, /* 64 threads */
    { 2, 17, 31, 9, 1, 1, 1, KL_TY_F32, KL_TY_F32, "gfx942", "v1:16,16,4,2,2,2" },  /* kpack 2 */
    { 1, 40, 24, 13, 2, 0, 1, KL_TY_F16, KL_TY_F16, "gfx1100", "v1:8,8,8,1,2,8" },  /* 32 threads, kpack 8 */
    { 1, 3, 130, 5, 0, 1, 0, KL_TY_F32, KL_TY_F32, "sm_90", NULL },
    { 1, 129, 129, 3, 0, 0, 0, KL_TY_F32, KL_TY_F32, "gfx90a", NULL },
    { 1, 128, 128, 64, 1, 1, 0, KL_TY_F32, KL_TY_F32, "gfx942", "v1:128,128,16,8,8,4" }, /* 256 threads */
  };
  for (size_t i = 0; i < sizeof fixed / sizeof *fixed; i++) {
    run_case(&fixed[i], 0, false);
    run_case(&fixed[i], 0, true);
  }
  run_case(&fixed[1], 1, true);
  run_case(&fixed[6], 1, false);
  /* random cases */
  static const char *const tg[] = { NULL, "host", "gfx908", "gfx1030" };
  static const char *const perfs[] = { NULL, NULL, "v1:4,4,4,4,4,1", "v1:2,8,2,2,8,2", "v1:16,8,4,16,8,4" };
  for (int i = 0; i < 24; i++) {
    gcase c = { rnd_in(1, 2), 0,         0,    0,   (int)rnd_in(0, 2), (int)rnd_in(0, 2), (int)rnd_in(0, 2),
                KL_TY_F32,    KL_TY_F32, NULL, NULL };
    c.M = rnd() % 2 ? odd[rnd() % 5] : rnd_in(1, 40);
    c.N = rnd() % 2 ? odd[rnd() % 5] : rnd_in(1, 40);
    c.K = rnd() % 2 ? odd[rnd() % 5] : rnd_in(1, 40);
    if (c.M * c.N * c.K * c.G > 300000) c.K = 3;
    c.target = tg[rnd() % 4];
    if (!c.target || !strcmp(c.target, "host"))
      c.perf = perfs[rnd() % 5];
    else if (rnd() % 2)
      c.perf = "v1:16,16,8,2,2,2";
    run_case(&c, 0, i % 2 == 1);
  }
  printf("numeric: %lld kernels simulated, %lld multiply-adds: ok\n", (long long)cases_run, (long long)total_macs);
}

/* ------------------------------------------------------------ vector lengths */
/* vector_len of the threadwise op `name` whose view side (src of a read, dst of a write)
 * lies on entry argument `arg` (-1: on an LDS buffer); 0 if none. */
static int64_t vlen_of(kl_op *m, kl_op *fn, const char *name, int arg, int nth) {
  int n;
  int64_t r = 0;
  kl_op **ops = kl_collect_ops(m, &n);
  for (int i = 0; i < n && !r; i++) {
    if (strcmp(ops[i]->name, name)) continue;
    bool read = !strcmp(name, "rock.threadwise_read_into");
    kl_op *chain[16];
    int nc;
    kl_value *u = kl_rock_underlying(ops[i]->opnds[read ? 0 : 1].value, chain, &nc, 16);
    bool hit = arg >= 0 ? u == fn->regions[0].first->args[arg] : u->type->space == KL_SPACE_LDS;
    if (hit && nth-- == 0) kl_op_attr_i64(ops[i], "vector_len", &r);
  }
  free(ops);
  return r;
}
static void test_vectorization(void) {
  struct {
    int la, lb, lc;
    const char *perf, *target;
    int64_t ra, rb, wa, wb, wc;
  } cases[] = {
    /* plain layouts: M and N contiguous everywhere */
    { 0, 0, 0, "v1:64,64,16,64,64,1", "host", 4, 4, 4, 4, 4 },
    /* A stored [G,M,K] (K contiguous): the copy runs along K; LDS [K,M] then takes scalars */
    { 1, 0, 0, "v1:64,64,16,64,64,1", "host", 4, 4, 1, 4, 4 },
    /* ... with kpack 4 the LDS layout [K/4,M,4] takes the K vectors too */
    { 1, 1, 1, "v1:64,64,16,64,64,4", "host", 4, 4, 4, 4, 1 },
    /* strided types with K contiguous (stride 1 on K): like layout 1 */
    { 2, 2, 0, "v1:64,64,16,64,64,4", "host", 4, 4, 4, 4, 4 },
    /* GPU: 256 threads, 8 elements each: one 4-vector per thread row */
    { 0, 0, 0, "v1:128,128,16,8,8,1", "gfx942", 4, 4, 4, 4, 4 },
    { 1, 1, 0, "v1:128,128,16,8,8,4", "gfx942", 4, 4, 4, 4, 4 },
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    gcase c = {
      1, 128, 128, 64, cases[i].la, cases[i].lb, cases[i].lc, KL_TY_F32, KL_TY_F32, cases[i].target, cases[i].perf
    };
    kl_ctx *ctx = kl_test_ctx();
    kl_op *fn;
    kl_op *m = build_kernel(ctx, &c, &fn);
    CHECK(run_pipeline(ctx, m, "rock-gemm-to-gridwise,rock-gridwise-to-blockwise") == KL_OK);
    int64_t ra = vlen_of(m, fn, "rock.threadwise_read_into", 0, 0),
            rb = vlen_of(m, fn, "rock.threadwise_read_into", 1, 0);
    int64_t wa = vlen_of(m, fn, "rock.threadwise_write_all", -1, 0),
            wb = vlen_of(m, fn, "rock.threadwise_write_all", -1, 1);
    int64_t wc = vlen_of(m, fn, "rock.threadwise_write_all", 2, 0);
    CHECK(ra == cases[i].ra && rb == cases[i].rb && wa == cases[i].wa && wb == cases[i].wb && wc == cases[i].wc,
          "case %zu: vector lengths read a %lld b %lld, LDS write a %lld b %lld, C write %lld", i, (long long)ra,
          (long long)rb, (long long)wa, (long long)wb, (long long)wc);
    free(kl_diag_take(ctx));
    kl_ctx_destroy(ctx);
  }
  printf("vector lengths: ok\n");
}

/* ------------------------------------------------------------ pass errors */
static char *run_expect_error(const gcase *c, const char *pipeline) {
  kl_ctx *ctx = kl_test_ctx();
  kl_op *fn;
  kl_op *m = build_kernel(ctx, c, &fn);
  kl_status st = run_pipeline(ctx, m, pipeline);
  char *d = kl_diag_take(ctx);
  CHECK(st == KL_ERR);
  kl_ctx_destroy(ctx);
  return d;
}
static void test_pass_errors(void) {
  gcase c = { 1, 8, 8, 8, 0, 0, 0, KL_TY_F32, KL_TY_F32, "host", "v1:64,64,16,32,64,1" };
  char *d = run_expect_error(&c, "rock-gemm-to-gridwise");
  CHECK(strstr(d, "gemm.kir:3:3") && strstr(d, "block size") && strstr(d, "max workgroup size 1"), "%s", d);
  free(d);
  c.perf = "v1:64,64,512,64,64,1";
  d = run_expect_error(&c, "rock-gemm-to-gridwise");
  CHECK(strstr(d, "tile larger than LDS"), "%s", d);
  free(d);
  c.perf = "v1:64,64,16,64,64";
  d = run_expect_error(&c, "rock-gemm-to-gridwise");
  CHECK(strstr(d, "too few fields"), "%s", d);
  free(d);
  c.perf = NULL;
  d = run_expect_error(&c, "rock-gemm-to-gridwise{perf-config=\"v1:8,8,8,3,8,1\"}");
  CHECK(strstr(d, "mPerBlock (8) is not a multiple of mPerThread (3)"), "%s", d);
  free(d);
  c.target = "gfx9000";
  d = run_expect_error(&c, "rock-gemm-to-gridwise");
  CHECK(strstr(d, "unknown target \"gfx9000\""), "%s", d);
  free(d);
  /* the option overrides the attribute */
  c.target = "gfx9000";
  kl_ctx *ctx = kl_test_ctx();
  kl_op *fn;
  kl_op *m = build_kernel(ctx, &c, &fn);
  CHECK(run_pipeline(ctx, m, "rock-gemm-to-gridwise{target=gfx942,perf-config=\"v1:16,16,8,2,2,1\"}") == KL_OK);
  const char *ts = kl_op_attr_string(fn, "target"), *ps = kl_op_attr_string(fn, "perf_config");
  CHECK(ts && !strcmp(ts, "gfx942"));
  CHECK(ps && !strcmp(ps, "v1:16,16,8,2,2,1"));
  int64_t bs = 0, grid = 0;
  CHECK(kl_op_attr_i64(fn, "block_size", &bs) && bs == 64);
  CHECK(kl_op_attr_i64(fn, "grid_size", &grid) && grid == 1);
  CHECK(run_pipeline(ctx, m, "rock-gridwise-to-blockwise,rock-blockwise-to-threadwise") == KL_OK);
  int n;
  kl_op **ops = kl_collect_ops(m, &n);
  for (int i = 0; i < n; i++)
    if (!strcmp(ops[i]->name, "rock.threadwise_gemm")) {
      const char *acc = kl_op_attr_string(ops[i], "accel");
      CHECK(acc && !strcmp(acc, "mfma"));
    }
  free(ops);
  int64_t lds = 0;
  CHECK(kl_op_attr_i64(fn, "lds_bytes", &lds) && lds == 8 * (16 + 16) * 4);
  free(kl_diag_take(ctx));
  kl_ctx_destroy(ctx);
  printf("pass errors and options: ok\n");
}

int main(void) {
  test_parse();
  test_validate();
  test_heuristic();
  test_numeric();
  test_vectorization();
  test_pass_errors();
  printf("test_perf_config: %d checks passed\n", checks - failures);
  if (failures) {
    printf("test_perf_config: %d checks FAILED\n", failures);
    return 1;
  }
  return 0;
}

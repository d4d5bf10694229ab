/* refops_gemm.c — the reference evaluator's inner product kernel (see refops_gemm.h): 4 x 2
 * outputs at a time (eight independent accumulation chains, each in increasing k), rows of C
 * split among a thread pool for large products. */
#include "runtime/refops_gemm.h"
#include <stdbool.h>

/* Below this many multiply-adds a product runs serially (a pool's start costs ~0.1 ms). */
#define KL_REF_GEMM_PARALLEL_MACS (1 << 22)

kl_threadpool *kl_ref_gemm_pool(double macs) {
  if (macs < KL_REF_GEMM_PARALLEL_MACS || kl_threadpool_default_threads() < 2) return NULL;
  return kl_threadpool_create(0, NULL, 0);
}

/* One kernel body per element type: T the element, ACC the accumulator, MAC(acc, a, b). */
#define KL_GEMM_NT_BODY(T, ACC, MAC, CAST)                                                                          \
  for (int64_t m = m0; m < m1; m += 4) {                                                                            \
    int64_t mr = m1 - m < 4 ? m1 - m : 4;                                                                           \
    const T *a[4];                                                                                                  \
    for (int i = 0; i < 4; i++) a[i] = A + (m + (i < mr ? i : 0)) * lda;                                            \
    int64_t n = n0;                                                                                                 \
    for (; n + 2 <= n1; n += 2) {                                                                                   \
      const T *b0 = B + n * ldb, *b1 = b0 + ldb;                                                                    \
      ACC c00 = 0, c01 = 0, c10 = 0, c11 = 0, c20 = 0, c21 = 0, c30 = 0, c31 = 0;                                   \
      for (int64_t k = 0; k < K; k++) {                                                                             \
        ACC x0 = (ACC)b0[k], x1 = (ACC)b1[k];                                                                       \
        ACC a0 = (ACC)a[0][k], a1 = (ACC)a[1][k], a2 = (ACC)a[2][k], a3 = (ACC)a[3][k];                             \
        MAC(c00, a0, x0), MAC(c01, a0, x1), MAC(c10, a1, x0), MAC(c11, a1, x1);                                     \
        MAC(c20, a2, x0), MAC(c21, a2, x1), MAC(c30, a3, x0), MAC(c31, a3, x1);                                     \
      }                                                                                                             \
      ACC r[4][2] = { { c00, c01 }, { c10, c11 }, { c20, c21 }, { c30, c31 } };                                     \
      for (int i = 0; i < mr; i++) C[(m + i) * ldc + n] = CAST(r[i][0]), C[(m + i) * ldc + n + 1] = CAST(r[i][1]);  \
    }                                                                                                               \
    for (; n < n1; n++) {                                                                                           \
      const T *b0 = B + n * ldb;                                                                                    \
      ACC c0 = 0, c1 = 0, c2 = 0, c3 = 0;                                                                           \
      for (int64_t k = 0; k < K; k++) {                                                                             \
        ACC x0 = (ACC)b0[k];                                                                                        \
        MAC(c0, (ACC)a[0][k], x0), MAC(c1, (ACC)a[1][k], x0), MAC(c2, (ACC)a[2][k], x0), MAC(c3, (ACC)a[3][k], x0); \
      }                                                                                                             \
      ACC r[4] = { c0, c1, c2, c3 };                                                                                \
      for (int i = 0; i < mr; i++) C[(m + i) * ldc + n] = CAST(r[i]);                                               \
    }                                                                                                               \
  }

#define MAC_F64(c, a, b) (c += (a) * (b))
#define MAC_U64(c, a, b) (c += (a) * (b))
#define CAST_F64(v)      (v)
#define CAST_I64(v)      ((int64_t)(v))

static void rows_f64(const double *A, int64_t lda, const double *B, int64_t ldb, int64_t m0, int64_t m1, int64_t n0,
                     int64_t n1, int64_t K, double *C, int64_t ldc) {
  KL_GEMM_NT_BODY(double, double, MAC_F64, CAST_F64)
}

static void rows_i64(const int64_t *A, int64_t lda, const int64_t *B, int64_t ldb, int64_t m0, int64_t m1, int64_t n0,
                     int64_t n1, int64_t K, int64_t *C, int64_t ldc) {
  KL_GEMM_NT_BODY(int64_t, uint64_t, MAC_U64, CAST_I64)
}

typedef struct {
  const void *A, *B;
  void *C;
  int64_t lda, ldb, ldc, M, N, K;
  int64_t rows, cols, ncb; /* a task's block of C: rows (a multiple of 4) x cols; ncb blocks per row block */
  bool ints;
} gemm_task;

static void run_task(void *user, int64_t i, int worker) {
  (void)worker;
  const gemm_task *t = user;
  int64_t m0 = i / t->ncb * t->rows, m1 = m0 + t->rows < t->M ? m0 + t->rows : t->M;
  int64_t n0 = i % t->ncb * t->cols, n1 = n0 + t->cols < t->N ? n0 + t->cols : t->N;
  if (t->ints)
    rows_i64(t->A, t->lda, t->B, t->ldb, m0, m1, n0, n1, t->K, t->C, t->ldc);
  else
    rows_f64(t->A, t->lda, t->B, t->ldb, m0, m1, n0, n1, t->K, t->C, t->ldc);
}

static void gemm(kl_threadpool *pool, gemm_task *t) {
  if (t->M <= 0 || t->N <= 0) return;
  int nt = pool ? kl_threadpool_size(pool) : 1;
  double macs = (double)t->M * (double)t->N * (double)t->K;
  t->rows = t->M, t->cols = t->N, t->ncb = 1;
  if (nt < 2 || macs < KL_REF_GEMM_PARALLEL_MACS) {
    run_task(t, 0, 0);
    return;
  }
  /* about four tasks per thread: row blocks first, column blocks where rows are few */
  int64_t want = 4 * (int64_t)nt, rb = (t->M + 3) / 4; /* row blocks of 4 */
  int64_t nrb = rb < want ? rb : want;
  t->rows = (rb + nrb - 1) / nrb * 4;
  nrb = (t->M + t->rows - 1) / t->rows;
  int64_t ncb = (want + nrb - 1) / nrb, cb = (t->N + 1) / 2; /* column blocks of 2 */
  if (ncb > cb) ncb = cb;
  t->cols = (cb + ncb - 1) / ncb * 2;
  t->ncb = (t->N + t->cols - 1) / t->cols;
  kl_threadpool_parallel_for(pool, nrb * t->ncb, run_task, t);
}

void kl_ref_gemm_nt_f64(kl_threadpool *pool, const double *A, int64_t lda, const double *B, int64_t ldb, int64_t M,
                        int64_t N, int64_t K, double *C, int64_t ldc) {
  gemm_task t = { A, B, C, lda, ldb, ldc, M, N, K, 0, 0, 1, false };
  gemm(pool, &t);
}

void kl_ref_gemm_nt_i64(kl_threadpool *pool, const int64_t *A, int64_t lda, const int64_t *B, int64_t ldb, int64_t M,
                        int64_t N, int64_t K, int64_t *C, int64_t ldc) {
  gemm_task t = { A, B, C, lda, ldb, ldc, M, N, K, 0, 0, 1, true };
  gemm(pool, &t);
}

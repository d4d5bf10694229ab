/* refops_gemm.h — the inner product kernel of the reference evaluator's dot and conv.
 * Contract: kl_ref_gemm_nt_f64 sets C[m * ldc + n] = sum over k of A[m * lda + k] * B[n * ldb + k]
 * for m < M, n < N, every sum accumulated in double from 0 in increasing k, one rounding per
 * multiply and per add (exactly the naive loop's result, bit for bit: only the order in which
 * the outputs are computed changes, several at a time, so the evaluator stays the float64
 * reference it was); kl_ref_gemm_nt_i64 does the same in uint64 arithmetic (wrapping, then
 * read as int64). Both operands are K-contiguous rows (pack / transpose first). `pool` may be
 * NULL (serial); with a pool the rows of C are split among its threads when the product is
 * large enough to pay for it. kl_ref_gemm_pool returns a pool worth using for `macs`
 * multiply-adds (NULL below the threshold or when threads are unavailable; the caller
 * destroys it). */
#ifndef KL_REFOPS_GEMM_H
#define KL_REFOPS_GEMM_H
#include "runtime/threadpool.h"
#include <stdint.h>

kl_threadpool *kl_ref_gemm_pool(double macs);
void kl_ref_gemm_nt_f64(kl_threadpool *pool, const double *A, int64_t lda, const double *B, int64_t ldb, int64_t M,
                        int64_t N, int64_t K, double *C, int64_t ldc);
void kl_ref_gemm_nt_i64(kl_threadpool *pool, const int64_t *A, int64_t lda, const int64_t *B, int64_t ldb, int64_t M,
                        int64_t N, int64_t K, int64_t *C, int64_t ldc);
#endif

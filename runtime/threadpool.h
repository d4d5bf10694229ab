/* threadpool.h — a small pthread pool for data-parallel loops.
 * Contract: kl_threadpool_create(T) starts T-1 worker threads (the caller of
 * parallel_for is the T-th); T <= 0 means kl_threadpool_default_threads(): the
 * KILN_THREADS environment variable if it is a positive integer, else the number of
 * online cores. parallel_for(pool, n, fn, user) calls fn(user, i, worker) exactly once
 * for every i in [0, n) and returns when all calls have finished; `worker` is in
 * [0, T) and no two concurrent calls share a worker index (use it for per-thread
 * scratch). Calls from several threads on one pool are serialised; a call made from
 * inside fn (nested) runs serially on the calling worker instead of deadlocking.
 * Worker threads get a stack of at least 8 MiB. Out of memory / thread creation
 * failure at create time returns NULL (the message goes to err). */
#ifndef KL_THREADPOOL_H
#define KL_THREADPOOL_H
#include <stddef.h>
#include <stdint.h>

typedef struct kl_threadpool kl_threadpool;
typedef void (*kl_parallel_fn)(void *user, int64_t i, int worker);

int kl_threadpool_default_threads(void);
kl_threadpool *kl_threadpool_create(int nthreads, char *err, size_t errlen);
void kl_threadpool_destroy(kl_threadpool *pool);
int kl_threadpool_size(const kl_threadpool *pool);
void kl_threadpool_parallel_for(kl_threadpool *pool, int64_t n, kl_parallel_fn fn, void *user);
#endif

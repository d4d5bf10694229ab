/* kernel_access.h — the global memory accesses of a lowered kernel, for p:kernels().
 *
 * Contract: kl_kernel_accesses walks a loop-level kernel func (the IR handed to the LLVM
 * lowering, so what is really emitted) and lists its rock.load / rock.store ops (and
 * rock.async_copy, cp.async, as a load of its source: len x element bytes; rock.tma_load,
 * TMA, as a load of one box of its source: box elements x element bytes) whose
 * buffer is a kernel argument (global memory on GPUs, the caller's tensors on the host;
 * LDS and private arrays are rock.alloc, not listed): one entry per argument, kind and
 * width in bytes (element storage bytes x vector lanes; i1 is one byte per lane), with
 * the number of such ops. Entries are ordered by argument, then loads before stores,
 * then width. arg_names[i] names argument i (NULL: "arg<i>", interned). The array is
 * malloc'd (free it); *n gets its length (0 and NULL for a func without accesses). */
#ifndef KL_KERNEL_ACCESS_H
#define KL_KERNEL_ACCESS_H
#include "core/ir.h"
#include <stdint.h>

typedef struct kl_access_info {
  const char *arg;  /* the argument's name (interned) */
  const char *kind; /* "load" or "store" */
  int64_t bytes;    /* width of one access */
  int count;        /* rock.load / rock.store ops of that width */
} kl_access_info;

kl_access_info *kl_kernel_accesses(kl_op *fn, const char *const *arg_names, int nargs, int *n);
#endif

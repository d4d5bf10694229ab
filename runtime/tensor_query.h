/* tensor_query.h — reading a host tensor's metadata through functions, for code that
 * sees kl_tensor as an opaque type (the public C API, include/kiln.h).
 * Contract: t must be a live tensor (tensor.h); dims and strides are 0-based, counted
 * in the tensor's logical order; an axis outside [0, rank) gives -1 (no abort). The data
 * pointer is that of logical element [0, ..., 0] (data + offset elements), in host
 * memory, valid as long as the tensor; element [i...] lives at sum(i_k * stride_k)
 * elements from it. Pure reads, no allocation. */
#ifndef KL_TENSOR_QUERY_H
#define KL_TENSOR_QUERY_H
#include "runtime/tensor.h"

kl_dtype kl_tensor_dtype(const kl_tensor *t);
int kl_tensor_rank(const kl_tensor *t);
int64_t kl_tensor_dim(const kl_tensor *t, int axis);
int64_t kl_tensor_stride(const kl_tensor *t, int axis); /* elements */
void *kl_tensor_data(const kl_tensor *t);
#endif

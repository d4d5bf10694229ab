/* tensor_query.c — kl_tensor metadata accessors (see tensor_query.h). */
#include "runtime/tensor_query.h"

kl_dtype kl_tensor_dtype(const kl_tensor *t) { return t->dtype; }
int kl_tensor_rank(const kl_tensor *t) { return t->rank; }
int64_t kl_tensor_dim(const kl_tensor *t, int axis) { return axis >= 0 && axis < t->rank ? t->shape[axis] : -1; }
int64_t kl_tensor_stride(const kl_tensor *t, int axis) { return axis >= 0 && axis < t->rank ? t->strides[axis] : -1; }
void *kl_tensor_data(const kl_tensor *t) { return (char *)t->data + (size_t)t->offset * kl_dtype_size(t->dtype); }

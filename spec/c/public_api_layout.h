/* public_api_layout.h — the layout of include/kiln.h's value types as one list of
 * integer expressions (sizes, field offsets, enumerator values), evaluated once in a
 * translation unit that sees only kiln.h (public_api_only.c) and once in one that sees
 * the internal headers (test_public_api.c); the test compares the two tables entry by
 * entry, so a type that drifts between kiln.h and its internal original fails it.
 * KL_PUBLIC_LAYOUT(X) calls X(expression) for every entry; needs <stddef.h>. */
#ifndef KL_SPEC_PUBLIC_API_LAYOUT_H
#define KL_SPEC_PUBLIC_API_LAYOUT_H
#include <stddef.h>

typedef struct kl_layout_entry {
  const char *what;
  long long value;
} kl_layout_entry;
#define KL_LAYOUT_ENTRY(e) { #e, (long long)(e) },

// clang-format off
#define KL_PUBLIC_LAYOUT(X)                                                                            \
  X(KL_MAX_RANK)                                                                                \
  X(sizeof(kl_status)) X(KL_OK) X(KL_ERR)                                                              \
  X(sizeof(kl_loc)) X(offsetof(kl_loc, file)) X(offsetof(kl_loc, line)) X(offsetof(kl_loc, col))      \
  X(sizeof(kl_diag_kind)) X(KL_DIAG_ERROR) X(KL_DIAG_WARNING) X(KL_DIAG_NOTE)                          \
  X(sizeof(kl_diag)) X(offsetof(kl_diag, severity)) X(offsetof(kl_diag, loc)) X(offsetof(kl_diag, message)) \
  X(sizeof(kl_dtype)) X(KL_DT_NONE) X(KL_DT_F32) X(KL_DT_F16) X(KL_DT_BF16) X(KL_DT_I8) X(KL_DT_I32)   \
  X(KL_DT_F64) X(KL_DT_I64) X(KL_DT_I1) X(KL_DT_F8E4M3FN) X(KL_DT_F8E5M2) X(KL_DT_F8E4M3FNUZ)         \
  X(KL_DT_F8E5M2FNUZ) X(KL_DT_U8) X(KL_DT_COUNT)                                                                \
  X(KL_PRINT_GENERIC) X(KL_PRINT_LOCS)                                                                 \
  X(sizeof(kl_dist)) X(KL_DIST_UNIFORM) X(KL_DIST_NORMAL)                                              \
  X(sizeof(kl_named_tensor)) X(offsetof(kl_named_tensor, name)) X(offsetof(kl_named_tensor, tensor))  \
  X(sizeof(kl_device_kind)) X(KL_DEVICE_HOST) X(KL_DEVICE_CUDA) X(KL_DEVICE_HIP) X(KL_DEVICE_OTHER)    \
  X(sizeof(kl_device_info)) X(offsetof(kl_device_info, kind)) X(offsetof(kl_device_info, backend))    \
  X(sizeof(((kl_device_info *)0)->backend)) X(offsetof(kl_device_info, ordinal))                       \
  X(offsetof(kl_device_info, name)) X(sizeof(((kl_device_info *)0)->name))                             \
  X(offsetof(kl_device_info, arch)) X(sizeof(((kl_device_info *)0)->arch))                             \
  X(offsetof(kl_device_info, cc_major)) X(offsetof(kl_device_info, cc_minor))                          \
  X(offsetof(kl_device_info, total_mem)) X(offsetof(kl_device_info, compute_units))                    \
  X(offsetof(kl_device_info, wave_size)) X(offsetof(kl_device_info, max_threads_per_block))            \
  X(offsetof(kl_device_info, max_shared_per_block)) X(offsetof(kl_device_info, driver))                \
  X(sizeof(((kl_device_info *)0)->driver)) X(offsetof(kl_device_info, note))                           \
  X(sizeof(((kl_device_info *)0)->note))                                                               \
  X(sizeof(kl_compile_opts)) X(offsetof(kl_compile_opts, targets)) X(offsetof(kl_compile_opts, ntargets)) \
  X(offsetof(kl_compile_opts, perf_config)) X(offsetof(kl_compile_opts, pipeline))                     \
  X(offsetof(kl_compile_opts, print_ir_after)) X(offsetof(kl_compile_opts, on_ir))                     \
  X(offsetof(kl_compile_opts, on_ir_user)) X(offsetof(kl_compile_opts, no_cache))                      \
  X(offsetof(kl_compile_opts, strict_fp)) X(offsetof(kl_compile_opts, cache_dir))                      \
  X(offsetof(kl_compile_opts, tuning_db)) X(offsetof(kl_compile_opts, tuning_device))                  \
  X(sizeof(kl_prepare_opts)) X(offsetof(kl_prepare_opts, sets)) X(offsetof(kl_prepare_opts, rotate_bytes)) \
  X(offsetof(kl_prepare_opts, max_sets)) X(offsetof(kl_prepare_opts, no_poison))
// clang-format on
#endif

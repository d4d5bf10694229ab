/* lower_loops.h — internals shared by the rock-align-tiling and rock-lower-loops passes
 * (passes/rock_align_tiling.c, rock_lower_loops.c, lower_loops_util.c,
 * lower_loops_kernels.c). Not a public API: the passes are used through the pass
 * registry ("rock-align-tiling", "rock-lower-loops").
 *
 * Contract.
 *  - Views: kl_ll_access_view composes an op's own view (or none) with the views of a
 *    value's rock.transform chain, giving one view from the op's upper space to the
 *    coordinates of the underlying buffer (kernel argument or rock.alloc). Returned views
 *    are heap kl_views owned by the caller (kl_view_free); failures return NULL with a
 *    message in the caller's buffer.
 *  - Emission: every kl_ll_* emitter creates ops through the kl_ll's rewriter at its
 *    current insertion point (index arithmetic through core/view_emit.h, which folds
 *    constants). Loads of possibly invalid coordinates are branch-free: the coordinates
 *    are clamped to 0 (select) and the loaded value is replaced by 0; stores of possibly
 *    invalid coordinates are wrapped in scf.if. kl_ll_for emits an scf.for (with carried
 *    values) or, when the bounds are constants and the trip count is at most L->unroll,
 *    the unrolled body (so index arithmetic folds to constants: registers stay registers
 *    on GPUs). After kl_ll_for / kl_ll_if_end the insertion point is right after the
 *    emitted code.
 *  - Errors: the passes report through kl_rewriter_fail / kl_emit_error with the op's
 *    location; helpers here return NULL / false and fill err. */
#ifndef KL_LOWER_LOOPS_H
#define KL_LOWER_LOOPS_H
#include "core/rewrite.h"
#include "core/target.h"
#include "core/view.h"
#include "core/view_emit.h"

/* ---- views ---- */
const kl_view *kl_ll_op_view(const kl_op *op); /* the #view attribute "view", or NULL */
const kl_attr *kl_ll_view_attr(kl_ctx *ctx, const kl_view *v);
/* Identity view over the shape of buffer type t (dims d0, d1, ...). */
kl_view *kl_ll_identity(const kl_type *t, char *err, size_t n);
/* top (NULL: identity over v's shape) composed with the views of v's transform chain,
 * simplified. *under = the underlying buffer. */
kl_view *kl_ll_access_view(const kl_view *top, kl_value *v, kl_value **under, char *err, size_t n);
/* A view from a flat index [numel(v)] to the coordinates of v's underlying buffer (v a
 * buffer of rank >= 1). */
kl_view *kl_ll_flat_access(kl_value *v, kl_value **under, char *err, size_t n);
/* The same with the flat index running over v's dims in `order` (outermost first; NULL:
 * v's dim order). */
kl_view *kl_ll_flat_access_ordered(kl_value *v, const int *order, kl_value **under, char *err, size_t n);
/* Max vector length (128-bit cap) along upper dim `dim` of `full` (a view down to the
 * coordinates of buffer `under`); 1 when nothing better can be proved. */
int64_t kl_ll_vector_len(const kl_view *full, kl_value *under, int dim);

/* ---- emission ---- */
typedef struct kl_ll {
  kl_emitter e; /* e.rw: the rewriter, e.loc: location of the emitted ops */
  kl_ctx *ctx;
  int64_t unroll;  /* max trip count of a loop emitted unrolled (0: never unroll) */
  const char *rmw; /* NULL: kl_ll_store emits rock.store; "add": rock.atomic_rmw {kind = "add"} */
} kl_ll;
void kl_ll_init(kl_ll *L, kl_rewriter *rw, kl_loc loc, int64_t unroll);

kl_value *kl_ll_idx(kl_ll *L, int64_t v);
kl_value *kl_ll_const(kl_ll *L, const kl_type *t, double v); /* scalar, or vector splat */
kl_value *kl_ll_op1(kl_ll *L, const char *name, kl_value *a, const kl_type *rt);
kl_value *kl_ll_op2(kl_ll *L, const char *name, kl_value *a, kl_value *b, const kl_type *rt);
kl_value *kl_ll_cmp(kl_ll *L, const char *name, const char *pred, kl_value *a, kl_value *b); /* arith.cmpi/cmpf */
kl_value *kl_ll_select(kl_ll *L, kl_value *c, kl_value *a, kl_value *b);
kl_value *kl_ll_min_index(kl_ll *L, kl_value *a, kl_value *b);
/* Value conversion to element type `to` (vector-aware): float<->float (extf/truncf,
 * f16<->bf16 through f32), int<->int (extsi/trunci), float->int (fptosi, saturating),
 * int->float (sitofp), anything->i1 is x != 0, index<->int (index_cast). */
kl_value *kl_ll_convert(kl_ll *L, kl_value *v, const kl_type *to);
/* A rock.elementwise(src, dst) at rw's insertion point whose body converts each element of
 * the tile src to dst's element type (kl_ll_convert); the insertion point stays after it. */
void kl_ll_convert_tile(kl_rewriter *rw, kl_loc loc, kl_value *src, kl_value *dst);
/* Accumulator type for arithmetic on elements of t (f16/bf16/f32 -> f32, f64 -> f64,
 * ints -> i64 for reductions / i32 for GEMMs is the caller's choice). */
const kl_type *kl_ll_float_acc(kl_ctx *ctx, const kl_type *t);

/* Memory. buf is an underlying buffer; coords its lower coordinates; valid an i1 or
 * NULL (always valid). vlen > 1 loads vector<vlen x T> (vlen consecutive elements). */
kl_value *kl_ll_load(kl_ll *L, kl_value *buf, kl_value *const *coords, kl_value *valid, int64_t vlen);
void kl_ll_store(kl_ll *L, kl_value *val, kl_value *buf, kl_value *const *coords, kl_value *valid);
/* Through a view down to buf (upper: kl_view_rank(v) index values). */
kl_value *kl_ll_load_view(kl_ll *L, kl_value *buf, const kl_view *v, kl_value *const *upper, int64_t vlen);
void kl_ll_store_view(kl_ll *L, kl_value *val, kl_value *buf, const kl_view *v, kl_value *const *upper);

/* Loops and conditionals. The body gets the induction variable and the carried values
 * (carry[0..ncarry), updated in place by the body); after the call carry holds the
 * final values. */
#define KL_LL_MAX_CARRY 64 /* carried values per loop */
typedef void (*kl_ll_body)(kl_ll *L, kl_value *iv, kl_value **carry, void *ud);
void kl_ll_for(kl_ll *L, kl_value *lb, kl_value *ub, int64_t step, int ncarry, kl_value **carry, kl_ll_body fn,
               void *ud);
/* Starts `scf.if cond` (no results): the insertion point moves into the then-block. */
kl_op *kl_ll_if_begin(kl_ll *L, kl_value *cond);
void kl_ll_if_end(kl_ll *L, kl_op *ifop);

/* ---- host target (lower_loops_host.c) ---- */
/* Host SIMD model and micro-kernel shape; 0 = from the host CPU (kl__ll_host_simd). */
typedef struct kl_ll_host_opts {
  int simd_bytes, simd_regs;
  int64_t mr, nv;
  bool gemm, copies, prefetch;
} kl_ll_host_opts;
/* Vector register width (bytes) and count of the host CPU (LLVM's host features). */
void kl__ll_host_simd(int *bytes, int *regs);
/* The register-blocked GEMM micro-kernels of a block_size-1 kernel (see
 * lower_loops_host.c); ops that do not match are left to the generic patterns. */
kl_status kl__ll_host_gemms(kl_op *fn, const kl_ll_host_opts *ho);
/* Fused global -> LDS copies of a block_size-1 kernel. */
kl_status kl__ll_host_copies(kl_op *fn, const kl_ll_host_opts *ho);

/* ---- misc ---- */
/* Erases unused rock.transform ops (and, with allocs, unused rock.alloc ops) under root,
 * through a standalone rewriter, until none is left. */
void kl_ll_erase_dead(kl_op *root, bool allocs);
kl_op *kl_ll_func_of(kl_op *op);
/* The func's "target" string attribute, else the module's, else "host". NULL + err for
 * an unknown name. */
const kl_target *kl_ll_target_of(kl_op *func, char *err, size_t n);
/* Address space of the underlying buffer of v (through transforms). */
kl_space kl_ll_space(kl_value *v);
/* True if op a is executed before op b (a's ancestor precedes b's ancestor in their
 * common block; false if they share no block). */
bool kl_ll_before(const kl_op *a, const kl_op *b);
/* True if value v is available at op (a block argument of a block enclosing op, or
 * defined by an op before op in an enclosing block). */
bool kl_ll_dominates(kl_value *v, const kl_op *op);
/* Reports "rock-lower-loops: '<op>': <message>" at op's location through the rewriter
 * (the pass then fails); returns false. */
bool kl_ll_fail(kl_rewriter *rw, kl_op *op, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
#endif

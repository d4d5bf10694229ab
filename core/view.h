/* view.h — coordinate-transform views (transform maps), pure C math.
 *
 * Contract.
 *  - A transform map (kl_vmap) maps coordinates of named *upper* dims to named *lower*
 *    dims through a list of transforms (kl_vtrans) that together cover every upper and
 *    every lower dim exactly once. A view (kl_view) is a stack of maps, top first: map
 *    i's lower shape equals map i+1's upper shape; the last map's lower side is the
 *    buffer's logical coordinate space. A view always holds at least one map (the
 *    identity view over a shape is one map of PassThroughs).
 *  - Transform kinds (upper u -> lower l), parameters in braces:
 *      PassThrough       n up -> n lo, l[i] = u[i] (pairs), sizes equal
 *      Pad{l1,r1,..}     n up -> n lo, l = u - left, upper = lower + left + right;
 *                        l outside [0, lower size) is INVALID
 *      Slice{b1,e1,..}   n up -> n lo, l = u + begin, upper = end - begin,
 *                        0 <= begin < end <= lower size
 *      Embed{c1..cN}     N up -> 1 lo, l = sum ci*ui (ci may be 0 or negative);
 *                        l outside [0, lower size) is INVALID
 *      Unmerge{s1..sN}   N up -> 1 lo, row-major linearisation, ui < si, lower = prod si
 *      Merge{s1..sN}     1 up -> N lo, delinearisation (inverse of Unmerge), upper = prod
 *      AddDim{s1..}      n up -> 0 lo, the upper coordinate is ignored
 *      Broadcast{m1..}   n up -> n lo, l = u mod m, 1 <= m <= lower size
 *      ConstDim{v1,s1,..} 0 up -> n lo, l = v (0 <= v < s = lower size)
 *      Xor{d,m}          2 up (r, c) -> 2 lo, l = (r, c XOR ((r / d) mod m)): an LDS
 *                        swizzle; m a power of two dividing c's size (a bijection,
 *                        its own inverse), d >= 1, sizes equal
 *    An evaluated coordinate is valid iff the upper coordinate is in range and no Pad or
 *    Embed on the way produced an out-of-range value. A valid coordinate is always in
 *    range at every level; an invalid one may carry garbage (never used to index).
 *  - Memory: every kl_view returned by this module is ONE heap block owned by the caller
 *    and released with kl_view_free (NULL is fine). Views are immutable; builders return
 *    new views and never modify their input. kl_view_copy_with copies a view into memory
 *    from any allocator (e.g. a kl_arena; such copies are never freed one by one).
 *  - Errors: functions that can fail return NULL / false / -1 and, if `err` is non-NULL,
 *    fill it with a message (and, for the text parser, the 1-based line and column of
 *    the problem; 0 otherwise). Nothing aborts on bad input (only on out-of-memory).
 *  - Limits: at most KL_VIEW_MAX_MAPS maps, KL_VIEW_MAX_DIMS dims on each side of a
 *    map, sizes in [1, KL_VIEW_MAX_SIZE], dim names of [A-Za-z0-9_.$]
 *    (1..KL_VIEW_MAX_NAME chars), unique on each side of a map.
 *
 * Text syntax (kl_view_print / kl_view_parse round-trip exactly):
 *    view      := map ( '|' map )*                            maps top first
 *    map       := '[' [ transform (',' transform)* ] ']' 'bounds' '=' ints '->' ints
 *    transform := Kind [ '{' int (',' int)* '}' ] names 'at' ints '->' names 'at' ints
 *    names     := '[' [ "name" (',' "name")* ] ']'      ints := '[' [ int (',' int)* ] ']'
 *  e.g. (one map; `bounds` = upper sizes -> lower sizes)
 *    [Merge{4,8} ["gk"] at [0] -> ["g","k"] at [0,1], PassThrough ["m"] at [1] -> ["m"] at [2]] bounds=[32,5] -> [4,8,5]
 *  The printer writes ", " between transforms, "," inside lists, " | " between maps;
 *  the parser accepts any whitespace between tokens. Parse errors give line:col. */
#ifndef KL_VIEW_H
#define KL_VIEW_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "core/arena.h"

#define KL_VIEW_MAX_DIMS   16
#define KL_VIEW_MAX_TRANS  (2 * KL_VIEW_MAX_DIMS)
#define KL_VIEW_MAX_PARAMS (2 * KL_VIEW_MAX_DIMS)
#define KL_VIEW_MAX_SIZE   ((int64_t)1 << 40)
#define KL_VIEW_MAX_NAME   63
#define KL_VIEW_MAX_MAPS   1024

typedef enum kl_vkind {
  KL_VT_PASSTHROUGH,
  KL_VT_PAD,
  KL_VT_SLICE,
  KL_VT_EMBED,
  KL_VT_UNMERGE,
  KL_VT_MERGE,
  KL_VT_ADDDIM,
  KL_VT_BROADCAST,
  KL_VT_CONSTDIM,
  KL_VT_XOR
} kl_vkind;
#define KL_VT_COUNT 10

typedef struct kl_view_err {
  int line, col;
  char msg[256];
} kl_view_err;

/* One transform of a map; upper/lower hold dim indices of the map's sides. */
typedef struct kl_vtrans {
  kl_vkind kind;
  int nparams, nupper, nlower;
  const int64_t *params;
  const int *upper, *lower;
} kl_vtrans;

typedef struct kl_vmap {
  int nupper, nlower, ntrans;
  const char *const *upper_names;
  const int64_t *upper_sizes;
  const char *const *lower_names;
  const int64_t *lower_sizes;
  const kl_vtrans *trans;
} kl_vmap;

typedef struct kl_view {
  int nmaps;
  const kl_vmap *maps; /* maps[0] is the top (its upper side is the view's shape) */
  size_t nbytes;       /* size of the single block holding the view */
} kl_view;

/* ---- kinds ---- */
const char *kl_vkind_name(kl_vkind k);           /* "PassThrough", ... */
int kl_vkind_from_name(const char *s, size_t n); /* -1 if unknown */

/* ---- construction, copies ---- */
/* Validates (coverage, parameter counts, size consistency, adjacent shapes, names) and
 * packs a copy of maps[0..nmaps) (nmaps >= 1). The input arrays are not retained. */
kl_view *kl_view_make(int nmaps, const kl_vmap *maps, kl_view_err *err);
/* Checks one map; returns false with a message (and *bad_trans = offending transform
 * index or -1) if it is malformed. bad_trans may be NULL. */
bool kl_vmap_check(const kl_vmap *m, int *bad_trans, kl_view_err *err);
kl_view *kl_view_clone(const kl_view *v);
/* Packs a copy into memory from alloc(ud, n) (must return 16-byte aligned memory). */
kl_view *kl_view_copy_with(const kl_view *v, void *(*alloc)(void *ud, size_t n), void *ud);
kl_view *kl_view_copy_to_arena(const kl_view *v, kl_arena *a);
void kl_view_free(kl_view *v);
bool kl_view_equal(const kl_view *a, const kl_view *b); /* structure, params, names */

/* ---- shape accessors ---- */
int kl_view_rank(const kl_view *v);                  /* upper (top) rank */
int64_t kl_view_size(const kl_view *v, int dim);     /* upper size of dim */
const char *kl_view_name(const kl_view *v, int dim); /* upper name of dim */
int kl_view_dim(const kl_view *v, const char *name); /* upper dim index or -1 */
int kl_view_lower_rank(const kl_view *v);            /* buffer rank */
int64_t kl_view_lower_size(const kl_view *v, int dim);
const char *kl_view_lower_name(const kl_view *v, int dim);
int64_t kl_view_numel(const kl_view *v); /* product of upper sizes (INT64_MAX if it overflows) */

/* ---- evaluate ---- */
/* Maps an upper coordinate (kl_view_rank entries) to the buffer coordinate (lower rank
 * entries, written to lower). Returns the validity bit. */
bool kl_view_eval(const kl_view *v, const int64_t *upper, int64_t *lower);
/* One map only; returns false if a Pad/Embed of this map went out of range. */
bool kl_vmap_eval(const kl_vmap *m, const int64_t *upper, int64_t *lower);
/* Linear address sum lower[i]*strides[i] of the evaluated coordinate (strides in
 * elements; NULL = row-major over the buffer shape). *valid gets the validity bit. */
int64_t kl_view_eval_addr(const kl_view *v, const int64_t *upper, const int64_t *strides, bool *valid);

/* ---- compose, simplify, invert ---- */
/* compose(a, b): a on top of b (a's lower shape must equal b's upper shape); evaluating
 * the result equals evaluating a then b (validity is the AND). */
kl_view *kl_view_compose(const kl_view *a, const kl_view *b, kl_view_err *err);
/* Same evaluation (coordinates of valid points and validity of every point), fewer or
 * simpler maps: identity transforms become PassThrough and identity maps are dropped;
 * adjacent maps are fused where every connected group of transforms folds
 * (PassThrough into anything; Merge->Unmerge of the same dims becomes PassThrough;
 * Unmerge->Merge is a reshape and becomes PassThrough/Merge/Unmerge per group of equal
 * prefix products; Pad+Pad, Slice+Slice, Merge+Merge, Unmerge+Unmerge and
 * Unmerge+Embed flatten; a ConstDim read through a Broadcast is a ConstDim); a Merge
 * whose consecutive outputs are recombined in order by an Unmerge of the next map is
 * collapsed so both use one combined dim (fewer div/mod). Top and bottom dim names
 * are kept; intermediate shapes may change. Never fails. */
kl_view *kl_view_simplify(const kl_view *v);
/* Inverse view (the buffer space becomes the upper side). Per map, reversed order:
 * PassThrough stays, Merge <-> Unmerge, AddDim{1} <-> ConstDim{0,1}. Anything else
 * (Pad, Slice, Embed, Broadcast, AddDim{n>1}, other ConstDim) fails with a message
 * naming the map and the transform as printed. */
kl_view *kl_view_invert(const kl_view *v, kl_view_err *err);
/* Partial inverse, for moving a view from one side of an access to the other where that
 * is sound (rock-regularize). As kl_view_invert, plus, per flag:
 *   KL_VIEW_INVERT_SLICE: Slice{b,e} (lower size S) -> Pad{b, S-e}: the lower points
 *     outside [b, e) become INVALID upper points of the inverse (a read of one gives 0,
 *     a write to one is skipped). Sound for reads and writes: a Slice is total and
 *     one-to-one.
 *   KL_VIEW_INVERT_PAD: Pad{l,r} (lower size L) -> Slice{l, l+L}: the padding points
 *     (invalid in v) are simply not reached by the inverse. Sound only when v is the view
 *     of a WRITE (invalid points were skipped); a read through a Pad produced zeros
 *     that the inverse cannot give back.
 * For every valid upper point u of v, inverse(v(u)) = u; for every lower point l that v
 * does not reach, the inverse gives an invalid point. Without flags it is kl_view_invert.
 * kl_view_invalid_dims(result) != 0 says the inverse can produce invalid points. */
enum { KL_VIEW_INVERT_SLICE = 1u << 0, KL_VIEW_INVERT_PAD = 1u << 1 };
kl_view *kl_view_invert_partial(const kl_view *v, unsigned flags, kl_view_err *err);

/* ---- bounds ---- */
/* Bit i set = upper dim i can make the coordinate invalid (it feeds a Pad or Embed that
 * can go out of range for some in-range upper coordinate; interval analysis). 0 means
 * the view never produces an invalid coordinate (no validity check is needed). */
uint32_t kl_view_invalid_dims(const kl_view *v);
/* Whether transform t of map m can produce an invalid coordinate (code generation emits
 * a validity check for exactly these transforms). */
bool kl_view_trans_may_be_invalid(const kl_view *v, int m, int t);

/* ---- vectorization (view_vec.c) ---- */
/* The largest power of two L <= max_len (and dividing the size of upper dim `dim`) such
 * that every run of L consecutive coordinates along `dim` that starts at a multiple of
 * L is either all invalid, or all valid with consecutive buffer addresses (address =
 * sum lower[i]*strides[i], strides in elements, NULL = row-major) whose first address is
 * a multiple of L. Returns 1 when nothing better can be proved; -1 on a bad argument. */
int64_t kl_view_vector_len(const kl_view *v, int dim, const int64_t *strides, int64_t max_len);
/* As above with max_len = 128 bits / elem_bits (dwordx4), at least 1. */
int64_t kl_view_max_vectorization(const kl_view *v, int dim, const int64_t *strides, int elem_bits);

/* ---- builders ----
 * Each builder pushes ONE new map on top of v (the new map's lower side is v's upper
 * side) and returns the new view; dims not mentioned pass through unchanged, keeping
 * their names and relative order. Dims are named by v's current upper names. */
/* Identity view over a buffer shape; names NULL gives "d0", "d1", ... */
kl_view *kl_view_identity(int rank, const int64_t *shape, const char *const *names, kl_view_err *err);
/* Rename / permute: new upper dim i is named names[i] and is lower dim from[i]
 * (a permutation of all current names). */
kl_view *kl_view_passthrough(const kl_view *v, int n, const char *const *names, const char *const *from,
                             kl_view_err *err);
/* New upper dim i = current dim perm[i] (names follow). */
kl_view *kl_view_transpose(const kl_view *v, int n, const int *perm, kl_view_err *err);
/* Pad dims names[i] by lr[2i] (left) and lr[2i+1] (right). */
kl_view *kl_view_pad(const kl_view *v, int n, const char *const *names, const int64_t *lr, kl_view_err *err);
/* Slice dims names[i] to [be[2i], be[2i+1]). */
kl_view *kl_view_slice(const kl_view *v, int n, const char *const *names, const int64_t *be, kl_view_err *err);
/* Replace dim `dim` by n new dims (in its place) with sizes and coefficients:
 * dim = sum coeffs[i]*new[i]. */
kl_view *kl_view_embed(const kl_view *v, const char *dim, int n, const char *const *names, const int64_t *sizes,
                       const int64_t *coeffs, kl_view_err *err);
/* Split dim `dim` into n dims (in its place), row-major; prod sizes = its size. */
kl_view *kl_view_unmerge(const kl_view *v, const char *dim, int n, const char *const *names, const int64_t *sizes,
                         kl_view_err *err);
/* Fuse dims from[0..n) (most significant first) into one dim `name`, placed where the
 * first (lowest-position) of them was. */
kl_view *kl_view_merge(const kl_view *v, const char *name, int n, const char *const *from, kl_view_err *err);
/* Dims names[i] get upper size sizes[i] and read lower coordinate u mod (lower size). */
kl_view *kl_view_broadcast(const kl_view *v, int n, const char *const *names, const int64_t *sizes, kl_view_err *err);
/* Swizzle: dims row and col keep their names and sizes; col reads col XOR ((row / d) mod m)
 * (Xor{d,m}; m a power of two dividing col's size, d >= 1: validation reports others). */
kl_view *kl_view_xor(const kl_view *v, const char *row, const char *col, int64_t d, int64_t m, kl_view_err *err);
/* Insert an ignored dim `name` of `size` at upper position pos (0..rank). */
kl_view *kl_view_add_dim(const kl_view *v, const char *name, int64_t size, int pos, kl_view_err *err);
/* Remove dim `name` from the upper side; it reads the fixed coordinate value. */
kl_view *kl_view_const_dim(const kl_view *v, const char *name, int64_t value, kl_view_err *err);
/* Reshape to `shape` (same element count) with Merge/Unmerge groups (two maps when a
 * group needs both); names NULL gives "r0", "r1", ... */
kl_view *kl_view_reshape(const kl_view *v, int rank, const int64_t *shape, const char *const *names, kl_view_err *err);

/* ---- text ---- */
void kl_view_print_sb(kl_sb *sb, const kl_view *v);
char *kl_view_print(const kl_view *v); /* malloc'd, caller frees */
void kl_vmap_print_sb(kl_sb *sb, const kl_vmap *m);
void kl_vtrans_print_sb(kl_sb *sb, const kl_vmap *m, const kl_vtrans *t);
/* text need not be NUL-terminated. On error err->msg holds the message and err->line /
 * err->col (1-based) the position of the problem in text. */
kl_view *kl_view_parse(const char *text, size_t len, kl_view_err *err);

/* ---- IR attribute `#view<...>` (view_attr.c; needs the IR core) ----
 * kl_register_view_attr registers the extension on a context (dialect registration).
 * kl_attr_view returns the view of a #view attribute (NULL for anything else; owned by
 * the context). kl_attr_from_view copies v into the context arena and returns the
 * interned attribute (registering the extension if needed). */
typedef struct kl_ctx kl_ctx;
typedef struct kl_attr kl_attr;
void kl_register_view_attr(kl_ctx *ctx);
const kl_view *kl_attr_view(const kl_attr *a);
const kl_attr *kl_attr_from_view(kl_ctx *ctx, const kl_view *v);
#endif

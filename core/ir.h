/* ir.h — ops, values, blocks and regions: the one IR data structure of every level.
 * Contract: an op has a name, operands (each a kl_use threaded on its value's use
 * list), results, sorted named attributes, regions of blocks with arguments, and a
 * location. All memory is arena-owned by the context; erasing an op unlinks it and
 * drops its uses (memory is reclaimed with the context). Passes mutate IR through the
 * rewriter (rewrite.h), which calls these primitives and tells the driver.
 * Top level: a module is a "builtin.module" op with one region of one block. */
#ifndef KL_IR_H
#define KL_IR_H
#include "core/attr.h"
#include "core/hashmap.h"

typedef struct kl_use kl_use;
struct kl_use {
  kl_value *value;
  kl_op *user;
  int index;
  kl_use *prev, *next;
};

struct kl_value {
  const kl_type *type;
  kl_op *def;      /* defining op, or NULL for a block argument */
  kl_block *block; /* owning block for block arguments */
  int index;       /* result number or argument number */
  kl_use *first_use;
  const char *name_hint; /* optional printing hint (interned), e.g. "x" */
};

struct kl_region {
  kl_op *op;
  kl_block *first, *last;
};
struct kl_block {
  kl_region *region;
  kl_block *prev, *next;
  int nargs, cap_args;
  kl_value **args;
  kl_op *first, *last;
  kl_arena *arena; /* where it and its argument list live (kl_ctx_ir_arena when created) */
};

struct kl_op {
  kl_ctx *ctx;
  const char *name;    /* interned "dialect.op" */
  const kl_opdef *def; /* NULL if unregistered */
  kl_loc loc;
  int nopnds;
  kl_use *opnds;
  int nresults;
  kl_value *results;
  int nattrs;
  kl_named_attr *attrs; /* sorted by name */
  int nregions;
  kl_region *regions;
  kl_block *block;
  kl_op *prev, *next;
  int64_t scratch; /* per-pass scratch (e.g. position numbers); no meaning across passes */
  kl_arena *arena; /* where it and its arrays live (kl_ctx_ir_arena when created) */
};

/* ---- op definitions (registry) ---- */
enum {
  KL_TRAIT_PURE = 1u << 0,       /* no side effects: dead if unused, CSE-able */
  KL_TRAIT_TERMINATOR = 1u << 1, /* must end its block */
  KL_TRAIT_VIEW = 1u << 2,       /* result is a view of operand 0 (no data moves) */
  KL_TRAIT_FUSING = 1u << 3,     /* element-wise fusing op (regularization) */
  KL_TRAIT_ISOLATED = 1u << 4,   /* regions may not use values defined outside */
  KL_TRAIT_COMMUTATIVE = 1u << 5,
  KL_TRAIT_CONSTANT = 1u << 6,         /* has a "value" attribute and no operands */
  KL_TRAIT_SYMBOL = 1u << 7,           /* has a "sym_name" string attribute */
  KL_TRAIT_SAME_TYPES = 1u << 8,       /* all operands and results have one type */
  KL_TRAIT_NO_TERMINATOR = 1u << 9,    /* blocks of its regions need no terminator */
  KL_TRAIT_ELEMENTWISE = 1u << 10,     /* graph op computing each result element from the same
                                      (broadcast) element of its operands: binary, unary,
                                      clip, where, convert */
  KL_TRAIT_INVERTIBLE_VIEW = 1u << 11, /* a view (KL_TRAIT_VIEW) mapping coordinates
                                          one-to-one (graph.transpose, graph.reshape) */
  KL_TRAIT_GEMM_ANCHOR = 1u << 12,     /* graph op lowered to a GEMM that epilogues fuse onto
                                      (graph.conv, graph.dot) */
  KL_TRAIT_HOST_PLAN = 1u << 13,       /* graph op of the host plan, not a computation: it stays in
                                      the graph when graph-partition moves the computations
                                      into kernels (graph.param, graph.constant, graph.launch) */
  KL_TRAIT_PLAN_INPUT = 1u << 14       /* host-plan op whose result exists before any kernel runs
                                      (graph.param, graph.constant) */
};

/* What a graph op computes, as data on its definition (0 = none), so that passes and the
 * evaluator read a field instead of comparing names (dialect_graph.h says which op has
 * which). kernel: the kernel of its own that graph-partition gives the op (REDUCE,
 * SOFTMAX, CONCAT) or the GEMM an anchor becomes (CONV, DOT). view: which view a
 * KL_TRAIT_VIEW graph op is. scalar: the element-wise (or per-reduction) form, with
 * scalar_code its kl_binop / kl_unop / kl_reduce_op (core/scalar_ops.h). */
typedef enum kl_kernel_kind {
  KL_KERNEL_NONE,
  KL_KERNEL_CONV,
  KL_KERNEL_DOT,
  KL_KERNEL_REDUCE,
  KL_KERNEL_SOFTMAX,
  KL_KERNEL_CONCAT
} kl_kernel_kind;
typedef enum kl_view_kind {
  KL_VIEWOP_NONE,
  KL_VIEWOP_BROADCAST,
  KL_VIEWOP_TRANSPOSE,
  KL_VIEWOP_RESHAPE,
  KL_VIEWOP_SLICE
} kl_view_kind;
typedef enum kl_scalar_form {
  KL_SCALAR_NONE,
  KL_SCALAR_BINARY,
  KL_SCALAR_UNARY,
  KL_SCALAR_CLIP,
  KL_SCALAR_WHERE,
  KL_SCALAR_CONVERT,
  KL_SCALAR_REDUCE
} kl_scalar_form;

/* IR levels an op is legal at (kl_opdef.levels, a bitmask; 0 = every level, e.g. the
 * builtin func / arith / scf ops). graph: graph functions and the host plan; kernel:
 * kernel functions after graph-to-rock (rock.gemm, rock.elementwise, ...); loop: kernel
 * bodies after rock-lower-loops, what lower-to-llvm accepts. kl_verify_level (verify.h)
 * checks them. */
enum { KL_LEVEL_GRAPH = 1u << 0, KL_LEVEL_KERNEL = 1u << 1, KL_LEVEL_LOOP = 1u << 2 };

/* Fold result per op result: a constant attribute or an existing value. */
typedef struct kl_fold_result {
  const kl_attr *attr;
  kl_value *value;
} kl_fold_result;

/* Collected pieces of an op before creation (parser and custom-syntax hooks). */
typedef struct kl_op_state {
  const char *name;
  kl_loc loc;
  int nopnds;
  kl_value **opnds;
  int nresults;
  const kl_type **result_types;
  int nattrs;
  kl_named_attr *attrs;
  int nregions;
  kl_region **regions; /* detached regions to move into the op */
} kl_op_state;

struct kl_printer;
struct kl_parser;
struct kl_opdef {
  const char *name;
  unsigned traits;
  unsigned levels;                   /* KL_LEVEL_* bitmask; 0 = legal at every level */
  int min_operands, max_operands;    /* max_operands < 0: unbounded */
  int min_results, max_results;      /* max_results < 0: unbounded */
  int num_regions;                   /* < 0: any number */
  const char *const *required_attrs; /* NULL-terminated list, or NULL */
  /* Extra checks; emit diagnostics at op->loc and return KL_ERR on failure. */
  kl_status (*verify)(kl_op *op);
  /* cst[i] = constant attribute of operand i or NULL. Fill out[0..nresults) and
   * return true if the op folds. */
  bool (*fold)(kl_op *op, const kl_attr *const *cst, kl_fold_result *out);
  /* Optional custom syntax: print everything after "%r = name" (a leading space is
   * the hook's to write); parse fills st from just after the op name. */
  void (*print)(struct kl_printer *pr, kl_op *op);
  kl_status (*parse)(struct kl_parser *p, kl_op_state *st);
  /* Materialize a constant of type t with value attr (for dialects whose fold
   * produces attributes); NULL = use arith.constant. */
  const char *summary;
  /* Graph ops: result type from operand types and attributes (kl_graph_infer's contract,
   * dialect_graph.h); NULL for ops whose type is given (graph.param, graph.constant,
   * graph.launch). */
  const kl_type *(*infer)(kl_ctx *ctx, const char *name, kl_loc loc, int n, const kl_type *const *operand_types,
                          int nattrs, const kl_named_attr *attrs, const kl_type *result_elem);
  unsigned char kernel;      /* kl_kernel_kind */
  unsigned char view;        /* kl_view_kind */
  unsigned char scalar;      /* kl_scalar_form */
  unsigned char scalar_code; /* kl_binop / kl_unop / kl_reduce_op of the scalar form */
};

/* ---- hooks: behaviour attached to op definitions by the layers above the core ----
 * An "external model" in MLIR's sense: core stores one type-erased function per op and
 * hook kind in the context; the layer that owns the behaviour attaches it (the
 * reference evaluator its eval hooks, runtime/graph_eval.h; lower-to-llvm its lowering
 * hooks, passes/lower_to_llvm.h) and casts it back to its own signature. Any registered
 * op may get hooks, user ops included; re-registering an op keeps its hooks. */
typedef enum kl_hook_kind {
  KL_HOOK_EVAL,       /* reference semantics of a graph op (runtime/graph_eval.h: kl_eval_fn) */
  KL_HOOK_LOWER_LLVM, /* LLVM lowering of a loop-level op (passes/lower_to_llvm.h: kl_lower_llvm_fn) */
  KL_HOOK_COUNT
} kl_hook_kind;
typedef void (*kl_hook_fn)(void);
/* Attaches fn (NULL detaches) as the `kind` hook of registered op `name`, replacing an
 * earlier one. KL_ERR (with a diagnostic) if no op of that name is registered or kind is
 * out of range. */
kl_status kl_opdef_attach(kl_ctx *ctx, kl_hook_kind kind, const char *name, kl_hook_fn fn);
/* The `kind` hook of op definition def in ctx, or NULL. */
kl_hook_fn kl_opdef_hook(kl_ctx *ctx, const kl_opdef *def, kl_hook_kind kind);
static inline kl_hook_fn kl_op_hook(const kl_op *op, kl_hook_kind kind) {
  return op->def ? kl_opdef_hook(op->ctx, op->def, kind) : NULL;
}

/* ---- creation ---- */
/* Creates a detached op with nregions empty regions. attrs need not be sorted. */
kl_op *kl_op_create(kl_ctx *ctx, const char *name, kl_loc loc, int nopnds, kl_value *const *opnds, int nresults,
                    const kl_type *const *result_types, int nattrs, const kl_named_attr *attrs, int nregions);
/* Creates from a state; regions in st are moved into the op. */
kl_op *kl_op_create_state(kl_ctx *ctx, const kl_op_state *st);
kl_region *kl_region_create_detached(kl_ctx *ctx);
kl_block *kl_block_create(kl_ctx *ctx); /* detached */
kl_value *kl_block_add_arg(kl_ctx *ctx, kl_block *b, const kl_type *t);
void kl_block_erase_arg(kl_block *b, int index); /* arg must be unused */
kl_op *kl_module_create(kl_ctx *ctx, kl_loc loc);
kl_block *kl_module_body(kl_op *module);

/* ---- structure ---- */
void kl_region_push_block(kl_region *r, kl_block *b);
void kl_region_insert_block_before(kl_region *r, kl_block *before, kl_block *b);
void kl_block_unlink(kl_block *b);
void kl_block_push_op(kl_block *b, kl_op *op); /* append */
void kl_op_insert_before(kl_op *anchor, kl_op *op);
void kl_op_insert_after(kl_op *anchor, kl_op *op);
void kl_op_unlink(kl_op *op);            /* detach, keep uses */
kl_op *kl_op_parent_op(const kl_op *op); /* enclosing op or NULL */
kl_block *kl_region_entry(const kl_region *r);
kl_op *kl_block_terminator(const kl_block *b);                  /* last op if it is a terminator */
bool kl_op_is_ancestor(const kl_op *ancestor, const kl_op *op); /* ancestor contains op (or ==) */
bool kl_op_is_before_in_block(const kl_op *a, const kl_op *b);

/* ---- operands, results, uses ---- */
static inline kl_value *kl_op_operand(const kl_op *op, int i) { return op->opnds[i].value; }
static inline kl_value *kl_op_result(kl_op *op, int i) { return &op->results[i]; }
void kl_op_set_operand(kl_op *op, int i, kl_value *v);
void kl_op_set_operands(kl_op *op, int n, kl_value *const *vals);
bool kl_value_has_uses(const kl_value *v);
int kl_value_use_count(const kl_value *v);
bool kl_op_results_unused(const kl_op *op);
void kl_value_replace_all_uses(kl_value *from, kl_value *to);
/* Replace uses of from by to, except uses inside op `except`. */
void kl_value_replace_uses_except(kl_value *from, kl_value *to, const kl_op *except);
void kl_value_set_type(kl_value *v, const kl_type *t);
kl_op *kl_value_parent_op(const kl_value *v); /* def op or the op owning the arg's block */

/* ---- attributes ---- */
const kl_attr *kl_op_attr(const kl_op *op, const char *name);
void kl_op_set_attr(kl_op *op, const char *name, const kl_attr *a); /* a == NULL removes */
bool kl_op_attr_i64(const kl_op *op, const char *name, int64_t *out);
bool kl_op_attr_f64(const kl_op *op, const char *name, double *out);
const char *kl_op_attr_string(const kl_op *op, const char *name);              /* NULL if absent */
int kl_op_attr_i64s(const kl_op *op, const char *name, int64_t *out, int max); /* -1 if absent */

/* ---- erase, clone ---- */
/* Erases op (and everything nested). Its results must be unused (else KL_ERR with a
 * diagnostic naming the op and its location). */
kl_status kl_op_erase(kl_op *op);
/* Drops all operand uses of op and of ops nested in it (before erasing a subtree
 * whose values use each other). */
void kl_op_drop_all_uses(kl_op *op);
/* Deep copy. map (may be NULL) maps old values to new ones for operands defined
 * outside the cloned op; it is extended with the clone's results/args. */
typedef struct kl_value_map {
  kl_hashmap m;
} kl_value_map; /* zeroed = empty (core/hashmap.h pointer map) */
void kl_value_map_set(kl_value_map *m, kl_value *from, kl_value *to);
kl_value *kl_value_map_get(const kl_value_map *m, kl_value *v); /* v itself if absent */
void kl_value_map_free(kl_value_map *m);
kl_op *kl_op_clone(kl_op *op, kl_value_map *map);
/* Clone region src's blocks into dst (appending), mapping values. */
void kl_region_clone_into(kl_ctx *ctx, kl_region *src, kl_region *dst, kl_value_map *map);

/* ---- walking ---- */
typedef enum { KL_WALK_ADVANCE, KL_WALK_SKIP, KL_WALK_INTERRUPT } kl_walk_result;
typedef kl_walk_result (*kl_walk_fn)(kl_op *op, void *user);
/* Pre-order (op before its regions) or post-order (regions first). Post-order walks
 * tolerate erasing the visited op. Returns KL_WALK_INTERRUPT if interrupted. */
kl_walk_result kl_walk_pre(kl_op *op, kl_walk_fn fn, void *user);
kl_walk_result kl_walk_post(kl_op *op, kl_walk_fn fn, void *user);
/* Collects every op under root (pre-order, root included) into a malloc'd array. */
kl_op **kl_collect_ops(kl_op *root, int *n);

/* ---- traits ---- */
static inline bool kl_op_has_trait(const kl_op *op, unsigned t) { return op->def && (op->def->traits & t); }
/* The graph-op data of op's definition (0 / KL_*_NONE for unregistered ops). */
static inline kl_kernel_kind kl_op_kernel_kind(const kl_op *op) {
  return op->def ? (kl_kernel_kind)op->def->kernel : KL_KERNEL_NONE;
}
static inline kl_view_kind kl_op_view_kind(const kl_op *op) {
  return op->def ? (kl_view_kind)op->def->view : KL_VIEWOP_NONE;
}
static inline kl_scalar_form kl_op_scalar_form(const kl_op *op) {
  return op->def ? (kl_scalar_form)op->def->scalar : KL_SCALAR_NONE;
}
static inline int kl_op_scalar_code(const kl_op *op) { return op->def ? op->def->scalar_code : 0; }
/* Legal at IR level `level` (KL_LEVEL_*): a registered op whose levels are 0 or include
 * it; an unregistered op only when it is not in a dialect that has levels ("rock.",
 * "graph."). */
bool kl_op_legal_at(const kl_op *op, unsigned level);
bool kl_op_is_constant(const kl_op *op);             /* constant trait with "value" */
const kl_attr *kl_value_constant(const kl_value *v); /* its constant attr, or NULL */
/* Looks up a symbol (sym_name) in the module body; NULL if absent. */
kl_op *kl_module_lookup(kl_op *module, const char *sym);
#endif

/* lower_to_llvm.c — loop-level kernel IR to LLVM IR (host, NVPTX, AMDGPU): the kernel
 * ABI, and one lowering hook per loop-level op attached to its op definition
 * (KL_HOOK_LOWER_LLVM); each op is lowered through its definition's hook. */
#include "passes/lower_to_llvm.h"
#include "passes/amdgpu_sched.h"
#include "core/dialect_rock.h"
#include "core/pass.h"
#include "passes/llvm_math.h"
#include "passes/lower_accel.h"
#include "passes/lower_lane.h"
#include "passes/lower_atomic.h"
#include "passes/lower_barrier.h"
#include "passes/lower_tma.h"
#include "passes/rock_tma.h"
#include "passes/lower_async.h"
#include "passes/lower_fp8.h"
#include "passes/lower_wgmma.h"
#include <llvm-c/Analysis.h>
#include <llvm-c/DebugInfo.h> /* LLVMTemporaryMDNode: lower_for's self-referential loop metadata */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
  kl_value *k;
  LLVMValueRef v;
} vslot;

struct kl_llvm_lowering {
  kl_ctx *ctx;
  const kl_target *t;
  LLVMContextRef c;
  LLVMModuleRef m;
  LLVMBuilderRef b;
  LLVMValueRef fn;
  LLVMBasicBlockRef entry;    /* allocas go here */
  LLVMValueRef host_block_id; /* host ABI: const int64_t *block_id */
  LLVMValueRef host_grid;     /* host ABI: const int64_t *grid */
  int64_t block_size;
  vslot *slots;
  int nslots, capslots;
  bool failed;
  int nlds;
  bool dyn_lds;               /* NVIDIA kernel above KL_NVPTX_STATIC_LDS_MAX: LDS in the extern dynamic array */
  int64_t dyn_off, dyn_total; /* bytes placed so far; the kernel's LDS bytes (the launch's) */
  LLVMFastMathFlags fmf;      /* on every float add / sub / mul: contract unless the kernel is strict_fp */
  kl_op *tma[8];              /* NVPTX: one rock.tma_load per tensor-map parameter (kl_tma_kernel_maps) */
  int ntma, nbufargs;         /* tensor maps; buffer parameters before them */
  int64_t lds_align;          /* NVPTX: the LDS buffers' alignment (16; kl_tma_lds_align with TMA) */
};
typedef kl_llvm_lowering lw;

/* ---- value map ---- */
static uint64_t hptr(const void *p) {
  uint64_t x = (uintptr_t)p;
  x ^= x >> 31;
  x *= 0x9e3779b97f4a7c15ull;
  return x ^ (x >> 29);
}
static vslot *slot(lw *L, kl_value *k) {
  for (uint64_t i = hptr(k) & (L->capslots - 1);; i = (i + 1) & (L->capslots - 1))
    if (!L->slots[i].k || L->slots[i].k == k) return &L->slots[i];
}
static void vset(lw *L, kl_value *k, LLVMValueRef v) {
  if ((L->nslots + 1) * 2 > L->capslots) {
    vslot *old = L->slots;
    int oldcap = L->capslots;
    L->capslots = oldcap ? oldcap * 2 : 256;
    L->slots = kl_xcalloc(L->capslots, sizeof *L->slots);
    for (int i = 0; i < oldcap; i++)
      if (old[i].k) *slot(L, old[i].k) = old[i];
    free(old);
  }
  vslot *s = slot(L, k);
  if (!s->k) L->nslots++;
  s->k = k;
  s->v = v;
}
static LLVMValueRef vget(lw *L, kl_value *k) {
  if (!L->capslots) return NULL;
  vslot *s = slot(L, k);
  return s->k ? s->v : NULL;
}

static bool fail(lw *L, kl_op *op, const char *fmt, const char *arg) {
  char msg[512];
  snprintf(msg, sizeof msg, fmt, arg);
  kl_emit_error(L->ctx, op->loc, "lower-to-llvm (%s): '%s': %s", L->t->name, op->name, msg);
  L->failed = true;
  return false;
}

/* ---- types ---- */
static unsigned space_as(lw *L, kl_space s) {
  if (L->t->arch == KL_ARCH_HOST) return 0;
  if (s == KL_SPACE_LDS) return 3;
  if (s == KL_SPACE_PRIVATE) return L->t->arch == KL_ARCH_AMDGPU ? 5 : 0;
  return 1;
}
static LLVMTypeRef scalar_type(lw *L, const kl_type *t) {
  switch (t->kind) {
    case KL_TY_I1: return LLVMInt1TypeInContext(L->c);
    case KL_TY_I8:
    case KL_TY_U8: return LLVMInt8TypeInContext(L->c);
    case KL_TY_I32: return LLVMInt32TypeInContext(L->c);
    case KL_TY_I64:
    case KL_TY_INDEX: return LLVMInt64TypeInContext(L->c);
    case KL_TY_F16: return LLVMHalfTypeInContext(L->c);
    case KL_TY_BF16: return LLVMBFloatTypeInContext(L->c);
    case KL_TY_F32: return LLVMFloatTypeInContext(L->c);
    case KL_TY_F64: return LLVMDoubleTypeInContext(L->c);
    case KL_TY_F8E4M3FN:
    case KL_TY_F8E5M2:
    case KL_TY_F8E4M3FNUZ:
    case KL_TY_F8E5M2FNUZ: return LLVMInt8TypeInContext(L->c); /* fp8: the code (lower_fp8.h) */
    default: return NULL;
  }
}
static LLVMTypeRef ll_type(lw *L, const kl_type *t) {
  if (t->kind == KL_TY_VECTOR) return LLVMVectorType(scalar_type(L, t->elem), (unsigned)t->shape[0]);
  if (t->kind == KL_TY_BUFFER) return LLVMPointerTypeInContext(L->c, space_as(L, t->space));
  return scalar_type(L, t);
}
static const kl_type *elem_of(const kl_type *t) { return t->kind == KL_TY_VECTOR ? t->elem : t; }
static bool is_half(const kl_type *t) {
  t = elem_of(t);
  return t->kind == KL_TY_F16 || t->kind == KL_TY_BF16;
}
static LLVMTypeRef with_elem(lw *L, const kl_type *t, LLVMTypeRef e) {
  return t->kind == KL_TY_VECTOR ? LLVMVectorType(e, (unsigned)t->shape[0]) : e;
}

static LLVMTypeRef scalar_of(LLVMTypeRef t) {
  return LLVMGetTypeKind(t) == LLVMVectorTypeKind ? LLVMGetElementType(t) : t;
}
static LLVMValueRef i64c(lw *L, int64_t v) {
  return LLVMConstInt(LLVMInt64TypeInContext(L->c), (unsigned long long)v, 1);
}

static LLVMValueRef call_intr(lw *L, const char *name, LLVMTypeRef *over, int nover, LLVMValueRef *args, int nargs) {
  unsigned id = LLVMLookupIntrinsicID(name, strlen(name));
  LLVMValueRef f = LLVMGetIntrinsicDeclaration(L->m, id, over, nover);
  LLVMTypeRef ft = LLVMIntrinsicGetType(L->c, id, over, nover);
  return LLVMBuildCall2(L->b, ft, f, args, nargs, "");
}

/* ---- constants ---- */
static LLVMValueRef constant(lw *L, kl_op *op) {
  const kl_attr *a = kl_op_attr(op, "value");
  const kl_type *t = op->results[0].type;
  LLVMTypeRef st = scalar_type(L, elem_of(t));
  LLVMValueRef s;
  if (kl_type_is_fp8(t))
    s = LLVMConstInt(st, kl_f64_to_fp8(kl_type_dtype(elem_of(t)), a->kind == KL_AT_FLOAT ? a->f : (double)a->i), 0);
  else if (a->kind == KL_AT_FLOAT)
    s = LLVMConstReal(st, a->f);
  else
    s = LLVMConstInt(st, (unsigned long long)a->i, 1);
  if (t->kind != KL_TY_VECTOR) return s;
  int n = (int)t->shape[0];
  LLVMValueRef *e = kl_xmalloc(n * sizeof *e);
  for (int i = 0; i < n; i++) e[i] = s;
  LLVMValueRef v = LLVMConstVector(e, n);
  free(e);
  return v;
}

/* ---- arithmetic ---- */
static LLVMValueRef ext_f32(lw *L, LLVMValueRef v, const kl_type *t) {
  return is_half(t) ? LLVMBuildFPExt(L->b, v, with_elem(L, t, LLVMFloatTypeInContext(L->c)), "") : v;
}
static LLVMValueRef trunc_back(lw *L, LLVMValueRef v, const kl_type *t) {
  return is_half(t) ? LLVMBuildFPTrunc(L->b, v, ll_type(L, t), "") : v;
}
static LLVMValueRef splat_like(lw *L, const kl_type *t, LLVMValueRef s) {
  if (t->kind != KL_TY_VECTOR) return s;
  int n = (int)t->shape[0];
  LLVMValueRef e[64];
  if (n > 64) return s;
  for (int i = 0; i < n; i++) e[i] = s;
  return LLVMConstVector(e, n);
}

static const kl_type *in_type(const kl_op *op) { return op->nopnds ? op->opnds[0].value->type : op->results[0].type; }

/* Integer division with graph semantics: x / 0 = 0, MIN / -1 wraps; unsigned types (u8)
 * divide unsigned. */
static LLVMValueRef safe_sdiv(lw *L, LLVMValueRef x, LLVMValueRef y, const kl_type *t, bool rem) {
  LLVMTypeRef ty = LLVMTypeOf(y);
  /* a constant divisor other than 0 (and -1, signed) needs no guard: the plain instruction,
   * which spares LLVM's first InstCombine the folding of the guards of every index division */
  if (LLVMIsAConstantInt(y)) {
    bool u = kl_type_is_unsigned(t);
    unsigned long long c = LLVMConstIntGetZExtValue(y);
    long long sc = LLVMConstIntGetSExtValue(y);
    if (c != 0 && (u || sc != -1))
      return rem ? (u ? LLVMBuildURem(L->b, x, y, "") : LLVMBuildSRem(L->b, x, y, ""))
                 : (u ? LLVMBuildUDiv(L->b, x, y, "") : LLVMBuildSDiv(L->b, x, y, ""));
  }
  if (kl_type_is_unsigned(t)) {
    LLVMValueRef z = LLVMConstNull(ty), yz = LLVMBuildICmp(L->b, LLVMIntEQ, y, z, "");
    LLVMValueRef ys = LLVMBuildSelect(L->b, yz, splat_like(L, t, LLVMConstInt(scalar_type(L, elem_of(t)), 1, 0)), y,
                                      "");
    LLVMValueRef r = rem ? LLVMBuildURem(L->b, x, ys, "") : LLVMBuildUDiv(L->b, x, ys, "");
    return LLVMBuildSelect(L->b, yz, z, r, "");
  }
  LLVMTypeRef st = scalar_type(L, elem_of(t));
  unsigned bits = LLVMGetIntTypeWidth(st);
  LLVMValueRef zero = LLVMConstNull(ty), one = splat_like(L, t, LLVMConstInt(st, 1, 0));
  LLVMValueRef minv = splat_like(L, t, LLVMConstInt(st, 1ull << (bits - 1), 0));
  LLVMValueRef negone = LLVMConstAllOnes(ty);
  LLVMValueRef yz = LLVMBuildICmp(L->b, LLVMIntEQ, y, zero, "");
  LLVMValueRef ovf = LLVMBuildAnd(L->b, LLVMBuildICmp(L->b, LLVMIntEQ, x, minv, ""),
                                  LLVMBuildICmp(L->b, LLVMIntEQ, y, negone, ""), "");
  LLVMValueRef ys = LLVMBuildSelect(L->b, LLVMBuildOr(L->b, yz, ovf, ""), one, y, "");
  LLVMValueRef r = rem ? LLVMBuildSRem(L->b, x, ys, "") : LLVMBuildSDiv(L->b, x, ys, "");
  if (rem) r = LLVMBuildSelect(L->b, ovf, zero, r, "");
  return LLVMBuildSelect(L->b, yz, zero, r, "");
}

/* Integer power by squaring, as an LLVM loop (graph semantics for negative exponents:
 * 1 for x = 1, +-1 for x = -1, else 0). Scalars only. */
static LLVMValueRef ipow(lw *L, kl_op *op, LLVMValueRef x, LLVMValueRef e) {
  LLVMTypeRef ty = LLVMTypeOf(x);
  bool u = kl_type_is_unsigned(in_type(op)); /* u8: no negative exponents */
  if (LLVMGetTypeKind(ty) == LLVMVectorTypeKind) {
    fail(L, op, "%s", "vector integer pow is not supported");
    return NULL;
  }
  LLVMValueRef zero = LLVMConstInt(ty, 0, 0), one = LLVMConstInt(ty, 1, 0), m1 = LLVMConstAllOnes(ty);
  LLVMBasicBlockRef pre = LLVMGetInsertBlock(L->b);
  LLVMBasicBlockRef head = LLVMAppendBasicBlockInContext(L->c, L->fn, "ipow.head");
  LLVMBasicBlockRef body = LLVMAppendBasicBlockInContext(L->c, L->fn, "ipow.body");
  LLVMBasicBlockRef done = LLVMAppendBasicBlockInContext(L->c, L->fn, "ipow.done");
  LLVMBuildBr(L->b, head);
  LLVMPositionBuilderAtEnd(L->b, head);
  LLVMValueRef r = LLVMBuildPhi(L->b, ty, "r"), bse = LLVMBuildPhi(L->b, ty, "b"), ex = LLVMBuildPhi(L->b, ty, "e");
  LLVMBuildCondBr(L->b, LLVMBuildICmp(L->b, u ? LLVMIntUGT : LLVMIntSGT, ex, zero, ""), body, done);
  LLVMPositionBuilderAtEnd(L->b, body);
  LLVMValueRef odd = LLVMBuildICmp(L->b, LLVMIntNE, LLVMBuildAnd(L->b, ex, one, ""), zero, "");
  LLVMValueRef r2 = LLVMBuildSelect(L->b, odd, LLVMBuildMul(L->b, r, bse, ""), r, "");
  LLVMValueRef b2 = LLVMBuildMul(L->b, bse, bse, "");
  LLVMValueRef e2 = u ? LLVMBuildLShr(L->b, ex, one, "") : LLVMBuildAShr(L->b, ex, one, "");
  LLVMBuildBr(L->b, head);
  LLVMValueRef rin[2] = { one, r2 }, bin_[2] = { x, b2 }, ein[2] = { e, e2 };
  LLVMBasicBlockRef from[2] = { pre, body };
  LLVMAddIncoming(r, rin, from, 2);
  LLVMAddIncoming(bse, bin_, from, 2);
  LLVMAddIncoming(ex, ein, from, 2);
  LLVMPositionBuilderAtEnd(L->b, done);
  if (u) return r;
  /* negative exponents */
  LLVMValueRef eodd = LLVMBuildICmp(L->b, LLVMIntNE, LLVMBuildAnd(L->b, e, one, ""), zero, "");
  LLVMValueRef negr = LLVMBuildSelect(L->b, LLVMBuildICmp(L->b, LLVMIntEQ, x, one, ""), one,
                                      LLVMBuildSelect(L->b, LLVMBuildICmp(L->b, LLVMIntEQ, x, m1, ""),
                                                      LLVMBuildSelect(L->b, eodd, m1, one, ""), zero, ""),
                                      "");
  return LLVMBuildSelect(L->b, LLVMBuildICmp(L->b, LLVMIntSLT, e, zero, ""), negr, r, "");
}

/* ---- value ops (arith / math): one result from the lowered operands a[] ---- */
typedef LLVMValueRef (*value_fn)(lw *L, kl_op *op, LLVMValueRef *a);

/* The contraction rule: a kernel func without the strict_fp attribute (kl_compile_opts
 * strict_fp, kiln.compile{strict_fp = true}) lets LLVM fuse a float multiply and the add or
 * subtract that uses it into one FMA (the `contract` flag on every fadd / fsub / fmul it
 * emits, llvm.fmuladd for math.fma): what hipcc and nvcc do by default (-ffp-contract=fast).
 * A fused multiply-add rounds once where the pair rounds twice, so each step's error is
 * at most the pair's. strict_fp emits every multiply and add rounded on its own. Values
 * computed in f32 for f16/bf16 are truncated between ops, which no contraction crosses. */
static LLVMValueRef contracted(lw *L, LLVMValueRef r) {
  if (L->fmf && LLVMIsAInstruction(r) && LLVMCanValueUseFastMathFlags(r)) LLVMSetFastMathFlags(r, L->fmf);
  return r;
}

/* float binary/unary ops: computed in f32 for halves (extend, compute, truncate back) */
typedef enum { F_ADD, F_SUB, F_MUL, F_DIV, F_REM, F_MAX, F_MIN, F_NEG } float_kind;
static LLVMValueRef float_arith(lw *L, kl_op *op, LLVMValueRef *a, float_kind k) {
  const kl_type *t = in_type(op);
  LLVMValueRef x = ext_f32(L, a[0], t), y = op->nopnds > 1 ? ext_f32(L, a[1], t) : NULL, r = NULL;
  switch (k) {
    case F_ADD: r = contracted(L, LLVMBuildFAdd(L->b, x, y, "")); break;
    case F_SUB: r = contracted(L, LLVMBuildFSub(L->b, x, y, "")); break;
    case F_MUL: r = contracted(L, LLVMBuildFMul(L->b, x, y, "")); break;
    case F_DIV: r = LLVMBuildFDiv(L->b, x, y, ""); break;
    case F_REM: r = LLVMBuildFRem(L->b, x, y, ""); break;
    case F_MAX: r = kl_llvm_max_nan(L->b, x, y, 0); break;
    case F_MIN: r = kl_llvm_max_nan(L->b, x, y, 1); break;
    case F_NEG: r = LLVMBuildFNeg(L->b, x, ""); break;
  }
  return trunc_back(L, r, op->results[0].type);
}
static LLVMValueRef v_addf(lw *L, kl_op *op, LLVMValueRef *a) { return float_arith(L, op, a, F_ADD); }
static LLVMValueRef v_subf(lw *L, kl_op *op, LLVMValueRef *a) { return float_arith(L, op, a, F_SUB); }
static LLVMValueRef v_mulf(lw *L, kl_op *op, LLVMValueRef *a) { return float_arith(L, op, a, F_MUL); }
static LLVMValueRef v_divf(lw *L, kl_op *op, LLVMValueRef *a) { return float_arith(L, op, a, F_DIV); }
static LLVMValueRef v_remf(lw *L, kl_op *op, LLVMValueRef *a) { return float_arith(L, op, a, F_REM); }
static LLVMValueRef v_maxf(lw *L, kl_op *op, LLVMValueRef *a) { return float_arith(L, op, a, F_MAX); }
static LLVMValueRef v_minf(lw *L, kl_op *op, LLVMValueRef *a) { return float_arith(L, op, a, F_MIN); }
static LLVMValueRef v_negf(lw *L, kl_op *op, LLVMValueRef *a) { return float_arith(L, op, a, F_NEG); }

static LLVMValueRef v_powf(lw *L, kl_op *op, LLVMValueRef *a) {
  const kl_type *t = in_type(op);
  LLVMValueRef x = ext_f32(L, a[0], t), y = ext_f32(L, a[1], t);
  LLVMTypeRef ct = LLVMTypeOf(x);
  if (LLVMGetTypeKind(scalar_of(ct)) == LLVMFloatTypeKind)
    return trunc_back(L, kl_llvm_pow_f32(L->b, x, y), op->results[0].type);
  return kl_llvm_pow_f64(L->b, x, y);
}
static LLVMValueRef v_ipowi(lw *L, kl_op *op, LLVMValueRef *a) { return ipow(L, op, a[0], a[1]); }

/* math functions: exp / log / tanh (and f64 erf) as polynomials in f32 or f64 (llvm_math.h), the same
 * code on every target; sqrt, fabs, roundeven, floor, ceil LLVM intrinsics every target selects (f64
 * included); math.exp {approx} in f32 on GPUs is exp2(x * log2 e) through the hardware exp2
 * (relative error ~1e-6 near |x| ~ 20, for the softmax kernels of lower_loops_reduce.c) */
typedef enum { M_EXP, M_LOG, M_SQRT, M_ABS, M_RSQRT, M_TANH, M_ROUND, M_FLOOR, M_CEIL, M_ERF } math_kind;
static LLVMValueRef math_fn(lw *L, kl_op *op, LLVMValueRef *a, math_kind k) {
  const kl_type *t = in_type(op);
  LLVMValueRef x = ext_f32(L, a[0], t), r = NULL;
  LLVMTypeRef ct = LLVMTypeOf(x);
  bool f32 = LLVMGetTypeKind(scalar_of(ct)) == LLVMFloatTypeKind;
  switch (k) {
    case M_EXP:
      if (f32 && L->t->arch != KL_ARCH_HOST && kl_op_attr(op, "approx")) { /* the hardware exp2 (ex2.approx, v_exp) */
        LLVMValueRef y = LLVMBuildFMul(L->b, x, splat_like(L, t, LLVMConstReal(scalar_of(ct), 1.4426950408889634)), "");
        if (L->t->arch == KL_ARCH_AMDGPU)
          r = call_intr(L, "llvm.exp2", &ct, 1, &y, 1);
        else if (LLVMGetTypeKind(ct) != LLVMVectorTypeKind)
          r = call_intr(L, "llvm.nvvm.ex2.approx.f", NULL, 0, &y, 1);
        else { /* NVPTX has no vector exp2: per element */
          r = LLVMGetPoison(ct);
          for (unsigned i = 0; i < LLVMGetVectorSize(ct); i++) {
            LLVMValueRef ix = LLVMConstInt(LLVMInt32TypeInContext(L->c), i, 0),
                         e = LLVMBuildExtractElement(L->b, y, ix, "");
            r = LLVMBuildInsertElement(L->b, r, call_intr(L, "llvm.nvvm.ex2.approx.f", NULL, 0, &e, 1), ix, "");
          }
        }
      } else
        r = f32 ? kl_llvm_exp_f32(L->b, x) : kl_llvm_exp_f64(L->b, x);
      break;
    case M_LOG: r = f32 ? kl_llvm_log_f32(L->b, x) : kl_llvm_log_f64(L->b, x); break;
    case M_SQRT: r = call_intr(L, "llvm.sqrt", &ct, 1, &x, 1); break;
    case M_ABS: r = call_intr(L, "llvm.fabs", &ct, 1, &x, 1); break;
    case M_ROUND: r = call_intr(L, "llvm.roundeven", &ct, 1, &x, 1); break; /* exact on f16/bf16 widened */
    case M_FLOOR: r = call_intr(L, "llvm.floor", &ct, 1, &x, 1); break;
    case M_CEIL: r = call_intr(L, "llvm.ceil", &ct, 1, &x, 1); break;
    case M_RSQRT: {
      LLVMValueRef s = call_intr(L, "llvm.sqrt", &ct, 1, &x, 1);
      r = LLVMBuildFDiv(L->b, splat_like(L, t, LLVMConstReal(scalar_of(ct), 1.0)), s, "");
      break;
    }
    case M_TANH: r = f32 ? kl_llvm_tanh_f32(L->b, x) : kl_llvm_tanh_f64(L->b, x); break;
    case M_ERF: /* f64 (graph-to-rock builds f32's erf from arith ops); f32 through f64 */
      if (f32) {
        LLVMTypeRef d = LLVMDoubleTypeInContext(L->c);
        if (LLVMGetTypeKind(ct) == LLVMVectorTypeKind) d = LLVMVectorType(d, LLVMGetVectorSize(ct));
        r = LLVMBuildFPTrunc(L->b, kl_llvm_erf_f64(L->b, LLVMBuildFPExt(L->b, x, d, "")), ct, "");
      } else
        r = kl_llvm_erf_f64(L->b, x);
      break;
  }
  return trunc_back(L, r, op->results[0].type);
}
static LLVMValueRef v_exp(lw *L, kl_op *op, LLVMValueRef *a) { return math_fn(L, op, a, M_EXP); }
static LLVMValueRef v_log(lw *L, kl_op *op, LLVMValueRef *a) { return math_fn(L, op, a, M_LOG); }
static LLVMValueRef v_sqrt(lw *L, kl_op *op, LLVMValueRef *a) { return math_fn(L, op, a, M_SQRT); }
static LLVMValueRef v_absf(lw *L, kl_op *op, LLVMValueRef *a) { return math_fn(L, op, a, M_ABS); }
static LLVMValueRef v_rsqrt(lw *L, kl_op *op, LLVMValueRef *a) { return math_fn(L, op, a, M_RSQRT); }
static LLVMValueRef v_tanh(lw *L, kl_op *op, LLVMValueRef *a) { return math_fn(L, op, a, M_TANH); }
static LLVMValueRef v_roundeven(lw *L, kl_op *op, LLVMValueRef *a) { return math_fn(L, op, a, M_ROUND); }
static LLVMValueRef v_floor(lw *L, kl_op *op, LLVMValueRef *a) { return math_fn(L, op, a, M_FLOOR); }
static LLVMValueRef v_ceil(lw *L, kl_op *op, LLVMValueRef *a) { return math_fn(L, op, a, M_CEIL); }
static LLVMValueRef v_erf(lw *L, kl_op *op, LLVMValueRef *a) { return math_fn(L, op, a, M_ERF); }

/* integer ops */
static LLVMValueRef v_addi(lw *L, kl_op *op, LLVMValueRef *a) { return LLVMBuildAdd(L->b, a[0], a[1], ""); }
static LLVMValueRef v_subi(lw *L, kl_op *op, LLVMValueRef *a) { return LLVMBuildSub(L->b, a[0], a[1], ""); }
static LLVMValueRef v_muli(lw *L, kl_op *op, LLVMValueRef *a) { return LLVMBuildMul(L->b, a[0], a[1], ""); }
static LLVMValueRef v_divsi(lw *L, kl_op *op, LLVMValueRef *a) { return safe_sdiv(L, a[0], a[1], in_type(op), false); }
static LLVMValueRef v_remsi(lw *L, kl_op *op, LLVMValueRef *a) { return safe_sdiv(L, a[0], a[1], in_type(op), true); }
static LLVMValueRef v_andi(lw *L, kl_op *op, LLVMValueRef *a) { return LLVMBuildAnd(L->b, a[0], a[1], ""); }
static LLVMValueRef v_ori(lw *L, kl_op *op, LLVMValueRef *a) { return LLVMBuildOr(L->b, a[0], a[1], ""); }
static LLVMValueRef v_xori(lw *L, kl_op *op, LLVMValueRef *a) { return LLVMBuildXor(L->b, a[0], a[1], ""); }
/* maxsi / minsi / cmpi / divsi / remsi / extsi / sitofp / fptosi / index_cast take their
 * signedness from the integer type: i8 / i32 / i64 signed, u8 (and i1) unsigned */
static LLVMValueRef v_maxsi(lw *L, kl_op *op, LLVMValueRef *a) {
  LLVMIntPredicate p = kl_type_is_unsigned(in_type(op)) ? LLVMIntUGT : LLVMIntSGT;
  return LLVMBuildSelect(L->b, LLVMBuildICmp(L->b, p, a[0], a[1], ""), a[0], a[1], "");
}
static LLVMValueRef v_minsi(lw *L, kl_op *op, LLVMValueRef *a) {
  LLVMIntPredicate p = kl_type_is_unsigned(in_type(op)) ? LLVMIntULT : LLVMIntSLT;
  return LLVMBuildSelect(L->b, LLVMBuildICmp(L->b, p, a[0], a[1], ""), a[0], a[1], "");
}
static LLVMValueRef v_select(lw *L, kl_op *op, LLVMValueRef *a) { return LLVMBuildSelect(L->b, a[0], a[1], a[2], ""); }

/* comparisons: predicate eq/ne/lt/le/gt/ge (signed, unsigned for u8; ordered for floats
 * except ne) */
static LLVMValueRef compare(lw *L, kl_op *op, LLVMValueRef *a, bool ints) {
  const char *p = kl_op_attr_string(op, "predicate");
  static const char *names[] = { "eq", "ne", "lt", "le", "gt", "ge" };
  static const LLVMIntPredicate ip[] = { LLVMIntEQ, LLVMIntNE, LLVMIntSLT, LLVMIntSLE, LLVMIntSGT, LLVMIntSGE };
  static const LLVMIntPredicate up[] = { LLVMIntEQ, LLVMIntNE, LLVMIntULT, LLVMIntULE, LLVMIntUGT, LLVMIntUGE };
  static const LLVMRealPredicate fp[] = {
    LLVMRealOEQ, LLVMRealUNE, LLVMRealOLT, LLVMRealOLE, LLVMRealOGT, LLVMRealOGE
  };
  const kl_type *t = in_type(op);
  for (int i = 0; i < 6; i++)
    if (!strcmp(p, names[i])) {
      if (ints) return LLVMBuildICmp(L->b, kl_type_is_unsigned(t) ? up[i] : ip[i], a[0], a[1], "");
      return kl_llvm_fcmp(L->b, fp[i], ext_f32(L, a[0], t), ext_f32(L, a[1], t));
    }
  return NULL;
}
static LLVMValueRef v_cmpi(lw *L, kl_op *op, LLVMValueRef *a) { return compare(L, op, a, true); }
static LLVMValueRef v_cmpf(lw *L, kl_op *op, LLVMValueRef *a) { return compare(L, op, a, false); }

/* casts (an i1 or u8 source is unsigned) */
static LLVMTypeRef result_ll(lw *L, kl_op *op) { return ll_type(L, op->results[0].type); }
static bool src_i1(const kl_op *op) { return kl_type_is_unsigned(in_type(op)); }
static LLVMValueRef v_sitofp(lw *L, kl_op *op, LLVMValueRef *a) {
  return src_i1(op) ? LLVMBuildUIToFP(L->b, a[0], result_ll(L, op), "")
                    : LLVMBuildSIToFP(L->b, a[0], result_ll(L, op), "");
}
static LLVMValueRef v_fptosi(lw *L, kl_op *op, LLVMValueRef *a) {
  LLVMTypeRef ov[2] = { result_ll(L, op), LLVMTypeOf(a[0]) };
  return call_intr(L, kl_type_is_unsigned(op->results[0].type) ? "llvm.fptoui.sat" : "llvm.fptosi.sat", ov, 2, a, 1);
}
/* fp8 (i8 codes) <-> f32 through lower_fp8.h; other float types go on from f32 (exact
 * widening; f64 -> fp8 rounds twice, through f32) */
static LLVMTypeRef f32_like(lw *L, const kl_type *t) { return with_elem(L, t, LLVMFloatTypeInContext(L->c)); }
static LLVMValueRef to_f32(lw *L, LLVMValueRef v, const kl_type *t) {
  if (kl_type_is_fp8(t)) return kl_lower_fp8_to_f32(L->c, L->b, kl_type_dtype(elem_of(t)), v);
  if (elem_of(t)->kind == KL_TY_F32) return v;
  return elem_of(t)->kind == KL_TY_F64 ? LLVMBuildFPTrunc(L->b, v, f32_like(L, t), "")
                                       : LLVMBuildFPExt(L->b, v, f32_like(L, t), "");
}
static LLVMValueRef from_f32(lw *L, LLVMValueRef v, const kl_type *t) {
  if (kl_type_is_fp8(t)) return kl_lower_f32_to_fp8(L->c, L->b, kl_type_dtype(elem_of(t)), v);
  if (elem_of(t)->kind == KL_TY_F32) return v;
  return elem_of(t)->kind == KL_TY_F64 ? LLVMBuildFPExt(L->b, v, ll_type(L, t), "")
                                       : LLVMBuildFPTrunc(L->b, v, ll_type(L, t), "");
}
/* NVIDIA sm_89 and later: the fp8 <-> f16x2 conversions of PTX 7.8 */
static bool nv_fp8_cvt(const lw *L) {
  const kl_target *t = L->t;
  if (!t || t->arch != KL_ARCH_NVPTX || strncmp(t->name, "sm_", 3)) return false;
  return atoi(t->name + 3) >= 89;
}
static LLVMValueRef v_extf(lw *L, kl_op *op, LLVMValueRef *a) {
  if (kl_type_is_fp8(in_type(op)) && elem_of(op->results[0].type)->kind == KL_TY_F16)
    return kl_lower_fp8_to_f16(L->c, L->b, kl_type_dtype(elem_of(in_type(op))), a[0], nv_fp8_cvt(L));
  if (kl_type_is_fp8(in_type(op)) || kl_type_is_fp8(op->results[0].type))
    return from_f32(L, to_f32(L, a[0], in_type(op)), op->results[0].type);
  return LLVMBuildFPExt(L->b, a[0], result_ll(L, op), "");
}
/* f32/f64 -> f16/bf16 (or f64 -> f32): a single rounding */
static LLVMValueRef v_truncf(lw *L, kl_op *op, LLVMValueRef *a) {
  if (kl_type_is_fp8(in_type(op)) || kl_type_is_fp8(op->results[0].type))
    return from_f32(L, to_f32(L, a[0], in_type(op)), op->results[0].type);
  return LLVMBuildFPTrunc(L->b, a[0], result_ll(L, op), "");
}
static LLVMValueRef v_extsi(lw *L, kl_op *op, LLVMValueRef *a) {
  return src_i1(op) ? LLVMBuildZExt(L->b, a[0], result_ll(L, op), "") : LLVMBuildSExt(L->b, a[0], result_ll(L, op), "");
}
static LLVMValueRef v_trunci(lw *L, kl_op *op, LLVMValueRef *a) {
  if (kl_type_bits(elem_of(in_type(op))) == kl_type_bits(elem_of(op->results[0].type))) return a[0]; /* i8 <-> u8 */
  return LLVMBuildTrunc(L->b, a[0], result_ll(L, op), "");
}
static LLVMValueRef v_index_cast(lw *L, kl_op *op, LLVMValueRef *a) {
  LLVMTypeRef rty = result_ll(L, op);
  unsigned from = LLVMGetIntTypeWidth(scalar_of(LLVMTypeOf(a[0])));
  unsigned to = LLVMGetIntTypeWidth(scalar_of(rty));
  if (from == to) return a[0];
  return from < to ? (src_i1(op) ? LLVMBuildZExt(L->b, a[0], rty, "") : LLVMBuildSExt(L->b, a[0], rty, ""))
                   : LLVMBuildTrunc(L->b, a[0], rty, "");
}

/* ---- memory ---- */
static LLVMValueRef address(lw *L, kl_op *op, int bi, LLVMTypeRef *elem_ty) {
  kl_value *buf = op->opnds[bi].value;
  const kl_type *bt = buf->type;
  LLVMValueRef base = vget(L, buf);
  LLVMValueRef idx = NULL;
  for (int i = 0; i < bt->rank; i++) {
    LLVMValueRef v = vget(L, op->opnds[bi + 1 + i].value);
    if (bt->strides[i] == 0) continue;
    if (bt->strides[i] != 1) v = LLVMBuildMul(L->b, v, i64c(L, bt->strides[i]), "");
    idx = idx ? LLVMBuildAdd(L->b, idx, v, "") : v;
  }
  if (!idx) idx = i64c(L, 0);
  *elem_ty = scalar_type(L, bt->elem);
  return LLVMBuildGEP2(L->b, *elem_ty, base, &idx, 1, "");
}
/* Alignment of a load/store of type t. GPU buffers are fresh device allocations (or
 * LDS/private arrays aligned to 16) and the vectorization analysis only makes vectors
 * whose first element index is a multiple of the width, so a vector access is aligned to
 * its size (up to 16 bytes). Host buffers may be user tensors at any element offset:
 * element alignment only. */
static unsigned access_align(lw *L, const kl_type *t) {
  unsigned eb = (unsigned)((kl_type_bits(elem_of(t)) + 7) / 8);
  if (!eb) eb = 1;
  if (t->kind != KL_TY_VECTOR || L->t->arch == KL_ARCH_HOST) return eb;
  unsigned a = eb * (unsigned)t->shape[0];
  while (a & (a - 1)) a &= a - 1; /* largest power of two <= the size */
  return a > 16 ? 16 : a;
}

static LLVMValueRef entry_alloca(lw *L, LLVMTypeRef ty, unsigned align) {
  LLVMBuilderRef b = LLVMCreateBuilderInContext(L->c);
  LLVMValueRef first = LLVMGetFirstInstruction(L->entry);
  if (first)
    LLVMPositionBuilderBefore(b, first);
  else
    LLVMPositionBuilderAtEnd(b, L->entry);
  LLVMValueRef a = LLVMBuildAlloca(b, ty, "");
  LLVMSetAlignment(a, align);
  LLVMDisposeBuilder(b);
  return a;
}
static LLVMValueRef lower_alloc(lw *L, kl_op *op) {
  const kl_type *t = op->results[0].type;
  if (t->kind != KL_TY_BUFFER || t->space == KL_SPACE_GLOBAL) {
    fail(L, op, "%s: global intermediates belong to the host plan, not to a kernel", kl_type_str(t));
    return NULL;
  }
  /* the allocation spans the largest address the strides reach */
  int64_t span = 1;
  for (int i = 0; i < t->rank; i++)
    if (t->shape[i] > 0) span += (t->shape[i] - 1) * t->strides[i];
  LLVMTypeRef at = LLVMArrayType2(scalar_type(L, t->elem), (uint64_t)span);
  if (t->space == KL_SPACE_LDS && L->dyn_lds) { /* an offset into `extern .shared .align 16 .b8 __kiln_dyn_lds[]` */
    LLVMTypeRef i8 = LLVMInt8TypeInContext(L->c), dt = LLVMArrayType2(i8, 0);
    LLVMValueRef g = LLVMGetNamedGlobal(L->m, "__kiln_dyn_lds");
    if (!g) {
      g = LLVMAddGlobalInAddressSpace(L->m, dt, "__kiln_dyn_lds", 3);
      LLVMSetLinkage(g, LLVMExternalLinkage);
      LLVMSetAlignment(g, L->lds_align);
    }
    int64_t al = L->lds_align, bytes = span * ((kl_type_bits(t->elem) + 7) / 8), off = (L->dyn_off + al - 1) / al * al;
    if (off + bytes > L->dyn_total) {
      fail(L, op, "%s",
           "the LDS buffers need more dynamic shared memory than the kernel's lds_bytes (their alignment)");
      return NULL;
    }
    L->dyn_off = off + bytes;
    LLVMValueRef idx = i64c(L, off);
    return LLVMBuildGEP2(L->b, i8, g, &idx, 1, "");
  }
  if (t->space == KL_SPACE_LDS && L->t->arch != KL_ARCH_HOST) {
    char name[32];
    snprintf(name, sizeof name, "__kiln_lds%d", L->nlds++);
    LLVMValueRef g = LLVMAddGlobalInAddressSpace(L->m, at, name, 3);
    LLVMSetInitializer(g, LLVMGetUndef(at));
    LLVMSetLinkage(g, LLVMInternalLinkage);
    LLVMSetAlignment(g, (unsigned)L->lds_align); /* TMA destinations: kl_tma_lds_align */
    return g;
  }
  /* AMDGPU allocas land in address space 5 because the module's data layout says so.
   * host: LDS tiles and register tiles are stack arrays; cache-line alignment keeps the
   * micro-kernels' vector loads and stores from splitting lines */
  return entry_alloca(L, at, L->t->arch == KL_ARCH_HOST ? 64 : 16);
}

static LLVMValueRef id_value(lw *L, kl_op *op, bool group) {
  LLVMTypeRef i32 = LLVMInt32TypeInContext(L->c), i64 = LLVMInt64TypeInContext(L->c);
  switch (L->t->arch) {
    case KL_ARCH_HOST:
      if (!group) {
        if (L->block_size != 1) {
          fail(L, op, "host kernels run one thread per workgroup (block_size %s != 1)", "> 1");
          return NULL;
        }
        return i64c(L, 0);
      }
      return LLVMBuildLoad2(L->b, i64, L->host_block_id, "bid");
    case KL_ARCH_NVPTX: {
      LLVMValueRef v = call_intr(L, group ? "llvm.nvvm.read.ptx.sreg.ctaid.x" : "llvm.nvvm.read.ptx.sreg.tid.x", NULL,
                                 0, NULL, 0);
      (void)i32;
      return LLVMBuildZExt(L->b, v, i64, "");
    }
    case KL_ARCH_AMDGPU: {
      LLVMValueRef v = call_intr(L, group ? "llvm.amdgcn.workgroup.id.x" : "llvm.amdgcn.workitem.id.x", NULL, 0, NULL,
                                 0);
      return LLVMBuildZExt(L->b, v, i64, "");
    }
  }
  return NULL;
}
/* ---- structured control flow ---- */
static bool lower_block_ops(lw *L, kl_block *blk);
static kl_op *region_yield(kl_region *r) {
  kl_block *b = r->first;
  return (b && b->last && !strcmp(b->last->name, "scf.yield")) ? b->last : NULL;
}

static bool lower_for(lw *L, kl_op *op) {
  LLVMValueRef lb = vget(L, op->opnds[0].value), ub = vget(L, op->opnds[1].value), step = vget(L, op->opnds[2].value);
  int niter = op->nopnds - 3;
  kl_block *body = op->regions[0].first;
  LLVMBasicBlockRef pre = LLVMGetInsertBlock(L->b);
  LLVMBasicBlockRef head = LLVMAppendBasicBlockInContext(L->c, L->fn, "for.head");
  LLVMBasicBlockRef bb = LLVMAppendBasicBlockInContext(L->c, L->fn, "for.body");
  LLVMBasicBlockRef exit = LLVMAppendBasicBlockInContext(L->c, L->fn, "for.exit");
  LLVMBuildBr(L->b, head);
  LLVMPositionBuilderAtEnd(L->b, head);
  LLVMValueRef iv = LLVMBuildPhi(L->b, LLVMInt64TypeInContext(L->c), "iv");
  LLVMValueRef *phis = kl_xmalloc((niter + 1) * sizeof *phis);
  for (int i = 0; i < niter; i++) {
    phis[i] = LLVMBuildPhi(L->b, ll_type(L, op->results[i].type), "");
    vset(L, body->args[1 + i], phis[i]);
    vset(L, &op->results[i], phis[i]);
  }
  vset(L, body->args[0], iv);
  LLVMBuildCondBr(L->b, LLVMBuildICmp(L->b, LLVMIntSLT, iv, ub, ""), bb, exit);
  LLVMPositionBuilderAtEnd(L->b, bb);
  if (!lower_block_ops(L, body)) {
    free(phis);
    return false;
  }
  kl_op *y = region_yield(&op->regions[0]);
  LLVMValueRef next = LLVMBuildAdd(L->b, iv, step, "");
  LLVMBasicBlockRef latch = LLVMGetInsertBlock(L->b);
  LLVMValueRef back = LLVMBuildBr(L->b, head);
  if (kl_op_attr(op, "no_hoist")) { /* llvm.loop !{self, !{"llvm.licm.disable"}}: nothing hoisted out of it */
    LLVMMetadataRef tmp = LLVMTemporaryMDNode(L->c, NULL, 0);
    LLVMMetadataRef dis = LLVMMDStringInContext2(L->c, "llvm.licm.disable", 17);
    LLVMMetadataRef ops[2] = { tmp, LLVMMDNodeInContext2(L->c, &dis, 1) };
    LLVMMetadataRef self = LLVMMDNodeInContext2(L->c, ops, 2);
    LLVMMetadataReplaceAllUsesWith(tmp, self);
    LLVMSetMetadata(back, LLVMGetMDKindIDInContext(L->c, "llvm.loop", 9), LLVMMetadataAsValue(L->c, self));
  }
  LLVMAddIncoming(iv, &lb, &pre, 1);
  LLVMAddIncoming(iv, &next, &latch, 1);
  for (int i = 0; i < niter; i++) {
    LLVMValueRef init = vget(L, op->opnds[3 + i].value), nv = y ? vget(L, y->opnds[i].value) : NULL;
    if (!nv) {
      free(phis);
      return fail(L, op, "%s", "body must end with scf.yield of the iteration values");
    }
    LLVMAddIncoming(phis[i], &init, &pre, 1);
    LLVMAddIncoming(phis[i], &nv, &latch, 1);
  }
  free(phis);
  LLVMPositionBuilderAtEnd(L->b, exit);
  return true;
}
static bool lower_if(lw *L, kl_op *op) {
  LLVMValueRef cond = vget(L, op->opnds[0].value);
  LLVMBasicBlockRef tb = LLVMAppendBasicBlockInContext(L->c, L->fn, "if.then");
  LLVMBasicBlockRef eb = LLVMAppendBasicBlockInContext(L->c, L->fn, "if.else");
  LLVMBasicBlockRef mb = LLVMAppendBasicBlockInContext(L->c, L->fn, "if.end");
  LLVMBuildCondBr(L->b, cond, tb, eb);
  LLVMValueRef vals[2][16];
  LLVMBasicBlockRef from[2];
  if (op->nresults > 16) return fail(L, op, "%s", "at most 16 results");
  for (int r = 0; r < 2; r++) {
    LLVMPositionBuilderAtEnd(L->b, r ? eb : tb);
    if (op->regions[r].first && !lower_block_ops(L, op->regions[r].first)) return false;
    kl_op *y = region_yield(&op->regions[r]);
    for (int i = 0; i < op->nresults; i++) {
      if (!y || y->nopnds != op->nresults) return fail(L, op, "%s", "both regions must yield the results");
      vals[r][i] = vget(L, y->opnds[i].value);
    }
    from[r] = LLVMGetInsertBlock(L->b);
    LLVMBuildBr(L->b, mb);
  }
  LLVMPositionBuilderAtEnd(L->b, mb);
  for (int i = 0; i < op->nresults; i++) {
    LLVMValueRef phi = LLVMBuildPhi(L->b, ll_type(L, op->results[i].type), "");
    LLVMValueRef in[2] = { vals[0][i], vals[1][i] };
    LLVMAddIncoming(phi, in, from, 2);
    vset(L, &op->results[i], phi);
  }
  return true;
}

/* ---- op hooks (KL_HOOK_LOWER_LLVM): one per loop-level op, attached to the op
 * definitions by kl_lower_llvm_register; lower_op dispatches through op->def ---- */

/* The lowered operands (at most 8), each of which must exist. */
static bool operands(lw *L, kl_op *op, LLVMValueRef *args) {
  for (int i = 0; i < op->nopnds && i < 8; i++) {
    args[i] = vget(L, op->opnds[i].value);
    if (!args[i]) return fail(L, op, "operand %s has no lowered value", "");
  }
  return true;
}
static bool value_op(lw *L, kl_op *op, value_fn build) {
  LLVMValueRef args[8];
  if (!operands(L, op, args)) return false;
  /* fp8 values are codes (i8): only converts and selects take them (graph ops on fp8
   * compute in f32: passes/fp8_widen.c) */
  if (build != v_extf && build != v_truncf && build != v_select) {
    bool f8 = op->nresults == 1 && kl_type_is_fp8(op->results[0].type);
    for (int i = 0; i < op->nopnds; i++) f8 = f8 || kl_type_is_fp8(op->opnds[i].value->type);
    if (f8) return fail(L, op, "%s", "fp8 values only convert (to f32) and select; compute on them in f32");
  }
  if (op->nopnds > 8) return fail(L, op, "%s", "too many operands");
  if (op->nresults != 1) return fail(L, op, "%s", "not a loop-level op (run rock-lower-loops first)");
  LLVMValueRef r = build(L, op, args);
  if (!r) /* a builder that failed said why (one error per op) */
    return L->failed ? false : fail(L, op, "%s", "not a loop-level op (run rock-lower-loops first)");
  vset(L, &op->results[0], r);
  return true;
}
#define VALUE_HOOK(v) \
  static bool h_##v(lw *L, kl_op *op) { return value_op(L, op, v_##v); }
// clang-format off
VALUE_HOOK(addf) VALUE_HOOK(subf) VALUE_HOOK(mulf) VALUE_HOOK(divf) VALUE_HOOK(remf) VALUE_HOOK(maxf) VALUE_HOOK(minf)
VALUE_HOOK(negf) VALUE_HOOK(powf) VALUE_HOOK(ipowi) VALUE_HOOK(exp) VALUE_HOOK(log) VALUE_HOOK(sqrt) VALUE_HOOK(absf)
VALUE_HOOK(rsqrt) VALUE_HOOK(tanh) VALUE_HOOK(roundeven) VALUE_HOOK(floor) VALUE_HOOK(ceil) VALUE_HOOK(erf) VALUE_HOOK(addi) VALUE_HOOK(subi) VALUE_HOOK(muli) VALUE_HOOK(divsi) VALUE_HOOK(remsi)
VALUE_HOOK(andi) VALUE_HOOK(ori) VALUE_HOOK(xori) VALUE_HOOK(maxsi) VALUE_HOOK(minsi) VALUE_HOOK(select) VALUE_HOOK(cmpi)
VALUE_HOOK(cmpf) VALUE_HOOK(sitofp) VALUE_HOOK(fptosi) VALUE_HOOK(extf) VALUE_HOOK(truncf) VALUE_HOOK(extsi)
VALUE_HOOK(trunci) VALUE_HOOK(index_cast)
// clang-format on
#undef VALUE_HOOK

                            static bool h_nothing(lw *L, kl_op *op) {
  return true;
} /* scf.yield, rock.yield: read by the parent */
static bool h_return(lw *L, kl_op *op) {
  LLVMBuildRetVoid(L->b);
  return true;
}
static bool h_constant(lw *L, kl_op *op) {
  vset(L, &op->results[0], constant(L, op));
  return true;
}

/* memory: rock.load / rock.store address their element themselves (address()) */
static bool h_load(lw *L, kl_op *op) {
  LLVMTypeRef et;
  LLVMValueRef p = address(L, op, 0, &et);
  const kl_type *rt = op->results[0].type;
  /* i1 buffers hold a byte per element; LLVM's <N x i1> in memory is bit-packed */
  bool bytes = rt->kind == KL_TY_VECTOR && rt->elem->kind == KL_TY_I1;
  LLVMTypeRef lt = bytes ? LLVMVectorType(LLVMInt8TypeInContext(L->c), (unsigned)rt->shape[0]) : ll_type(L, rt);
  LLVMValueRef v = LLVMBuildLoad2(L->b, lt, p, "");
  LLVMSetAlignment(v, access_align(L, rt));
  vset(L, &op->results[0], bytes ? LLVMBuildTrunc(L->b, v, ll_type(L, rt), "") : v);
  return true;
}
static bool h_store(lw *L, kl_op *op) {
  LLVMTypeRef et;
  LLVMValueRef p = address(L, op, 1, &et), x = vget(L, op->opnds[0].value);
  const kl_type *vt = op->opnds[0].value->type;
  if (vt->kind == KL_TY_VECTOR && vt->elem->kind == KL_TY_I1) /* one byte per element, as rock.load */
    x = LLVMBuildZExt(L->b, x, LLVMVectorType(LLVMInt8TypeInContext(L->c), (unsigned)vt->shape[0]), "");
  LLVMValueRef s = LLVMBuildStore(L->b, x, p);
  LLVMSetAlignment(s, access_align(L, vt));
  return true;
}
/* host copies (passes/lower_loops_host.c): a read hint into L2; nothing on GPUs */
static bool h_prefetch(lw *L, kl_op *op) {
  LLVMValueRef args[8];
  if (!operands(L, op, args)) return false;
  if (L->t->arch != KL_ARCH_HOST) return true;
  LLVMTypeRef et;
  LLVMValueRef pa[4] = { address(L, op, 0, &et), LLVMConstInt(LLVMInt32TypeInContext(L->c), 0, 0),
                         LLVMConstInt(LLVMInt32TypeInContext(L->c), 2, 0),
                         LLVMConstInt(LLVMInt32TypeInContext(L->c), 1, 0) };
  LLVMTypeRef pt = LLVMTypeOf(pa[0]);
  call_intr(L, "llvm.prefetch", &pt, 1, pa, 4);
  return true;
}
static bool h_alloc(lw *L, kl_op *op) {
  LLVMValueRef a = lower_alloc(L, op);
  if (!a) return false;
  vset(L, &op->results[0], a);
  return true;
}
static bool id_op(lw *L, kl_op *op, bool group) {
  LLVMValueRef v = id_value(L, op, group);
  if (!v) return false;
  vset(L, &op->results[0], v);
  return true;
}
static bool h_workgroup_id(lw *L, kl_op *op) { return id_op(L, op, true); }
static bool h_workitem_id(lw *L, kl_op *op) { return id_op(L, op, false); }
/* rock.workgroup_count: grid x (NVPTX nctaid.x, the host's grid[0]; AMDGPU: not lowered) */
static bool h_workgroup_count(lw *L, kl_op *op) {
  LLVMTypeRef i64 = LLVMInt64TypeInContext(L->c);
  LLVMValueRef v;
  if (L->t->arch == KL_ARCH_HOST)
    v = LLVMBuildLoad2(L->b, i64, L->host_grid, "grid");
  else if (L->t->arch == KL_ARCH_NVPTX)
    v = LLVMBuildZExt(L->b, call_intr(L, "llvm.nvvm.read.ptx.sreg.nctaid.x", NULL, 0, NULL, 0), i64, "");
  else
    return fail(L, op, "%s", "rock.workgroup_count is lowered for NVPTX and the host only");
  vset(L, &op->results[0], v);
  return true;
}
/* rock.mma (passes/rock_accel.h): one matrix instruction, lowered by passes/lower_accel.c */
static bool h_mma(lw *L, kl_op *op) {
  LLVMValueRef args[8];
  if (!operands(L, op, args)) return false;
  char msg[512];
  LLVMValueRef r = kl_lower_accel_mma(L->m, L->b, L->t, op, args[0], args[1], args[2], msg, sizeof msg);
  if (!r) return fail(L, op, "%s", msg);
  vset(L, &op->results[0], r);
  return true;
}

/* rock.ldmatrix (core/dialect_rock.c): this lane's row address, lowered by passes/lower_accel.c */
static bool h_ldmatrix(lw *L, kl_op *op) {
  LLVMValueRef args[8];
  if (op->nopnds <= 8 && !operands(L, op, args)) return false;
  LLVMTypeRef et;
  LLVMValueRef p = address(L, op, 0, &et);
  char msg[512];
  LLVMValueRef r = kl_lower_accel_ldmatrix(L->m, L->b, L->t, op, p, ll_type(L, op->results[0].type), msg, sizeof msg);
  if (!r) return fail(L, op, "%s", msg);
  vset(L, &op->results[0], r);
  return true;
}

/* rock.stmatrix (core/dialect_rock.c): this lane's row address and fragment, lowered by passes/lower_accel.c */
static bool h_stmatrix(lw *L, kl_op *op) {
  LLVMValueRef args[8];
  if (op->nopnds <= 8 && !operands(L, op, args)) return false;
  LLVMTypeRef et;
  LLVMValueRef p = address(L, op, 1, &et);
  char msg[512];
  if (!kl_lower_accel_stmatrix(L->m, L->b, L->t, op, p, vget(L, op->opnds[0].value), msg, sizeof msg))
    return fail(L, op, "%s", msg);
  return true;
}

/* ---- vector ops of the host micro-kernels and copies (passes/lower_loops_host.c) ----
 *   vector.broadcast(s) -> vector<N x T>; math.fma(a, b, c) = a*b + c as llvm.fmuladd
 *   (fused where the target has FMA; strict_fp: fmul then fadd); vector.shuffle(x, y)
 *   {mask} = shufflevector. */
static bool h_vector_broadcast(lw *L, kl_op *op) {
  LLVMValueRef args[8];
  if (!operands(L, op, args)) return false;
  const kl_type *rt = op->results[0].type;
  if (op->nopnds != 1 || rt->kind != KL_TY_VECTOR)
    return fail(L, op, "%s", "expects one scalar operand and a vector result");
  LLVMTypeRef vt = ll_type(L, rt), i32 = LLVMInt32TypeInContext(L->c);
  LLVMValueRef v = LLVMBuildInsertElement(L->b, LLVMGetPoison(vt), args[0], LLVMConstInt(i32, 0, 0), "");
  vset(L, &op->results[0],
       LLVMBuildShuffleVector(L->b, v, LLVMGetPoison(vt), LLVMConstNull(LLVMVectorType(i32, (unsigned)rt->shape[0])),
                              ""));
  return true;
}
static bool h_fma(lw *L, kl_op *op) {
  LLVMValueRef args[8];
  if (!operands(L, op, args)) return false;
  if (op->nopnds != 3 || !kl_type_is_float(elem_of(op->results[0].type)) || is_half(op->results[0].type))
    return fail(L, op, "%s", "expects three f32/f64 (vector) operands");
  LLVMTypeRef t = LLVMTypeOf(args[2]);
  if (!L->fmf) /* strict_fp: rounded after the multiply and after the add */
    vset(L, &op->results[0], LLVMBuildFAdd(L->b, LLVMBuildFMul(L->b, args[0], args[1], ""), args[2], ""));
  else
    vset(L, &op->results[0], call_intr(L, "llvm.fmuladd", &t, 1, args, 3));
  return true;
}
static bool h_vector_shuffle(lw *L, kl_op *op) {
  LLVMValueRef args[8];
  if (!operands(L, op, args)) return false;
  int64_t mask[256];
  int nm = kl_op_attr_i64s(op, "mask", mask, 256);
  const kl_type *rt = op->results[0].type;
  if (op->nopnds != 2 || nm < 1 || rt->kind != KL_TY_VECTOR || rt->shape[0] != nm)
    return fail(L, op, "%s", "expects two vector operands and a mask attribute of the result's length");
  LLVMValueRef m[256];
  for (int i = 0; i < nm; i++) m[i] = LLVMConstInt(LLVMInt32TypeInContext(L->c), (unsigned long long)mask[i], 0);
  vset(L, &op->results[0], LLVMBuildShuffleVector(L->b, args[0], args[1], LLVMConstVector(m, (unsigned)nm), ""));
  return true;
}

static const struct {
  const char *op;
  kl_lower_llvm_fn fn;
} builtin_hooks[] = {
  { "func.return", h_return },
  { "scf.yield", h_nothing },
  { "rock.yield", h_nothing },
  { "scf.for", lower_for },
  { "scf.if", lower_if },
  { "arith.constant", h_constant },
  { "rock.load", h_load },
  { "rock.store", h_store },
  { "rock.atomic_rmw", kl__lower_atomic_rmw },
  { "rock.prefetch", h_prefetch },
  { "rock.alloc", h_alloc },
  { "rock.workgroup_id", h_workgroup_id },
  { "rock.workgroup_count", h_workgroup_count },
  { "rock.workitem_id", h_workitem_id },
  { "rock.barrier", kl__lower_barrier },
  { "rock.async_copy", kl__lower_async_copy },
  { "rock.async_commit", kl__lower_async_commit },
  { "rock.mbarrier", kl__lower_mbarrier }, /* passes/lower_tma.h */
  { "rock.tma_load", kl__lower_tma_load },
  { "rock.setmaxnreg", kl__lower_setmaxnreg },
  { "rock.async_wait", kl__lower_async_wait },
  { "rock.lane_shuffle", kl__lower_lane_shuffle },
  { "rock.mma", h_mma },
  { "rock.ldmatrix", h_ldmatrix },
  { "rock.stmatrix", h_stmatrix },
  { "rock.wgmma_desc", kl__lower_wgmma_desc },
  { "rock.wgmma", kl__lower_wgmma },
  { "rock.wgmma_sync", kl__lower_wgmma_sync },
  { "vector.broadcast", h_vector_broadcast },
  { "vector.shuffle", h_vector_shuffle },
  { "math.fma", h_fma },
  { "arith.addf", h_addf },
  { "arith.subf", h_subf },
  { "arith.mulf", h_mulf },
  { "arith.divf", h_divf },
  { "arith.remf", h_remf },
  { "arith.maxf", h_maxf },
  { "arith.minf", h_minf },
  { "arith.negf", h_negf },
  { "math.powf", h_powf },
  { "math.ipowi", h_ipowi },
  { "math.exp", h_exp },
  { "math.log", h_log },
  { "math.sqrt", h_sqrt },
  { "math.absf", h_absf },
  { "math.rsqrt", h_rsqrt },
  { "math.tanh", h_tanh },
  { "math.roundeven", h_roundeven },
  { "math.floor", h_floor },
  { "math.ceil", h_ceil },
  { "math.erf", h_erf },
  { "arith.addi", h_addi },
  { "arith.subi", h_subi },
  { "arith.muli", h_muli },
  { "arith.divsi", h_divsi },
  { "arith.remsi", h_remsi },
  { "arith.andi", h_andi },
  { "arith.ori", h_ori },
  { "arith.xori", h_xori },
  { "arith.maxsi", h_maxsi },
  { "arith.minsi", h_minsi },
  { "arith.select", h_select },
  { "arith.cmpi", h_cmpi },
  { "arith.cmpf", h_cmpf },
  { "arith.sitofp", h_sitofp },
  { "arith.fptosi", h_fptosi },
  { "arith.extf", h_extf },
  { "arith.truncf", h_truncf },
  { "arith.extsi", h_extsi },
  { "arith.trunci", h_trunci },
  { "arith.index_cast", h_index_cast },
};

kl_status kl_lower_llvm_attach(kl_ctx *ctx, const char *name, kl_lower_llvm_fn fn) {
  return kl_opdef_attach(ctx, KL_HOOK_LOWER_LLVM, name, (kl_hook_fn)fn);
}
kl_lower_llvm_fn kl_lower_llvm_hook(const kl_op *op) { return (kl_lower_llvm_fn)kl_op_hook(op, KL_HOOK_LOWER_LLVM); }
void kl_lower_llvm_register(kl_ctx *ctx) {
  static const char key[] = "lower_to_llvm.hooks";
  if (kl_ctx_get_user(ctx, key)) return;
  kl_ctx_set_user(ctx, key, (void *)key);
  for (size_t i = 0; i < sizeof builtin_hooks / sizeof *builtin_hooks; i++) {
    const kl_opdef *d = kl_lookup_op(ctx, builtin_hooks[i].op);
    if (d && !kl_opdef_hook(ctx, d, KL_HOOK_LOWER_LLVM))
      kl_lower_llvm_attach(ctx, builtin_hooks[i].op, builtin_hooks[i].fn);
  }
}

static bool lower_op(lw *L, kl_op *op) {
  /* an unregistered op verifies generically but has no meaning to lower (and no arity a
   * hook may rely on) */
  if (!op->def)
    return fail(L, op, "%s", "not a registered op: only loop-level ops can be lowered (run rock-lower-loops first)");
  kl_lower_llvm_fn hook = kl_lower_llvm_hook(op);
  if (!hook) return fail(L, op, "%s", "not a loop-level op (run rock-lower-loops first)");
  if (hook(L, op)) return true;
  if (!L->failed) fail(L, op, "%s", "its lowering hook failed without a message");
  return false;
}
static bool lower_block_ops(lw *L, kl_block *blk) {
  for (kl_op *o = blk->first; o; o = o->next)
    if (!lower_op(L, o)) return false;
  return true;
}

/* ---- the interface for hooks (lower_to_llvm.h) ---- */
LLVMBuilderRef kl_llvm_builder(kl_llvm_lowering *L) { return L->b; }
LLVMContextRef kl_llvm_context(kl_llvm_lowering *L) { return L->c; }
LLVMModuleRef kl_llvm_module(kl_llvm_lowering *L) { return L->m; }
const kl_target *kl_llvm_target(kl_llvm_lowering *L) { return L->t; }
LLVMValueRef kl_llvm_value(kl_llvm_lowering *L, kl_value *v) { return vget(L, v); }
void kl_llvm_set_value(kl_llvm_lowering *L, kl_value *v, LLVMValueRef r) { vset(L, v, r); }
LLVMTypeRef kl_llvm_type(kl_llvm_lowering *L, const kl_type *t) { return ll_type(L, t); }
bool kl_llvm_lower_block(kl_llvm_lowering *L, kl_block *b) { return lower_block_ops(L, b); }
bool kl_llvm_fail(kl_llvm_lowering *L, kl_op *op, const char *msg) { return fail(L, op, "%s", msg); }
LLVMValueRef kl_llvm_address(kl_llvm_lowering *L, kl_op *op, int bi, LLVMTypeRef *elem_ty) {
  return address(L, op, bi, elem_ty);
}

static void add_fn_attr(lw *L, LLVMValueRef fn, const char *k, const char *v) {
  LLVMAddAttributeAtIndex(fn, LLVMAttributeFunctionIndex,
                          LLVMCreateStringAttribute(L->c, k, (unsigned)strlen(k), v, (unsigned)strlen(v)));
}
static void add_enum_attr(lw *L, LLVMValueRef fn, unsigned idx, const char *name) {
  unsigned kind = LLVMGetEnumAttributeKindForName(name, strlen(name));
  LLVMAddAttributeAtIndex(fn, idx, LLVMCreateEnumAttribute(L->c, kind, 0));
}

LLVMValueRef kl_llvm_tma_param(kl_llvm_lowering *L, kl_op *op) {
  for (int j = 0; j < L->ntma; j++)
    if (kl_tma_same_map(L->tma[j], op)) return LLVMGetParam(L->fn, (unsigned)(L->nbufargs + j));
  return NULL;
}

/* AMDGPU with VGPRs and AGPRs in one file of 512 per lane (gfx90a, gfx942): the minimum
 * waves per SIMD asked of LLVM ("amdgpu-waves-per-eu"), 2 when the kernel's register
 * estimate (amdgpu_regs, rock-gemm-to-gridwise) and its LDS (lds_bytes: workgroups per CU,
 * their waves over the 4 SIMDs) both allow 2 while its workgroup of fewer than 8 waves
 * would let LLVM take up to 512 registers; else 0 (none). Without it LLVM's scheduler
 * targets the LDS-limited occupancy and the register allocator the workgroup's, so an
 * epilogue whose loads and addresses are all hoisted took 300 VGPRs + 128 AGPRs (the seed
 * conv at v2:128,128,32,128,64,8 on gfx942; 224 with it, no scratch). */
static int min_waves_per_eu(const kl_target *t, kl_op *k, int64_t bs) {
  int64_t regs = 0, lds = 0;
  if (t->arch != KL_ARCH_AMDGPU || t->max_vgprs < 512 || t->wave_size != 64) return 0;
  if (!kl_op_attr_i64(k, "amdgpu_regs", &regs) || regs <= 0) return 0;
  kl_op_attr_i64(k, "lds_bytes", &lds);
  int64_t waves = (bs + 63) / 64;
  if (waves < 1 || waves >= 8) return 0;
  if ((regs + 7) / 8 * 8 > 256) return 0;
  if (lds > 0) {
    int64_t wgs = t->lds_bytes / lds;
    if ((wgs * waves + 3) / 4 < 2) return 0;
  }
  return 2;
}

static bool lower_kernel(lw *L, kl_op *k) {
  const char *name = kl_op_attr_string(k, "sym_name");
  kl_block *body = k->regions[0].first;
  int64_t bs = 1;
  kl_op_attr_i64(k, "block_size", &bs);
  L->block_size = bs;
  L->dyn_lds = false, L->dyn_off = 0, L->dyn_total = 0, L->ntma = 0, L->nbufargs = body->nargs, L->lds_align = 16;
  if (L->t->arch == KL_ARCH_NVPTX) { /* the plan's lds_bytes: the sum of the LDS allocations */
    L->ntma = kl_tma_kernel_maps(k, L->tma, 8);
    if (L->ntma < 0 || L->ntma > 8)
      return fail(L, k, "%s", "TMA loads of more than 8 tensor maps, or of a source that is not a kernel argument");
    /* TMA destinations at kl_tma_lds_align (128 bytes, 1024 for 128-byte swizzled tiles) */
    int64_t tal = kl_tma_lds_align(k);
    if (tal > L->lds_align) L->lds_align = tal;
    int n;
    kl_op **ops = kl_collect_ops(k, &n);
    for (int i = 0; i < n; i++) {
      const kl_type *t = ops[i]->nresults ? ops[i]->results[0].type : NULL;
      if (!strcmp(ops[i]->name, "rock.alloc") && t && t->kind == KL_TY_BUFFER && t->space == KL_SPACE_LDS) {
        L->dyn_total = (L->dyn_total + L->lds_align - 1) / L->lds_align * L->lds_align;
        L->dyn_total += kl_type_numel(t) * ((kl_type_bits(t->elem) + 7) / 8);
      }
    }
    free(ops);
    L->dyn_lds = L->dyn_total > KL_NVPTX_STATIC_LDS_MAX;
    /* the launch passes kl_tma_lds_bytes (driver/plan.c): buffers placed past it would be
     * out of the block's shared memory (a fault on the device, not an error here) */
    int64_t launch = kl_tma_lds_bytes(k);
    if (L->dyn_lds && L->dyn_total > launch) {
      char msg[200];
      snprintf(msg, sizeof msg,
               "the LDS buffers need %lld bytes of dynamic shared memory at their %lld-byte alignment, the launch "
               "passes %lld",
               (long long)L->dyn_total, (long long)L->lds_align, (long long)launch);
      return fail(L, k, "%s", msg);
    }
  }
  const kl_attr *strict = kl_op_attr(k, "strict_fp");
  L->fmf = strict && (strict->kind == KL_AT_UNIT || (strict->kind == KL_AT_BOOL && strict->i))
      ? LLVMFastMathNone
      : LLVMFastMathAllowContract;
  LLVMTypeRef ptr0 = LLVMPointerTypeInContext(L->c, 0);
  LLVMTypeRef voidt = LLVMVoidTypeInContext(L->c);
  if (L->t->arch == KL_ARCH_HOST) {
    LLVMTypeRef ps[3] = { ptr0, ptr0, ptr0 };
    L->fn = LLVMAddFunction(L->m, name, LLVMFunctionType(voidt, ps, 3, 0));
  } else {
    LLVMTypeRef *ps = kl_xmalloc((body->nargs + L->ntma + 1) * sizeof *ps);
    for (int i = 0; i < body->nargs; i++) ps[i] = ll_type(L, body->args[i]->type);
    for (int j = 0; j < L->ntma; j++) ps[body->nargs + j] = ptr0; /* tensor maps (passes/lower_tma.h) */
    L->fn = LLVMAddFunction(L->m, name, LLVMFunctionType(voidt, ps, (unsigned)(body->nargs + L->ntma), 0));
    free(ps);
    for (int i = 0; i < body->nargs; i++) add_enum_attr(L, L->fn, (unsigned)i + 1, "noalias");
    for (int j = 0; j < L->ntma; j++) { /* byval [128 x i8] align 64, grid_constant */
      unsigned idx = (unsigned)(body->nargs + j + 1);
      LLVMTypeRef mt = LLVMArrayType2(LLVMInt8TypeInContext(L->c), 128);
      LLVMAddAttributeAtIndex(L->fn, idx,
                              LLVMCreateTypeAttribute(L->c, LLVMGetEnumAttributeKindForName("byval", 5), mt));
      LLVMAddAttributeAtIndex(L->fn, idx,
                              LLVMCreateEnumAttribute(L->c, LLVMGetEnumAttributeKindForName("align", 5), 64));
    }
    if (L->ntma) {
      LLVMMetadataRef ix[8];
      for (int j = 0; j < L->ntma; j++)
        ix[j] = LLVMValueAsMetadata(
            LLVMConstInt(LLVMInt32TypeInContext(L->c), (unsigned long long)(body->nargs + j + 1), 0));
      LLVMMetadataRef gc[3] = { LLVMValueAsMetadata(L->fn), LLVMMDStringInContext2(L->c, "grid_constant", 13),
                                LLVMMDNodeInContext2(L->c, ix, (size_t)L->ntma) };
      LLVMAddNamedMetadataOperand(L->m, "nvvm.annotations",
                                  LLVMMetadataAsValue(L->c, LLVMMDNodeInContext2(L->c, gc, 3)));
    }
    char fw[32];
    snprintf(fw, sizeof fw, "1,%lld", (long long)bs);
    if (L->t->arch == KL_ARCH_AMDGPU) {
      LLVMSetFunctionCallConv(L->fn, 91 /* AMDGPU_KERNEL */);
      add_fn_attr(L, L->fn, "amdgpu-flat-work-group-size", fw);
      add_fn_attr(L, L->fn, "uniform-work-group-size", "true");
      int wpe = min_waves_per_eu(L->t, k, bs);
      if (wpe > 1) {
        char w[16];
        snprintf(w, sizeof w, "%d", wpe);
        add_fn_attr(L, L->fn, "amdgpu-waves-per-eu", w);
      }
    } else {
      LLVMSetFunctionCallConv(L->fn, 71 /* PTX_Kernel */);
      LLVMMetadataRef md[3] = { LLVMValueAsMetadata(L->fn), LLVMMDStringInContext2(L->c, "kernel", 6),
                                LLVMValueAsMetadata(LLVMConstInt(LLVMInt32TypeInContext(L->c), 1, 0)) };
      LLVMAddNamedMetadataOperand(L->m, "nvvm.annotations",
                                  LLVMMetadataAsValue(L->c, LLVMMDNodeInContext2(L->c, md, 3)));
      LLVMMetadataRef mx[3] = { LLVMValueAsMetadata(L->fn), LLVMMDStringInContext2(L->c, "maxntidx", 8),
                                LLVMValueAsMetadata(
                                    LLVMConstInt(LLVMInt32TypeInContext(L->c), (unsigned long long)bs, 0)) };
      LLVMAddNamedMetadataOperand(L->m, "nvvm.annotations",
                                  LLVMMetadataAsValue(L->c, LLVMMDNodeInContext2(L->c, mx, 3)));
      int64_t cs = 0; /* thread-block clusters: .reqnctapercluster (codegen/ptx_cluster.h) */
      if (kl_op_attr_i64(k, "cluster_size", &cs) && cs > 1) {
        char cv[24];
        snprintf(cv, sizeof cv, "%lld", (long long)cs);
        add_fn_attr(L, L->fn, "kiln-cluster", cv);
      }
      int64_t mr = 0; /* warp specialization: the registers at launch, .maxnreg (passes/rock_tma.h) */
      if (kl_op_attr_i64(k, "max_regs", &mr) && mr > 0) {
        LLVMMetadataRef mn[3] = { LLVMValueAsMetadata(L->fn), LLVMMDStringInContext2(L->c, "maxnreg", 7),
                                  LLVMValueAsMetadata(
                                      LLVMConstInt(LLVMInt32TypeInContext(L->c), (unsigned long long)mr, 0)) };
        LLVMAddNamedMetadataOperand(L->m, "nvvm.annotations",
                                    LLVMMetadataAsValue(L->c, LLVMMDNodeInContext2(L->c, mn, 3)));
      }
    }
  }
  add_fn_attr(L, L->fn, "kiln-kernel", "true");
  L->entry = LLVMAppendBasicBlockInContext(L->c, L->fn, "entry");
  LLVMBasicBlockRef start = LLVMAppendBasicBlockInContext(L->c, L->fn, "start");
  LLVMPositionBuilderAtEnd(L->b, start);
  if (L->t->arch == KL_ARCH_HOST) {
    LLVMValueRef argv = LLVMGetParam(L->fn, 0);
    L->host_block_id = LLVMGetParam(L->fn, 1);
    L->host_grid = LLVMGetParam(L->fn, 2);
    for (int i = 0; i < body->nargs; i++) {
      LLVMValueRef idx = i64c(L, i);
      LLVMValueRef slotp = LLVMBuildLoad2(L->b, ptr0, LLVMBuildGEP2(L->b, ptr0, argv, &idx, 1, ""), "");
      vset(L, body->args[i], LLVMBuildLoad2(L->b, ptr0, slotp, ""));
    }
  } else {
    for (int i = 0; i < body->nargs; i++) vset(L, body->args[i], LLVMGetParam(L->fn, (unsigned)i));
  }
  bool ok = lower_block_ops(L, body);
  LLVMPositionBuilderAtEnd(L->b, L->entry);
  LLVMBuildBr(L->b, start);
  if (ok && !LLVMGetBasicBlockTerminator(LLVMGetLastBasicBlock(L->fn)))
    return fail(L, k, "%s", "kernel body must end with func.return");
  if (ok && L->t->arch == KL_ARCH_AMDGPU) { /* passes/amdgpu_sched.h */
    kl_amdgpu_pin_prefetch(L->fn);
    if (!kl_amdgpu_barrier_drains(L->t->cpu)) kl_amdgpu_pin_pair_stores(L->fn);
  }
  return ok;
}

static void lw_init(lw *L, kl_ctx *ctx, const kl_target *t, LLVMContextRef llctx, const char *modname) {
  kl_lower_llvm_register(ctx);
  memset(L, 0, sizeof *L);
  L->ctx = ctx;
  L->t = t;
  L->c = llctx;
  L->m = LLVMModuleCreateWithNameInContext(modname, llctx);
  L->b = LLVMCreateBuilderInContext(llctx);
  if (t->arch != KL_ARCH_HOST) LLVMSetTarget(L->m, t->triple);
  if (t->arch == KL_ARCH_AMDGPU)
    LLVMSetDataLayout(L->m,
                      "e-p:64:64-p1:64:64-p2:32:32-p3:32:32-p4:64:64-p5:32:32-p6:32:32-p7:160:256:256:32-p8:128:128-p9:"
                      "192:256:256:32-i64:64-v16:16-v24:32-v32:32-v48:64-v96:128-v192:256-v256:256-v512:512-v1024:1024-"
                      "v2048:2048-n32:64-S32-A5-G1-ni:7:8:9");
  else if (t->arch == KL_ARCH_NVPTX)
    LLVMSetDataLayout(L->m, "e-i64:64-i128:128-v16:16-v32:32-n16:32:64");
}
static kl_status lw_finish(lw *L, LLVMModuleRef *out) {
  LLVMDisposeBuilder(L->b);
  free(L->slots);
  char *msg = NULL;
  if (!L->failed && LLVMVerifyModule(L->m, LLVMReturnStatusAction, &msg)) {
    kl_emit_error(L->ctx, KL_LOC_UNKNOWN, "lower-to-llvm (%s): the LLVM module does not verify: %s", L->t->name, msg);
    L->failed = true;
  }
  if (msg) LLVMDisposeMessage(msg);
  if (L->failed) {
    LLVMDisposeModule(L->m);
    *out = NULL;
    return KL_ERR;
  }
  *out = L->m;
  return KL_OK;
}

kl_status kl_lower_kernel_to_llvm(kl_op *kernel, const kl_target *target, LLVMContextRef llctx, LLVMModuleRef *out) {
  lw L;
  lw_init(&L, kernel->ctx, target, llctx, kl_op_attr_string(kernel, "sym_name"));
  lower_kernel(&L, kernel);
  return lw_finish(&L, out);
}
kl_status kl_lower_to_llvm(kl_op *module, const kl_target *target, LLVMContextRef llctx, LLVMModuleRef *out) {
  lw L;
  lw_init(&L, module->ctx, target, llctx, "kiln");
  for (kl_op *o = kl_module_body(module)->first; o && !L.failed; o = o->next) {
    if (!kl_is_kernel(o)) continue;
    L.nslots = 0;
    if (L.slots) memset(L.slots, 0, L.capslots * sizeof *L.slots);
    lower_kernel(&L, o);
  }
  return lw_finish(&L, out);
}

/* ---- the pass: attaches each kernel's LLVM IR text (attribute llvm_ir) ---- */
static kl_status run_pass(kl_op *module, const kl_pass_options *opts, void *user) {
  const kl_target *t = kl_target_lookup(kl_pass_opt_string(opts, "target"));
  if (!t)
    return kl_emit_error(module->ctx, module->loc, "lower-to-llvm: unknown target '%s'",
                         kl_pass_opt_string(opts, "target"));
  for (kl_op *o = kl_module_body(module)->first; o; o = o->next) {
    if (!kl_is_kernel(o)) continue;
    LLVMContextRef c = LLVMContextCreate();
    LLVMModuleRef m;
    if (kl_lower_kernel_to_llvm(o, t, c, &m) != KL_OK) {
      LLVMContextDispose(c);
      return KL_ERR;
    }
    char *text = LLVMPrintModuleToString(m);
    kl_op_set_attr(o, "llvm_ir", kl_attr_str(module->ctx, text));
    LLVMDisposeMessage(text);
    LLVMDisposeModule(m);
    LLVMContextDispose(c);
  }
  return KL_OK;
}
static const kl_pass_option opts[] = { { "target", KL_OPT_STRING, "host", "target name (kiln.targets())" } };
const kl_pass_info kl_pass_lower_to_llvm = {
  "lower-to-llvm", "loop-level kernels -> LLVM IR (attached as the llvm_ir attribute)", opts, 1, run_pass, NULL
};
/* the pass and the loop-level ops' lowering hooks (kl_register_builtin_passes) */
void kl__register_lower_to_llvm(kl_ctx *ctx) {
  kl_register_pass(ctx, &kl_pass_lower_to_llvm);
  kl_lower_llvm_register(ctx);
}

/* lower_wgmma.c — LLVM lowering of rock.wgmma_desc, rock.wgmma, rock.wgmma_sync (see
 * lower_wgmma.h). */
#include "passes/lower_wgmma.h"
#include "passes/rock_wgmma.h"
#include "core/arena.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static bool need_wgmma(kl_llvm_lowering *L, kl_op *op) {
  const kl_target *t = kl_llvm_target(L);
  if (t && t->arch == KL_ARCH_NVPTX && t->wgmma) return true;
  char msg[160];
  snprintf(msg, sizeof msg, "needs an NVIDIA target with wgmma (sm_90a), not %s", t ? t->name : "?");
  return kl_llvm_fail(L, op, msg);
}

static LLVMValueRef inline_asm(LLVMTypeRef fty, const char *text, const char *cons) {
  return LLVMGetInlineAsm(fty, (char *)text, strlen(text), (char *)cons, strlen(cons), 1, 0, LLVMInlineAsmDialectATT,
                          0);
}

bool kl__lower_wgmma_desc(kl_llvm_lowering *L, kl_op *op) {
  if (!need_wgmma(L, op)) return false;
  for (int i = 1; i < op->nopnds; i++)
    if (!kl_llvm_value(L, op->opnds[i].value)) return kl_llvm_fail(L, op, "an index has no lowered value");
  LLVMBuilderRef b = kl_llvm_builder(L);
  LLVMContextRef c = kl_llvm_context(L);
  LLVMTypeRef i64 = LLVMInt64TypeInContext(c), et;
  int64_t lbo = 0, sbo = 0;
  kl_op_attr_i64(op, "lbo", &lbo);
  kl_op_attr_i64(op, "sbo", &sbo);
  LLVMValueRef p = kl_llvm_address(L, op, 0, &et);
  LLVMValueRef a = LLVMBuildPtrToInt(b, p, i64, "");
  a = LLVMBuildLShr(b, LLVMBuildAnd(b, a, LLVMConstInt(i64, 0x3ffff, 0), ""), LLVMConstInt(i64, 4, 0), "");
  int64_t sw = 0;
  kl_op_attr_i64(op, "swizzle", &sw);
  uint64_t hi = kl_wgmma_desc_encode(0, lbo, sbo) | kl_wgmma_desc_swizzle_bits(sw); /* the constant fields */
  LLVMValueRef dv = LLVMBuildOr(b, a, LLVMConstInt(i64, hi, 0), "wgmma.desc");
  /* + offset / 16 (the start address field; below 2^18 bytes: no carry out of it), in a
   * volatile asm at the use: LLVM keeps one base per tile live across the K loop instead
   * of hoisting every descriptor out of it */
  int64_t off = 0;
  kl_op_attr_i64(op, "offset", &off);
  if (off % 16 || off < 0 || off >= (1 << 18))
    return kl_llvm_fail(L, op, "'offset' must be a multiple of 16 below 2^18");
  char text[64];
  snprintf(text, sizeof text, "add.s64 $0, $1, %lld;", (long long)(off >> 4));
  LLVMTypeRef fty = LLVMFunctionType(i64, &i64, 1, 0);
  dv = LLVMBuildCall2(b, fty, inline_asm(fty, text, "=l,l"), &dv, 1, "wgmma.desc");
  kl_llvm_set_value(L, &op->results[0], dv);
  return true;
}

/* One inline asm for the k chained MMAs: outputs $0..$n-1 (the accumulator, "=f"), then
 * the descriptors $n..$n+2k-1 ("l"), scale-d $n+2k ("r", 1), the accumulator's inputs tied
 * to the outputs; the k instructions read and write the same registers. */
bool kl__lower_wgmma(kl_llvm_lowering *L, kl_op *op) {
  if (!need_wgmma(L, op)) return false;
  const char *instr = kl_op_attr_string(op, "instr");
  const kl_accel_desc *d = kl_wgmma_desc_by_name(instr);
  int nk = (op->nopnds - 1) / 2;
  LLVMValueRef acc = kl_llvm_value(L, op->opnds[op->nopnds - 1].value);
  for (int i = 0; i < 2 * nk; i++)
    if (!kl_llvm_value(L, op->opnds[i].value)) return kl_llvm_fail(L, op, "an operand has no lowered value");
  if (!acc) return kl_llvm_fail(L, op, "an operand has no lowered value");
  int n = (int)LLVMGetVectorSize(LLVMTypeOf(acc));
  if (!d || n != d->n / 2) return kl_llvm_fail(L, op, "'instr' is not a wgmma of this accumulator size");
  LLVMBuilderRef b = kl_llvm_builder(L);
  LLVMContextRef c = kl_llvm_context(L);
  LLVMTypeRef f32 = LLVMFloatTypeInContext(c), i64 = LLVMInt64TypeInContext(c), i32 = LLVMInt32TypeInContext(c);
  /* text */
  int64_t tra = 0, trb = 0;
  kl_op_attr_i64(op, "trans_a", &tra);
  kl_op_attr_i64(op, "trans_b", &trb);
  if ((tra || trb) && d->k != 16) return kl_llvm_fail(L, op, "transposed (MN-major) operands need a 16-bit wgmma");
  /* scale-d p, imm-scale-a 1, imm-scale-b 1; the 16-bit types also take imm-trans-a / -b
   * (0: K-major, 1: MN-major: the attributes trans_a / trans_b), fp8 (k32) has no
   * transposed forms */
  char trans[16] = "";
  if (d->k == 16) snprintf(trans, sizeof trans, ", %d, %d", tra ? 1 : 0, trb ? 1 : 0);
  kl_sb regs = { 0 };
  for (int i = 0; i < n; i++) kl_sb_printf(&regs, "%s$%d", i ? ", " : "", i);
  kl_sb sb = { 0 };
  kl_sb_printf(&sb, "{\n.reg .pred p;\nsetp.ne.b32 p, $%d, 0;\n", n + 2 * nk);
  for (int j = 0; j < nk; j++)
    kl_sb_printf(&sb, "%s {%s}, $%d, $%d, p, 1, 1%s;\n", d->intrinsic, kl_sb_str(&regs), n + 2 * j, n + 2 * j + 1,
                 trans);
  kl_sb_printf(&sb, "}");
  kl_sb cs = { 0 };
  for (int i = 0; i < n; i++) kl_sb_printf(&cs, "=f,");
  for (int j = 0; j < nk; j++) kl_sb_printf(&cs, "l,l,");
  kl_sb_printf(&cs, "r");
  for (int i = 0; i < n; i++) kl_sb_printf(&cs, ",%d", i);
  /* type and call */
  int nin = 2 * nk + 1 + n;
  LLVMTypeRef *outs = kl_xmalloc(sizeof *outs * (size_t)n), *ins = kl_xmalloc(sizeof *ins * (size_t)nin);
  LLVMValueRef *args = kl_xmalloc(sizeof *args * (size_t)nin);
  for (int i = 0; i < n; i++) outs[i] = f32;
  for (int i = 0; i < 2 * nk; i++) {
    ins[i] = i64;
    args[i] = kl_llvm_value(L, op->opnds[i].value);
  }
  ins[2 * nk] = i32;
  args[2 * nk] = LLVMConstInt(i32, 1, 0);
  for (int i = 0; i < n; i++) {
    ins[2 * nk + 1 + i] = f32;
    args[2 * nk + 1 + i] = LLVMBuildExtractElement(b, acc, LLVMConstInt(i32, (unsigned)i, 0), "");
  }
  LLVMTypeRef rt = LLVMStructTypeInContext(c, outs, (unsigned)n, 0);
  LLVMTypeRef fty = LLVMFunctionType(rt, ins, (unsigned)nin, 0);
  LLVMValueRef r = LLVMBuildCall2(b, fty, inline_asm(fty, kl_sb_str(&sb), kl_sb_str(&cs)), args, (unsigned)nin, "");
  LLVMValueRef v = LLVMGetUndef(LLVMTypeOf(acc));
  for (int i = 0; i < n; i++)
    v = LLVMBuildInsertElement(b, v, LLVMBuildExtractValue(b, r, (unsigned)i, ""), LLVMConstInt(i32, (unsigned)i, 0),
                               "");
  kl_llvm_set_value(L, &op->results[0], v);
  kl_sb_free(&regs);
  kl_sb_free(&sb);
  kl_sb_free(&cs);
  free(outs);
  free(ins);
  free(args);
  return true;
}

/* An empty asm volatile with the vector's elements as "+f" registers. */
static LLVMValueRef fence_operand(LLVMBuilderRef b, LLVMContextRef c, LLVMValueRef v) {
  LLVMTypeRef i32 = LLVMInt32TypeInContext(c), et = LLVMGetElementType(LLVMTypeOf(v));
  int n = (int)LLVMGetVectorSize(LLVMTypeOf(v));
  kl_sb cs = { 0 };
  for (int i = 0; i < n; i++) kl_sb_printf(&cs, "%s=f", i ? "," : "");
  for (int i = 0; i < n; i++) kl_sb_printf(&cs, ",%d", i);
  LLVMTypeRef *tys = kl_xmalloc(sizeof *tys * (size_t)n);
  LLVMValueRef *args = kl_xmalloc(sizeof *args * (size_t)n);
  for (int i = 0; i < n; i++) {
    tys[i] = et;
    args[i] = LLVMBuildExtractElement(b, v, LLVMConstInt(i32, (unsigned)i, 0), "");
  }
  LLVMTypeRef rt = LLVMStructTypeInContext(c, tys, (unsigned)n, 0);
  LLVMTypeRef fty = LLVMFunctionType(rt, tys, (unsigned)n, 0);
  LLVMValueRef r = LLVMBuildCall2(b, fty, inline_asm(fty, "", kl_sb_str(&cs)), args, (unsigned)n, "");
  LLVMValueRef out = LLVMGetUndef(LLVMTypeOf(v));
  for (int i = 0; i < n; i++)
    out = LLVMBuildInsertElement(b, out, LLVMBuildExtractValue(b, r, (unsigned)i, ""),
                                 LLVMConstInt(i32, (unsigned)i, 0), "");
  kl_sb_free(&cs);
  free(tys);
  free(args);
  return out;
}

bool kl__lower_wgmma_sync(kl_llvm_lowering *L, kl_op *op) {
  if (!need_wgmma(L, op)) return false;
  const char *step = kl_op_attr_string(op, "step");
  int64_t pending = 0;
  kl_op_attr_i64(op, "pending", &pending);
  char text[96];
  if (!step) return kl_llvm_fail(L, op, "missing 'step'");
  if (!strcmp(step, "fence"))
    snprintf(text, sizeof text, "wgmma.fence.sync.aligned;");
  else if (!strcmp(step, "commit"))
    snprintf(text, sizeof text, "wgmma.commit_group.sync.aligned;");
  else if (!strcmp(step, "wait"))
    snprintf(text, sizeof text, "wgmma.wait_group.sync.aligned %d;", (int)pending);
  else if (!strcmp(step, "proxy_fence"))
    snprintf(text, sizeof text, "fence.proxy.async.shared::cta;");
  else
    return kl_llvm_fail(L, op, "unknown 'step'");
  LLVMBuilderRef b = kl_llvm_builder(L);
  LLVMContextRef c = kl_llvm_context(L);
  LLVMTypeRef fty = LLVMFunctionType(LLVMVoidTypeInContext(c), NULL, 0, 0);
  LLVMBuildCall2(b, fty, inline_asm(fty, text, "~{memory}"), NULL, 0, "");
  for (int i = 0; i < op->nopnds; i++) {
    LLVMValueRef v = kl_llvm_value(L, op->opnds[i].value);
    if (!v) return kl_llvm_fail(L, op, "an operand has no lowered value");
    kl_llvm_set_value(L, &op->results[i], fence_operand(b, c, v));
  }
  return true;
}

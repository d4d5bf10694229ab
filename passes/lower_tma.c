/* lower_tma.c — LLVM lowering of rock.mbarrier and rock.tma_load (see lower_tma.h). */
#include "passes/lower_tma.h"
#include "passes/rock_tma.h"
#include <stdio.h>
#include <string.h>

static bool need_tma(kl_llvm_lowering *L, kl_op *op) {
  const kl_target *t = kl_llvm_target(L);
  if (t && t->arch == KL_ARCH_NVPTX && t->wgmma) return true;
  char msg[200];
  snprintf(msg, sizeof msg, "TMA and mbarriers need an NVIDIA target with wgmma (sm_90a), not %s", t ? t->name : "?");
  return kl_llvm_fail(L, op, msg);
}
static LLVMValueRef asm_call(kl_llvm_lowering *L, const char *text, const char *cons, LLVMValueRef *args, int n) {
  LLVMContextRef c = kl_llvm_context(L);
  LLVMTypeRef tys[16]; /* the widest call: a 5-d TMA load, 8 operands; the 4-d im2col load, 9 */
  if (n > 16) return NULL;
  for (int i = 0; i < n; i++) tys[i] = LLVMTypeOf(args[i]);
  LLVMTypeRef fty = LLVMFunctionType(LLVMVoidTypeInContext(c), tys, (unsigned)n, 0);
  LLVMValueRef f = LLVMGetInlineAsm(fty, (char *)text, strlen(text), (char *)cons, strlen(cons), 1, 0,
                                    LLVMInlineAsmDialectATT, 0);
  return LLVMBuildCall2(kl_llvm_builder(L), fty, f, args, (unsigned)n, "");
}
/* the 32-bit shared-window address of buffer operand bi at its indices */
static LLVMValueRef smem(kl_llvm_lowering *L, kl_op *op, int bi) {
  LLVMTypeRef et;
  LLVMValueRef p = kl_llvm_address(L, op, bi, &et);
  return p ? LLVMBuildPtrToInt(kl_llvm_builder(L), p, LLVMInt32TypeInContext(kl_llvm_context(L)), "") : NULL;
}
static LLVMValueRef i32v(kl_llvm_lowering *L, kl_value *v) {
  LLVMValueRef x = kl_llvm_value(L, v);
  LLVMTypeRef i32 = LLVMInt32TypeInContext(kl_llvm_context(L));
  if (!x) return NULL;
  return LLVMTypeOf(x) == i32 ? x : LLVMBuildTrunc(kl_llvm_builder(L), x, i32, "");
}

bool kl__lower_mbarrier(kl_llvm_lowering *L, kl_op *op) {
  if (!need_tma(L, op)) return false;
  const char *step = kl_op_attr_string(op, "step");
  LLVMValueRef a[2] = { smem(L, op, 0), NULL };
  if (!a[0] || !step) return kl_llvm_fail(L, op, "no address or no 'step'");
  int64_t v = 0;
  char text[320];
  if (!strcmp(step, "init")) {
    kl_op_attr_i64(op, "count", &v);
    snprintf(text, sizeof text, "mbarrier.init.shared::cta.b64 [$0], %lld;\n\tfence.mbarrier_init.release.cluster;",
             (long long)v);
  } else if (!strcmp(step, "arrive_expect_tx")) {
    kl_op_attr_i64(op, "bytes", &v);
    snprintf(text, sizeof text, "mbarrier.arrive.expect_tx.shared::cta.b64 _, [$0], %lld;", (long long)v);
  } else if (!strcmp(step, "arrive")) {
    snprintf(text, sizeof text, "mbarrier.arrive.shared::cta.b64 _, [$0];");
  } else if (!strcmp(step, "arrive_remote")) {
    /* the peer's mbarrier at the same shared offset (mapa); the default semantics (release at CTA
     * scope, as CUTLASS's ClusterBarrier::arrive): the readers being released are wgmma reads
     * (async proxy) retired by wait_group, no generic writes to publish. .release.cluster
     * compiled (ptxas sm_90a) to MEMBAR.ALL.CTA + MEMBAR.ALL.GPU + ERRBAR + CGAERRBAR before the
     * arrive, per warpgroup and K step. */
    a[1] = op->nopnds > 2 ? i32v(L, op->opnds[2].value) : NULL;
    if (!a[1]) return kl_llvm_fail(L, op, "arrive_remote without a CTA rank");
    asm_call(L,
             "{\n\t.reg .b32 ra;\n\tmapa.shared::cluster.u32 ra, $0, $1;\n\t"
             "mbarrier.arrive.shared::cluster.b64 _, [ra];\n\t}",
             "r,r,~{memory}", a, 2);
    return true;
  } else if (!strcmp(step, "inval")) {
    snprintf(text, sizeof text, "mbarrier.inval.shared::cta.b64 [$0];");
  } else if (!strcmp(step, "wait")) {
    a[1] = op->nopnds > 2 ? i32v(L, op->opnds[2].value) : NULL;
    if (!a[1]) return kl_llvm_fail(L, op, "wait without a parity");
    snprintf(text, sizeof text,
             "{\n\t.reg .pred P1;\n\tLAB_WAIT:\n\tmbarrier.try_wait.parity.shared::cta.b64 P1, [$0], $1;\n\t@P1 bra "
             "DONE;\n\tbra LAB_WAIT;\n\tDONE:\n\t}");
    asm_call(L, text, "r,r,~{memory}", a, 2);
    return true;
  } else
    return kl_llvm_fail(L, op, "unknown 'step'");
  asm_call(L, text, "r,~{memory}", a, 1);
  return true;
}

bool kl__lower_tma_load(kl_llvm_lowering *L, kl_op *op) {
  if (!need_tma(L, op)) return false;
  LLVMValueRef map = kl_llvm_tma_param(L, op);
  if (!map) return kl_llvm_fail(L, op, "no tensor-map parameter for this TMA load");
  int64_t dims[8];
  int nd = kl_op_attr_i64s(op, "dims", dims, 8);
  const kl_type *dt = op->opnds[3].value->type;
  bool i2c = kl_op_attr(op, "im2col") != NULL; /* two more operands: the im2col offsets {w, h} */
  if (nd < 1 || nd > 5 || op->nopnds != 4 + dt->rank + nd + (i2c ? 2 : 0)) return kl_llvm_fail(L, op, "bad operands");
  LLVMValueRef a[12];
  int n = 0;
  a[n++] = smem(L, op, 3);
  a[n++] = LLVMBuildPtrToInt(kl_llvm_builder(L), map, LLVMInt64TypeInContext(kl_llvm_context(L)), "");
  for (int i = 0; i < nd; i++) a[n++] = i32v(L, op->opnds[4 + dt->rank + i].value);
  a[n++] = smem(L, op, 1);
  for (int i = 0; i < n; i++)
    if (!a[i]) return kl_llvm_fail(L, op, "an operand has no lowered value");
  char text[768], cons[64];
  if (i2c) {
    /* im2col mode (passes/rock_tma_im2col.h): the offsets are 16-bit operands */
    LLVMTypeRef i16 = LLVMInt16TypeInContext(kl_llvm_context(L));
    for (int i = 0; i < 2; i++) {
      LLVMValueRef x = i32v(L, op->opnds[4 + dt->rank + nd + i].value);
      if (!x) return kl_llvm_fail(L, op, "an im2col offset has no lowered value");
      a[n++] = LLVMBuildTrunc(kl_llvm_builder(L), x, i16, "");
    }
    snprintf(text, sizeof text,
             "cp.async.bulk.tensor.%dd.shared::cluster.global.im2col.mbarrier::complete_tx::bytes [$0], [$1, {$2, $3, "
             "$4, $5}], [$6], {$7, $8};",
             nd);
    asm_call(L, text, "r,l,r,r,r,r,r,h,h,~{memory}", a, n);
    return true;
  }
  int64_t mc = 0, md = 0, box[8];
  kl_op_attr_i64(op, "multicast", &mc);
  kl_op_attr_i64(op, "multicast_dim", &md);
  int c = snprintf(cons, sizeof cons, "r,l");
  for (int i = 0; i < nd; i++) c += snprintf(cons + c, sizeof cons - c, ",r");
  if (mc > 1) {
    /* the cluster's rank r issues box r of the mc (passes/rock_tma.h: cluster): coordinate md
     * + r * box[md], destination + r * the box's bytes, multicast to CTAs 0 .. mc - 1 */
    int64_t eb = kl_type_bits(dt->elem) / 8, bn = 1;
    if (kl_op_attr_i64s(op, "box", box, 8) != nd || md < 0 || md >= nd)
      return kl_llvm_fail(L, op, "multicast: bad box or multicast_dim");
    for (int i = 0; i < nd; i++) bn *= box[i];
    int o = snprintf(text, sizeof text,
                     "{\n\t.reg .u32 kr, kd, kc;\n\t.reg .b16 km;\n\tmov.u32 kr, %%cluster_ctarank;\n\t"
                     "mad.lo.u32 kd, kr, %lld, $0;\n\tmad.lo.u32 kc, kr, %lld, $%d;\n\tmov.b16 km, %lld;\n\t"
                     "cp.async.bulk.tensor.%dd.shared::cluster.global.mbarrier::complete_tx::bytes.multicast::cluster "
                     "[kd], [$1, {",
                     (long long)(bn * eb), (long long)box[md], 2 + (int)md, (long long)((1 << mc) - 1), nd);
    for (int i = 0; i < nd; i++) {
      if (i == md)
        o += snprintf(text + o, sizeof text - o, "%skc", i ? ", " : "");
      else
        o += snprintf(text + o, sizeof text - o, "%s$%d", i ? ", " : "", 2 + i);
    }
    snprintf(text + o, sizeof text - o, "}], [$%d], km;\n\t}", 2 + nd);
  } else {
    int t = snprintf(text, sizeof text,
                     "cp.async.bulk.tensor.%dd.shared::cluster.global.mbarrier::complete_tx::bytes [$0], [$1, {", nd);
    for (int i = 0; i < nd; i++) t += snprintf(text + t, sizeof text - t, "%s$%d", i ? ", " : "", 2 + i);
    snprintf(text + t, sizeof text - t, "}], [$%d];", 2 + nd);
  }
  snprintf(cons + c, sizeof cons - c, ",r,~{memory}");
  asm_call(L, text, cons, a, n);
  return true;
}

bool kl__lower_setmaxnreg(kl_llvm_lowering *L, kl_op *op) {
  if (!need_tma(L, op)) return false;
  const char *a = kl_op_attr_string(op, "action");
  int64_t r = 0;
  kl_op_attr_i64(op, "regs", &r);
  char text[96];
  snprintf(text, sizeof text, "setmaxnreg.%s.sync.aligned.u32 %lld;", a, (long long)r);
  asm_call(L, text, "~{memory}", NULL, 0);
  return true;
}

bool kl__lower_cluster_barrier(kl_llvm_lowering *L, kl_op *op) {
  if (!need_tma(L, op)) return false;
  /* Not .aligned, and a convergent call: LLVM duplicated the barrier after the mbarrier init
   * (thread 0's branch) into both arms of that branch, so the threads of warp 0 reached two
   * different instances; an .aligned barrier.cluster there is undefined (on an H100 the first
   * cluster kernel hung). The plain form lets each thread arrive on its own; convergent keeps
   * LLVM from adding control dependences to it. */
  LLVMValueRef call = asm_call(L, "barrier.cluster.arrive.release;\n\tbarrier.cluster.wait.acquire;", "~{memory}", NULL,
                               0);
  LLVMContextRef c = kl_llvm_context(L);
  LLVMAddCallSiteAttribute(call, LLVMAttributeFunctionIndex,
                           LLVMCreateEnumAttribute(c, LLVMGetEnumAttributeKindForName("convergent", 10), 0));
  return true;
}

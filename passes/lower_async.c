/* lower_async.c — rock.async_copy / async_commit / async_wait to LLVM (lower_async.h). */
#include "passes/lower_async.h"
#include "core/dialect_rock.h"
#include <stdio.h>
#include <string.h>

static LLVMValueRef call(kl_llvm_lowering *L, const char *name, LLVMValueRef *args, int nargs) {
  unsigned id = LLVMLookupIntrinsicID(name, strlen(name));
  if (!id) return NULL;
  LLVMValueRef f = LLVMGetIntrinsicDeclaration(kl_llvm_module(L), id, NULL, 0);
  return LLVMBuildCall2(kl_llvm_builder(L), LLVMIntrinsicGetType(kl_llvm_context(L), id, NULL, 0), f, args, nargs, "");
}

static bool nvptx_async_ok(kl_llvm_lowering *L, kl_op *op) {
  const kl_target *t = kl_llvm_target(L);
  if (t->accel == KL_ACCEL_MMA_SYNC) return true; /* sm_80, sm_90 */
  char msg[160];
  snprintf(msg, sizeof msg, "cp.async needs sm_80 or later, not %s", t->name);
  return kl_llvm_fail(L, op, msg);
}

bool kl__lower_async_copy(kl_llvm_lowering *L, kl_op *op) {
  LLVMBuilderRef b = kl_llvm_builder(L);
  LLVMContextRef c = kl_llvm_context(L);
  const kl_type *st = op->opnds[0].value->type;
  int di = 1 + st->rank;
  const kl_type *dt = op->opnds[di].value->type;
  bool has_valid = op->nopnds == di + 1 + dt->rank + 1;
  LLVMValueRef valid = has_valid ? kl_llvm_value(L, op->opnds[op->nopnds - 1].value) : NULL;
  int64_t len = 1;
  kl_op_attr_i64(op, "len", &len);
  int64_t bytes = len * kl_type_bits(st->elem) / 8;
  LLVMTypeRef et;
  LLVMValueRef src = kl_llvm_address(L, op, 0, &et), dst = kl_llvm_address(L, op, di, &et);
  if (kl_llvm_target(L)->arch == KL_ARCH_NVPTX) {
    if (!nvptx_async_ok(L, op)) return false;
    char name[64];
    snprintf(name, sizeof name, "llvm.nvvm.cp.async.%s.shared.global.%d%s", bytes == 16 ? "cg" : "ca", (int)bytes,
             has_valid ? ".s" : "");
    LLVMTypeRef i32 = LLVMInt32TypeInContext(c);
    LLVMValueRef args[3] = { dst, src, NULL };
    if (has_valid)
      args[2] = LLVMBuildSelect(b, valid, LLVMConstInt(i32, (unsigned long long)bytes, 0), LLVMConstInt(i32, 0, 0), "");
    if (!call(L, name, args, has_valid ? 3 : 2)) {
      char msg[128];
      snprintf(msg, sizeof msg, "LLVM has no intrinsic %s", name);
      return kl_llvm_fail(L, op, msg);
    }
    return true;
  }
  /* AMDGPU, host: a plain copy */
  LLVMTypeRef vt = LLVMVectorType(et, (unsigned)len);
  LLVMValueRef v = LLVMBuildLoad2(b, vt, src, "");
  bool host = kl_llvm_target(L)->arch == KL_ARCH_HOST;
  unsigned eb = (unsigned)(kl_type_bits(st->elem) / 8);
  LLVMSetAlignment(v, host ? eb : (unsigned)bytes);
  if (valid) v = LLVMBuildSelect(b, valid, v, LLVMConstNull(vt), "");
  LLVMValueRef s = LLVMBuildStore(b, v, dst);
  LLVMSetAlignment(s, host ? eb : (unsigned)bytes);
  return true;
}

bool kl__lower_async_commit(kl_llvm_lowering *L, kl_op *op) {
  if (kl_llvm_target(L)->arch != KL_ARCH_NVPTX) return true;
  if (!nvptx_async_ok(L, op)) return false;
  if (!call(L, "llvm.nvvm.cp.async.commit.group", NULL, 0))
    return kl_llvm_fail(L, op, "LLVM has no intrinsic llvm.nvvm.cp.async.commit.group");
  return true;
}

bool kl__lower_async_wait(kl_llvm_lowering *L, kl_op *op) {
  if (kl_llvm_target(L)->arch != KL_ARCH_NVPTX) return true;
  if (!nvptx_async_ok(L, op)) return false;
  int64_t n = 0;
  kl_op_attr_i64(op, "pending", &n);
  LLVMValueRef a = LLVMConstInt(LLVMInt32TypeInContext(kl_llvm_context(L)), (unsigned long long)n, 0);
  if (!call(L, "llvm.nvvm.cp.async.wait.group", &a, 1))
    return kl_llvm_fail(L, op, "LLVM has no intrinsic llvm.nvvm.cp.async.wait.group");
  return true;
}

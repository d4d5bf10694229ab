/* llvm_kernels.h — building test kernels with the LLVM C API, shared by the C tests of
 * the device layer and the code generators (test_runtime_host.c, test_codegen_amdgpu.c,
 * test_codegen_nvptx.c): a module + builder in a context (lk_begin / lk_end), kernel
 * declarations for the host kernel ABI, AMDGPU and NVPTX (lk_kernel), intrinsic calls,
 * and the GPU vector add every one of those tests compiles (lk_gpu_vadd).
 * Ownership: lk_begin with ctx == NULL creates a context that lk_end disposes; with a
 * caller's context, lk_end leaves it alone. lk_end disposes the builder and the module
 * (loading a module into a device or emitting it copies what it needs first).
 * Errors: an unknown intrinsic name is a bug in the test: it prints and exits(2).
 * Header-only (static functions): include it from the one translation unit of a test. */
#ifndef KL_SPEC_LLVM_KERNELS_H
#define KL_SPEC_LLVM_KERNELS_H
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <llvm-c/Core.h>

typedef struct lk {
  LLVMContextRef ctx;
  LLVMModuleRef mod;
  LLVMBuilderRef b;
  LLVMValueRef fn;                      /* the kernel being built */
  LLVMTypeRef ptr, gptr, i32, i64, f32; /* gptr: pointer to global memory (address space 1) */
  bool own_ctx;
} lk;

/* A module named modname in ctx (NULL: a new context, owned by k) and a builder. */
static inline void lk_begin(lk *k, LLVMContextRef ctx, const char *modname) {
  k->own_ctx = ctx == NULL;
  k->ctx = ctx ? ctx : LLVMContextCreate();
  k->mod = LLVMModuleCreateWithNameInContext(modname, k->ctx);
  k->b = LLVMCreateBuilderInContext(k->ctx);
  k->fn = NULL;
  k->ptr = LLVMPointerTypeInContext(k->ctx, 0);
  k->gptr = LLVMPointerTypeInContext(k->ctx, 1);
  k->i32 = LLVMInt32TypeInContext(k->ctx);
  k->i64 = LLVMInt64TypeInContext(k->ctx);
  k->f32 = LLVMFloatTypeInContext(k->ctx);
}

static inline void lk_end(lk *k) {
  LLVMDisposeBuilder(k->b);
  LLVMDisposeModule(k->mod);
  if (k->own_ctx) LLVMContextDispose(k->ctx);
}

/* How a kernel is marked:
 *  LK_HOST: the host kernel ABI, void name(ptr args, ptr block_id, ptr grid) (params ignored);
 *  LK_AMDGPU: amdgpu_kernel calling convention + "amdgpu-flat-work-group-size" = wgsize;
 *  LK_PTX: ptx_kernel calling convention;
 *  LK_PTX_ANNOTATED: an entry through the nvvm.annotations "kernel" metadata instead. */
typedef enum lk_abi { LK_HOST, LK_AMDGPU, LK_PTX, LK_PTX_ANNOTATED } lk_abi;

/* Adds kernel `name` (void result) and positions the builder in its "entry" block. */
static inline LLVMValueRef lk_kernel(lk *k, lk_abi abi, const char *name, LLVMTypeRef *params, unsigned np,
                                     const char *wgsize) {
  LLVMTypeRef host[3] = { k->ptr, k->ptr, k->ptr };
  if (abi == LK_HOST) params = host, np = 3;
  k->fn = LLVMAddFunction(k->mod, name, LLVMFunctionType(LLVMVoidTypeInContext(k->ctx), params, np, 0));
  if (abi == LK_AMDGPU) {
    LLVMSetFunctionCallConv(k->fn, LLVMAMDGPUKERNELCallConv);
    const char *key = "amdgpu-flat-work-group-size";
    LLVMAddAttributeAtIndex(
        k->fn, LLVMAttributeFunctionIndex,
        LLVMCreateStringAttribute(k->ctx, key, (unsigned)strlen(key), wgsize, (unsigned)strlen(wgsize)));
  } else if (abi == LK_PTX) {
    LLVMSetFunctionCallConv(k->fn, LLVMPTXKernelCallConv);
  } else if (abi == LK_PTX_ANNOTATED) {
    LLVMMetadataRef ops[3] = { LLVMValueAsMetadata(k->fn), LLVMMDStringInContext2(k->ctx, "kernel", 6),
                               LLVMValueAsMetadata(LLVMConstInt(k->i32, 1, 0)) };
    LLVMAddNamedMetadataOperand(k->mod, "nvvm.annotations",
                                LLVMMetadataAsValue(k->ctx, LLVMMDNodeInContext2(k->ctx, ops, 3)));
  }
  LLVMPositionBuilderAtEnd(k->b, LLVMAppendBasicBlockInContext(k->ctx, k->fn, "entry"));
  return k->fn;
}

/* The declaration of intrinsic `name` (overloaded on over[0..nover)) and its type. */
static inline LLVMValueRef lk_intrinsic(lk *k, const char *name, LLVMTypeRef *over, size_t nover, LLVMTypeRef *fty) {
  unsigned id = LLVMLookupIntrinsicID(name, strlen(name));
  if (id == 0) {
    fprintf(stderr, "no intrinsic %s\n", name);
    exit(2);
  }
  if (!LLVMIntrinsicIsOverloaded(id)) nover = 0;
  *fty = LLVMIntrinsicGetType(k->ctx, id, over, nover);
  return LLVMGetIntrinsicDeclaration(k->mod, id, over, nover);
}

/* A call of the non-overloaded intrinsic `name`. */
static inline LLVMValueRef lk_call(lk *k, const char *name, LLVMValueRef *args, unsigned n) {
  LLVMTypeRef fty;
  LLVMValueRef f = lk_intrinsic(k, name, NULL, 0, &fty);
  return LLVMBuildCall2(k->b, fty, f, args, n, "");
}

/* The x thread id / workgroup id / workgroup size (NVPTX only) of a GPU kernel. */
static inline LLVMValueRef lk_tid(lk *k, bool amd) {
  return lk_call(k, amd ? "llvm.amdgcn.workitem.id.x" : "llvm.nvvm.read.ptx.sreg.tid.x", NULL, 0);
}
static inline LLVMValueRef lk_ctaid(lk *k, bool amd) {
  return lk_call(k, amd ? "llvm.amdgcn.workgroup.id.x" : "llvm.nvvm.read.ptx.sreg.ctaid.x", NULL, 0);
}
static inline LLVMValueRef lk_barrier(lk *k, bool amd) {
  return lk_call(k, amd ? "llvm.amdgcn.s.barrier" : "llvm.nvvm.barrier0", NULL, 0);
}

/* GPU kernel name(float *a, float *b, float *c, int n) in global memory:
 * i = workgroup id * size + thread id; if (i < n) c[i] = a[i] + b[i]. The workgroup
 * size is the constant wg_size, or (wg_size 0, NVPTX only) the %ntid.x register. */
static inline void lk_gpu_vadd(lk *k, lk_abi abi, const char *name, unsigned wg_size) {
  bool amd = abi == LK_AMDGPU;
  LLVMTypeRef ps[4] = { k->gptr, k->gptr, k->gptr, k->i32 };
  lk_kernel(k, abi, name, ps, 4, "1,256");
  LLVMBasicBlockRef body = LLVMAppendBasicBlockInContext(k->ctx, k->fn, "body");
  LLVMBasicBlockRef done = LLVMAppendBasicBlockInContext(k->ctx, k->fn, "done");
  LLVMValueRef tid = lk_tid(k, amd), wg = lk_ctaid(k, amd);
  LLVMValueRef size = wg_size ? LLVMConstInt(k->i32, wg_size, 0)
                              : lk_call(k, "llvm.nvvm.read.ptx.sreg.ntid.x", NULL, 0);
  LLVMValueRef i = LLVMBuildAdd(k->b, LLVMBuildMul(k->b, wg, size, ""), tid, "i");
  LLVMBuildCondBr(k->b, LLVMBuildICmp(k->b, LLVMIntSLT, i, LLVMGetParam(k->fn, 3), ""), body, done);
  LLVMPositionBuilderAtEnd(k->b, body);
  LLVMValueRef i64 = LLVMBuildSExt(k->b, i, k->i64, "");
  LLVMValueRef va = LLVMBuildLoad2(k->b, k->f32,
                                   LLVMBuildInBoundsGEP2(k->b, k->f32, LLVMGetParam(k->fn, 0), &i64, 1, ""), "");
  LLVMValueRef vb = LLVMBuildLoad2(k->b, k->f32,
                                   LLVMBuildInBoundsGEP2(k->b, k->f32, LLVMGetParam(k->fn, 1), &i64, 1, ""), "");
  LLVMBuildStore(k->b, LLVMBuildFAdd(k->b, va, vb, ""),
                 LLVMBuildInBoundsGEP2(k->b, k->f32, LLVMGetParam(k->fn, 2), &i64, 1, ""));
  LLVMBuildBr(k->b, done);
  LLVMPositionBuilderAtEnd(k->b, done);
  LLVMBuildRetVoid(k->b);
}
#endif

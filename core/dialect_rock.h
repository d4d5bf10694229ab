/* dialect_rock.h — the kernel-level ops (buffers + views), from whole-op kernels down
 * to loops. One dialect for every level below the graph; passes move IR down one level
 * at a time and the verifier hooks here check each op's local contract.
 *
 * Kernel functions: func.func @name {kernel, block_size = B, grid_size = G,
 * lds_bytes = L, arg_names = ["x", "w", "out"], perf_config = "v1:..."} whose entry
 * block arguments are global buffers (inputs first, then outputs, written in place) and
 * whose body ends with func.return (no operands). Buffer types carry shape + strides
 * (elements) + address space (global / lds / private).
 *
 * Views (any level):
 *   %v = rock.transform(%src) {view = #view<...>} : (buffer<lower>) -> buffer<upper>
 *        Pure, no data moves: element u of %v is element view(u) of %src (reads of an
 *        invalid coordinate give 0, writes to one are dropped). Chains of transforms
 *        compose top-down. The result type is row-major over the upper shape (its
 *        strides have no meaning; addressing always goes through the view chain).
 *   %b = rock.alloc() : () -> buffer<shape x T[, lds|private]>  (global: an intermediate
 *        the host plan allocates; lds: workgroup memory; private: per-thread registers)
 *
 * Whole-op level (graph-to-rock):
 *   rock.conv(%in, %filter, %out) {stride, padding, dilation, groups}   1-D, 2-D, 3-D: buffers
 *       [N,C,spatial...], [K,C/G,window...], [N,K,spatial...] of one rank 3, 4 or 5; the
 *       attributes of graph.conv (core/dialect_graph.h; per spatial dim, padding [begin, end]
 *       per dim), the output's shape checked against them; logical shapes (N,C,D,H,W /
 *       K,C/G,Z,Y,X / N,K,Do,Ho,Wo in 3-D), layouts are the strides.
 *   rock.gemm(%a, %b, %c) {store = "set"}   a: [G,K,M], b: [G,K,N], c: [G,M,N];
 *        c[g,m,n] = sum_k a[g,k,m] * b[g,k,n]  (transposes are views); accumulation in
 *        f32 for float inputs (i32 for i8), converted to c's element type on store.
 *   rock.elementwise(%in0, ..., %out) ({^bb0(%x0: T0, ...): ... rock.yield %r : Tout})
 *        Regular form: every operand has out's shape (inputs are views of whatever they
 *        read); out[i] = body(in0[i], ...). Trait FUSING.
 *   rock.reduce(%in, %out) {kind = "sum"|"max"|"mean", axes = [...]}
 *        out has in's rank with the reduced axes of size 1.
 *   rock.softmax(%in, %out) {axis}
 *   Fused forms (graph-partition's reduction fusion): rock.reduce / rock.softmax(%p0, ...,
 *        %e0, ..., %out) {n_prologue = P, result_args = [i, ...], row_out} with two regions:
 *        the prologue body maps the P prologue inputs (each of the reduction input's
 *        shape) to the reduced value x; the epilogue body maps the epilogue inputs (each
 *        of out's shape) and the reduction's result (its graph element type; at the body
 *        arguments result_args) to what out stores. out: the reduction's output (rank of
 *        the input, reduced axes 1), or with row_out the input's shape (the result
 *        broadcast back over its row, e.g. x * rsqrt(mean(x * x) + eps)).
 *   rock.yield(%v...)   terminator of rock region bodies.
 *
 * Gridwise level (rock-gemm-to-gridwise):
 *   rock.gridwise_gemm(%a, %b, %c) {perf_config, m_per_block, n_per_block, k_per_block,
 *        m_per_thread, n_per_thread, kpack, block_size, grid_size, store}
 *        a/b/c as in rock.gemm but padded (Pad views) to tile multiples.
 *
 * Blockwise / threadwise level:
 *   %i = rock.workgroup_id() : () -> index      %t = rock.workitem_id() : () -> index
 *   %n = rock.workgroup_count() : () -> index   the launch's workgroups (grid x; NVPTX and
 *        the host; persistent GEMM kernels loop over their tiles with it, passes/rock_tma.h)
 *   rock.barrier()                               workgroup barrier (LDS visibility)
 *   %y = rock.lane_shuffle(%x) {xor = N} : (T) -> T   (loop level too) x of lane
 *        (lane ^ N) of the executing wave (NVPTX shfl.sync.bfly, AMDGPU ds_bpermute); N a
 *        power of two in [1, 32]; a lane past the wave (N >= wave size; the host's wave
 *        has one lane) reads its own x. T is f32, f64, i32 or i64. All lanes of the wave
 *        must execute it together (not under divergent control flow).
 *   rock.fill(%buf) {value}                      every element of buf = value
 *   rock.threadwise_read_into(%src, %dst, %e0, ..., %ek) {view = #view<...>}
 *        dst: a private 1-D buffer [n]. The view maps (e0..ek, iter) -> coordinates of
 *        src (src may itself be a rock.transform chain). For iter in [0, n):
 *        dst[iter] = valid ? src[view(e, iter)] : 0. Attribute vector_len (optional):
 *        the width used for global loads along iter. Attribute ldmatrix = N (optional;
 *        e0 the workitem id, src 16-bit LDS): the same elements, read with rock.ldmatrix
 *        xN where rock-lower-loops proves it (passes/lower_loops_ldmatrix.c).
 *   rock.threadwise_write_all(%src, %dst, %e0, ..., %ek) {view, store = "set"}
 *        src private [n]; for iter in [0, n): if valid: dst[view(e, iter)] = src[iter]
 *        (converted to dst's element type). Attribute stmatrix = N (optional; e0 the
 *        workitem id, dst 16-bit LDS of src's type): the same elements, written with
 *        rock.stmatrix xN where rock-lower-loops proves it (lower_loops_ldmatrix.c).
 *   rock.blockwise_gemm(%lds_a, %lds_b, %acc, %tid) {m_per_thread, n_per_thread, ...}
 *        lds_a [K,M], lds_b [K,N] (kpack folded into the views), acc: the thread's
 *        private [m_per_thread * n_per_thread] tile; acc += this thread's part of a^T b.
 *   rock.threadwise_gemm(%a, %b, %c)   private a [K,M], b [K,N], c [M,N] (or flat views):
 *        c[m,n] += sum_k a[k,m] * b[k,n]
 *
 * Loop level (rock-lower-loops): scf.for / scf.if / arith / math plus
 *   %v = rock.load(%buf, %i0, ..., %in) : (buffer, index...) -> T | vector<N x T>
 *        buf is a kernel argument or a rock.alloc (no views left); the indices address
 *        one element (sum of idx * stride); a vector result reads N consecutive memory
 *        elements from there.
 *   rock.store(%v, %buf, %i0, ..., %in)   the same addressing for writes.
 *   rock.prefetch(%buf, %i0, ..., %in)    a read hint for that element's cache line (host).
 *   rock.mma(...)                         one matrix instruction (passes/rock_accel.h).
 *   %v = rock.ldmatrix(%lds, %i0, ..., %in) {num = N, trans} : (...) -> vector<2N x T>
 *        NVIDIA's warp-level load of N 8x8 16-bit matrices (N = 1, 2, 4), one 16-byte
 *        row address per lane; the lane mapping is at its verifier (dialect_rock.c).
 *   rock.stmatrix(%v, %lds, %i0, ..., %in) {num = N, trans}   %v : vector<2N x T>
 *        the mirror store (sm_90+): the N matrices of the lanes' fragments into LDS, one
 *        16-byte row address per lane (dialect_rock.c).
 * plus vector.broadcast / vector.shuffle / math.fma (core/dialect_builtin.c) for
 * register-blocked code.
 *
 * IR levels (ir.h, kl_opdef.levels): every rock op is legal at KL_LEVEL_KERNEL; the
 * loop-level ops above (load, store, prefetch, mma, ldmatrix, stmatrix) and rock.alloc / rock.workgroup_id /
 * rock.workitem_id / rock.barrier / rock.lane_shuffle also at KL_LEVEL_LOOP. rock.mma is registered here
 * with its structural contract; the check of its instruction (operand and accumulator
 * types of a known matrix instruction) needs the instruction table outside core and is
 * installed as a hook (kl_rock_set_mma_hook; passes/rock_accel_lower.c does it when the
 * passes are registered).
 */
#ifndef KL_DIALECT_ROCK_H
#define KL_DIALECT_ROCK_H
#include "core/ir.h"

void kl_register_rock_dialect(kl_ctx *ctx);
bool kl_is_kernel(const kl_op *op); /* func.func with the `kernel` attribute */
/* Follows rock.transform ops from v down to the underlying buffer (kernel argument or
 * rock.alloc); fills ops[0..*n) with the transforms, top first (max entries). */
kl_value *kl_rock_underlying(kl_value *v, kl_op **ops, int *n, int max);
/* The instruction check of rock.mma, per context (the hook must outlive the context;
 * NULL removes it). verify emits diagnostics at op->loc and returns KL_ERR on failure. */
typedef struct kl_rock_mma_hook {
  kl_status (*verify)(kl_op *op);
} kl_rock_mma_hook;
void kl_rock_set_mma_hook(kl_ctx *ctx, const kl_rock_mma_hook *hook);
#endif

#!/usr/bin/env python3
"""bench/gpu_peers.py — the peers' side of the GPU suite, and the driver that
interleaves kiln with them case by case.

    python3 bench/gpu_peers.py OUT.tsv [--kiln build/kiln] [--case ID]... [--cases FILE]
                               [--budget-ms MS] [--ptx DIR] [--no-triton] [--no-compile]

For every case of bench/gpu_cases.txt (the same file bench/gpu_kiln.lua reads), first runs
kiln's side of that case (with --kiln: `kiln bench/gpu_kiln.lua OUT.tsv --case ID`, a child
process appending its own rows), then the peers, so that drift of the machine hits both:
  gemm     torch.matmul (cuBLAS) and Triton's tutorial matmul (the classic kernel, written
           out below, autotuned over a few of the tutorial's configs)
  conv     torch eager conv2d + add + relu on channels_last (NHWC) tensors, the same captured
           in a CUDA graph (GPU time without Python's launch gaps), and torch.compile of it
  ew       torch.add(x, y, out=z) and a device-to-device copy z.copy_(x) (the copy bandwidth)
  compile  Triton's cold compile (+ load and first launch) of one kernel, in a child process
           with an empty cache, and again from its disk cache; torch.compile's first call of
           the conv graph is written by the conv case
  gemm_cvt, gemm_scale, conv_cvt (input fusion: kiln's side writes rows kiln, kiln.fuse and kiln.nofuse)
           torch eager torch.matmul(A.half(), B) / torch.matmul(A * S, B) /
           relu(conv2d(x.half(), w) + r) on channels_last, and the same captured in a CUDA graph
At the end, with --kiln, kiln and cuBLAS are timed once more on the first GEMM case (rows
with case ID#2) to show the run-to-run spread. Rows have the columns of bench/gpu_kiln.lua;
bench/gpu_report.py prints the merged table and draws the plot.

Method (same as kiln's side; bench/README.md): uniform [-1, 1) random inputs,
enough input/output sets to span 256 MiB rotated launch by launch, outputs poisoned with NaN
before the checked launch, every output element checked against a float64 reference on the
GPU before timing, warm-up >= 100 ms, then launches back to back with CUDA events between
consecutive launches, median and 10th/90th percentiles of repeats filling --budget-ms.
Fresh TRITON_CACHE_DIR / TORCHINDUCTOR_CACHE_DIR per run (so compile times are cold), unless
set by the caller.
"""
import argparse
import json
import math
import os
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
COLUMNS = ["case", "kind", "impl", "dtype", "shape", "ms", "ms_p10", "ms_p90", "reps", "sets", "flop", "bytes",
           "value", "unit", "check", "note"]
ROTATE_BYTES = 256 << 20
MAX_SETS = 64
WARM_MS, MIN_REPS, MAX_REPS = 100.0, 10, 2000

_tmp_root = None
if "TRITON_CACHE_DIR" not in os.environ or "TORCHINDUCTOR_CACHE_DIR" not in os.environ:
    _tmp_root = tempfile.mkdtemp(prefix="kiln_bench_")
    os.environ.setdefault("TRITON_CACHE_DIR", os.path.join(_tmp_root, "triton"))
    os.environ.setdefault("TORCHINDUCTOR_CACHE_DIR", os.path.join(_tmp_root, "inductor"))

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

try:
    import triton
    import triton.language as tl
    HAVE_TRITON = True
except Exception as e:  # pragma: no cover - reported in the rows
    HAVE_TRITON = False
    TRITON_ERR = repr(e)

CUDA = torch.cuda.is_available()
DEV = "cuda" if CUDA else "cpu"


# ------------------------------------------------------------------ rows ----
def read_cases(path):
    cases = []
    with open(path) as f:
        for line in f:
            w = line.split("#", 1)[0].split()
            if w and "@" not in w[0]:  # "ID@variant": a kiln-only variant row (bench/gpu_kiln.lua)
                cases.append({"id": w[0], "kind": w[1], "dtype": w[2], "dims": [int(x) for x in w[3:]]})
    return cases


def write_row(path, row):
    new = not os.path.exists(path)
    with open(path, "a") as f:
        if new:
            f.write("\t".join(COLUMNS) + "\n")
        cells = []
        for c in COLUMNS:
            v = row.get(c, "")
            if isinstance(v, float):
                v = "%.6g" % v
            cells.append(str(v).replace("\t", " ").replace("\n", " ").replace("\r", " "))
        f.write("\t".join(cells) + "\n")
    val = row.get("value")
    print("%-26s %-18s %10s %s  %s" % (row["case"], row["impl"], ("%.4g" % val) if isinstance(val, float) else "-",
                                        row.get("unit", ""), row.get("check", "")), flush=True)


def shape_str(dims):
    return "x".join(str(d) for d in dims)


def nsets_for(set_bytes):
    if set_bytes <= 0:
        return 1
    return max(1, min(MAX_SETS, -(-ROTATE_BYTES // set_bytes)))


# ---------------------------------------------------------------- timing ----
def sync():
    if CUDA:
        torch.cuda.synchronize()


def _time(fn, nsets, reps, start):
    """Launches fn(set) reps times back to back; ms between consecutive events."""
    if CUDA:
        evs = [torch.cuda.Event(enable_timing=True) for _ in range(reps + 1)]
        evs[0].record()
        for i in range(reps):
            fn((start + i) % nsets)
            evs[i + 1].record()
        torch.cuda.synchronize()
        return [evs[i].elapsed_time(evs[i + 1]) for i in range(reps)]
    out, t = [], time.perf_counter()
    for i in range(reps):
        fn((start + i) % nsets)
        t2 = time.perf_counter()
        out.append((t2 - t) * 1e3)
        t = t2
    return out


def _median(xs):
    s = sorted(xs)
    n = len(s)
    return s[n // 2] if n % 2 else (s[n // 2 - 1] + s[n // 2]) / 2


def _pct(s, q):
    return s[max(0, min(len(s) - 1, int(math.floor(q * (len(s) - 1) + 0.5))))]


def measure(fn, nsets, budget_ms):
    fn(0)
    sync()
    est = max(_median(_time(fn, nsets, 3, 1)), 1e-3)
    warm = max(2, min(1000, int(math.ceil(WARM_MS / est))))
    for i in range(warm):
        fn(i % nsets)
    sync()
    reps = max(MIN_REPS, min(MAX_REPS, int(budget_ms // est)))
    ms = _time(fn, nsets, reps, warm % nsets)
    s = sorted(ms)
    return {"ms": _median(ms), "ms_p10": _pct(s, 0.1), "ms_p90": _pct(s, 0.9), "reps": reps, "sets": nsets}



def time_row(row, fn, nsets, budget_ms, amount):
    """Times fn into row (median, percentiles, reps) and sets value = amount per second
    (amount: the row's TFLOP or GB)."""
    m = measure(fn, nsets, budget_ms)
    row.update(m)
    row["value"] = amount / (m["ms"] * 1e-3)

def rand(shape, dtype, memory_format=None):
    t = torch.rand(shape, device=DEV, dtype=torch.float32).mul_(2).sub_(1).to(dtype)
    if memory_format is not None:
        t = t.contiguous(memory_format=memory_format)
    return t


DT = {"f16": torch.float16, "bf16": torch.bfloat16, "f32": torch.float32}
TOL = {"f16": 2e-3, "bf16": 1e-2, "f32": 1e-5}


def rel_check(out, ref, dtype):
    """||out - ref|| / ||ref|| over every element (float64), NaN/inf fail."""
    o = out.double()
    if not bool(torch.isfinite(o).all()):
        bad = int((~torch.isfinite(o)).sum())
        return False, "FAIL %d outputs not finite (unwritten or NaN)" % bad
    rel = float(torch.linalg.vector_norm(o - ref) / torch.linalg.vector_norm(ref))
    ok = rel <= TOL[dtype]
    return ok, "%s rel=%.2e (tol %.0e) on all %d outputs" % ("ok" if ok else "FAIL", rel, TOL[dtype], out.numel())


def fp8_check(out, ref, absdot, K):
    """fp8 x fp8 -> f32 (exact products summed in f32): every element within the summation
    bound (K - 1) 2^-24 sum_k |a_k b_k| (absdot) of the float64 product; NaN/inf fail."""
    o = out.double()
    if not bool(torch.isfinite(o).all()):
        bad = int((~torch.isfinite(o)).sum())
        return False, "FAIL %d outputs not finite (unwritten or NaN)" % bad
    worst = float(((o - ref).abs() / ((K - 1) * 2.0 ** -24 * absdot + 1e-30)).max())
    rel = float(torch.linalg.vector_norm(o - ref) / torch.linalg.vector_norm(ref))
    ok = worst <= 1
    return ok, "%s max |err| = %.3g x the f32 summation bound (K-1) 2^-24 sum|a b|, rel=%.2e, on all %d outputs" % (
        "ok" if ok else "FAIL", worst, rel, out.numel())


def poison(t):
    if t.dtype.is_floating_point:
        t.fill_(float("nan"))
    else:
        t.fill_(-1)


# ---------------------------------------------------------- Triton GEMM ----
if HAVE_TRITON:
    @triton.jit
    def tutorial_matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_ak, stride_bk, stride_bn,
                               stride_cm, stride_cn, BLOCK_SIZE_M: tl.constexpr, BLOCK_SIZE_N: tl.constexpr,
                               BLOCK_SIZE_K: tl.constexpr, GROUP_SIZE_M: tl.constexpr):
        """Triton's tutorial matmul (03-matrix-multiplication): C = A @ B, f32 accumulator,
        grouped program order for L2 reuse."""
        pid = tl.program_id(axis=0)
        num_pid_m = tl.cdiv(M, BLOCK_SIZE_M)
        num_pid_n = tl.cdiv(N, BLOCK_SIZE_N)
        num_pid_in_group = GROUP_SIZE_M * num_pid_n
        group_id = pid // num_pid_in_group
        first_pid_m = group_id * GROUP_SIZE_M
        group_size_m = min(num_pid_m - first_pid_m, GROUP_SIZE_M)
        pid_m = first_pid_m + ((pid % num_pid_in_group) % group_size_m)
        pid_n = (pid % num_pid_in_group) // group_size_m
        offs_am = (pid_m * BLOCK_SIZE_M + tl.arange(0, BLOCK_SIZE_M)) % M
        offs_bn = (pid_n * BLOCK_SIZE_N + tl.arange(0, BLOCK_SIZE_N)) % N
        offs_k = tl.arange(0, BLOCK_SIZE_K)
        a_ptrs = a_ptr + (offs_am[:, None] * stride_am + offs_k[None, :] * stride_ak)
        b_ptrs = b_ptr + (offs_k[:, None] * stride_bk + offs_bn[None, :] * stride_bn)
        accumulator = tl.zeros((BLOCK_SIZE_M, BLOCK_SIZE_N), dtype=tl.float32)
        for k in range(0, tl.cdiv(K, BLOCK_SIZE_K)):
            a = tl.load(a_ptrs, mask=offs_k[None, :] < K - k * BLOCK_SIZE_K, other=0.0)
            b = tl.load(b_ptrs, mask=offs_k[:, None] < K - k * BLOCK_SIZE_K, other=0.0)
            accumulator = tl.dot(a, b, accumulator)
            a_ptrs += BLOCK_SIZE_K * stride_ak
            b_ptrs += BLOCK_SIZE_K * stride_bk
        c = accumulator.to(c_ptr.dtype.element_ty)
        offs_cm = pid_m * BLOCK_SIZE_M + tl.arange(0, BLOCK_SIZE_M)
        offs_cn = pid_n * BLOCK_SIZE_N + tl.arange(0, BLOCK_SIZE_N)
        c_ptrs = c_ptr + stride_cm * offs_cm[:, None] + stride_cn * offs_cn[None, :]
        c_mask = (offs_cm[:, None] < M) & (offs_cn[None, :] < N)
        tl.store(c_ptrs, c, mask=c_mask)

    # A few of the tutorial's CUDA configs (the autotuner picks per (M, N, K)).
    TUTORIAL_CONFIGS = [
        triton.Config({"BLOCK_SIZE_M": 128, "BLOCK_SIZE_N": 256, "BLOCK_SIZE_K": 64, "GROUP_SIZE_M": 8}, num_stages=3, num_warps=8),
        triton.Config({"BLOCK_SIZE_M": 64, "BLOCK_SIZE_N": 256, "BLOCK_SIZE_K": 32, "GROUP_SIZE_M": 8}, num_stages=4, num_warps=4),
        triton.Config({"BLOCK_SIZE_M": 128, "BLOCK_SIZE_N": 128, "BLOCK_SIZE_K": 32, "GROUP_SIZE_M": 8}, num_stages=4, num_warps=4),
        triton.Config({"BLOCK_SIZE_M": 128, "BLOCK_SIZE_N": 64, "BLOCK_SIZE_K": 32, "GROUP_SIZE_M": 8}, num_stages=4, num_warps=4),
        triton.Config({"BLOCK_SIZE_M": 64, "BLOCK_SIZE_N": 128, "BLOCK_SIZE_K": 32, "GROUP_SIZE_M": 8}, num_stages=4, num_warps=4),
        triton.Config({"BLOCK_SIZE_M": 64, "BLOCK_SIZE_N": 32, "BLOCK_SIZE_K": 32, "GROUP_SIZE_M": 8}, num_stages=5, num_warps=2),
    ]
    tutorial_matmul_autotuned = triton.autotune(configs=TUTORIAL_CONFIGS, key=["M", "N", "K"])(tutorial_matmul_kernel)

    def triton_matmul(a, b, c):
        M, K = a.shape
        _, N = b.shape
        grid = lambda META: (triton.cdiv(M, META["BLOCK_SIZE_M"]) * triton.cdiv(N, META["BLOCK_SIZE_N"]),)  # noqa: E731
        tutorial_matmul_autotuned[grid](a, b, c, M, N, K, a.stride(0), a.stride(1), b.stride(0), b.stride(1),
                                        c.stride(0), c.stride(1))

    @triton.jit
    def add_kernel(x_ptr, y_ptr, z_ptr, n, BLOCK: tl.constexpr):
        offs = tl.program_id(axis=0) * BLOCK + tl.arange(0, BLOCK)
        mask = offs < n
        tl.store(z_ptr + offs, tl.load(x_ptr + offs, mask=mask) + tl.load(y_ptr + offs, mask=mask), mask=mask)


# ------------------------------------------------------------------ cases ----
def case_gemm(c, args, out):
    M, N, K = c["dims"]
    dt = DT[c["dtype"]]
    esz = torch.tensor([], dtype=dt).element_size()
    flop, nbytes = 2.0 * M * N * K, float((M * K + K * N + M * N) * esz)
    nsets = nsets_for(int(nbytes))
    A = [rand((M, K), dt) for _ in range(nsets)]
    B = [rand((K, N), dt) for _ in range(nsets)]
    C = [torch.empty((M, N), device=DEV, dtype=dt) for _ in range(nsets)]
    ref = A[0].double() @ B[0].double()
    impls = [("torch.matmul", lambda i: torch.matmul(A[i], B[i], out=C[i]), "cuBLAS via torch")]
    if HAVE_TRITON and CUDA and not args.no_triton:
        impls.append(("triton", lambda i: triton_matmul(A[i], B[i], C[i]), "Triton tutorial matmul, autotuned"))
    base = {"case": c["id"] + args.suffix, "kind": "gemm", "dtype": c["dtype"], "shape": shape_str(c["dims"]),
            "flop": flop, "bytes": nbytes, "unit": "TFLOP/s"}
    for name, fn, note in impls:
        row = dict(base, impl=name, note=note)
        try:
            fn(0)                       # first call: autotuning / heuristics, outside the check
            sync()
            poison(C[0])
            fn(0)
            sync()
            ok, row["check"] = rel_check(C[0], ref, c["dtype"])
            if name == "triton":
                best = getattr(tutorial_matmul_autotuned, "best_config", None)
                row["note"] = "%s; best config %s" % (note, best)
            if ok:
                time_row(row, fn, nsets, args.budget_ms, flop / 1e12)
        except Exception as e:
            row["check"] = "ERROR %s: %s" % (type(e).__name__, str(e)[:300])
        write_row(out, row)
    del A, B, C, ref


def case_qgemm(c, args, out):
    """fp8 x fp8 -> f32: torch._scaled_mm (cuBLASLt / hipBLASLt fp8 GEMM, unit scales), B column-major as it
    requires; the inputs are uniform [-1, 1) rounded to the fp8 format, the reference their float64 product."""
    M, N, K = c["dims"]
    f8 = {"f8e4m3fn": "float8_e4m3fn", "f8e5m2": "float8_e5m2", "f8e4m3fnuz": "float8_e4m3fnuz",
          "f8e5m2fnuz": "float8_e5m2fnuz"}[c["dtype"]]
    flop, nbytes = 2.0 * M * N * K, float(M * K + K * N + M * N * 4)
    base = {"case": c["id"] + args.suffix, "kind": "qgemm", "dtype": c["dtype"], "shape": shape_str(c["dims"]),
            "flop": flop, "bytes": nbytes, "unit": "TFLOP/s"}
    row = dict(base, impl="torch._scaled_mm", note="fp8 GEMM of cuBLASLt / hipBLASLt via torch, f32 out, unit scales")
    try:
        dt = getattr(torch, f8)
        nsets = nsets_for(int(nbytes))
        A = [(torch.rand((M, K), device=DEV) * 2 - 1).to(dt) for _ in range(nsets)]
        B = [(torch.rand((N, K), device=DEV) * 2 - 1).to(dt).t() for _ in range(nsets)]
        one = torch.ones((), device=DEV, dtype=torch.float32)
        ref = A[0].double() @ B[0].double()
        fn = lambda i: torch._scaled_mm(A[i], B[i], scale_a=one, scale_b=one, out_dtype=torch.float32)
        got = fn(0)
        sync()
        ok, row["check"] = fp8_check(got, ref, A[0].double().abs() @ B[0].double().abs(), K)
        if ok:
            time_row(row, fn, nsets, args.budget_ms, flop / 1e12)
        del A, B, ref
    except Exception as e:
        row["check"] = "ERROR %s: %s" % (type(e).__name__, str(e)[:300])
    write_row(out, row)


TORCH_COMPILE_DONE = set()


def case_conv(c, args, out):
    Nb, Cc, H, W, K = c["dims"]
    dt = DT[c["dtype"]]
    esz = torch.tensor([], dtype=dt).element_size()
    flop = 2.0 * Nb * H * W * K * Cc
    nbytes = float((Nb * Cc * H * W + K * Cc + 2 * Nb * K * H * W) * esz)
    nsets = nsets_for(int(nbytes))
    cl = torch.channels_last
    X = [rand((Nb, Cc, H, W), dt, cl) for _ in range(nsets)]
    Wt = [rand((K, Cc, 1, 1), dt, cl) for _ in range(nsets)]
    R = [rand((Nb, K, H, W), dt, cl) for _ in range(nsets)]
    # float64 reference of set 0 through a matmul (1x1 conv = GEMM over NHW x C)
    x2 = X[0].permute(0, 2, 3, 1).reshape(-1, Cc).double()
    w2 = Wt[0].reshape(K, Cc).double()
    ref = torch.relu(x2 @ w2.t() + R[0].permute(0, 2, 3, 1).reshape(-1, K).double())

    def conv_add_relu(x, w, r):
        return torch.relu(F.conv2d(x, w) + r)

    base = {"case": c["id"] + args.suffix, "kind": "conv", "dtype": c["dtype"], "shape": shape_str(c["dims"]),
            "flop": flop, "bytes": nbytes, "unit": "TFLOP/s"}
    impls = [("torch.eager", lambda i: conv_add_relu(X[i], Wt[i], R[i]), "conv2d, add, relu: 3 launches (cuDNN conv)")]
    graphs = {}
    if CUDA:
        def graphed(i):
            graphs[i][0].replay()
        impls.append(("torch.eager+graph", graphed, "the eager ops captured in a CUDA graph (no Python launch gaps)"))
    compiled = None
    if CUDA and HAVE_TRITON and not args.no_compile and hasattr(torch, "compile"):
        compiled = torch.compile(conv_add_relu, dynamic=False)
        impls.append(("torch.compile", lambda i: compiled(X[i], Wt[i], R[i]), "inductor, default mode"))
    for name, fn, note in impls:
        row = dict(base, impl=name, note=note)
        try:
            if name == "torch.eager+graph":
                torch.cuda.synchronize()
                s = torch.cuda.Stream()
                s.wait_stream(torch.cuda.current_stream())
                with torch.cuda.stream(s):
                    for i in range(nsets):
                        for _ in range(2):
                            conv_add_relu(X[i], Wt[i], R[i])
                torch.cuda.current_stream().wait_stream(s)
                for i in range(nsets):
                    g = torch.cuda.CUDAGraph()
                    with torch.cuda.graph(g):
                        o = conv_add_relu(X[i], Wt[i], R[i])
                    graphs[i] = (g, o)
                poison(graphs[0][1])
                graphs[0][0].replay()
                sync()
                got = graphs[0][1]
            elif name == "torch.compile":
                sync()
                t0 = time.perf_counter()
                compiled(X[0], Wt[0], R[0])
                sync()
                first_ms = (time.perf_counter() - t0) * 1e3
                row["note"] = "%s; first call (compile) %.0f ms" % (note, first_ms)
                if "conv" not in TORCH_COMPILE_DONE and not args.suffix:
                    TORCH_COMPILE_DONE.add("conv")
                    write_row(out, {"case": "compile_sm_90_cold", "kind": "compile", "impl": "torch.compile",
                                    "dtype": c["dtype"], "shape": shape_str(c["dims"]), "ms": first_ms,
                                    "value": first_ms, "unit": "ms", "reps": 1, "check": "-",
                                    "note": "first call of torch.compile(conv+add+relu) at %s, empty inductor cache "
                                            "(whole graph: conv stays cuDNN, add+relu a Triton kernel)" % c["id"]})
                got = compiled(X[0], Wt[0], R[0])
                sync()
            else:
                got = fn(0)
                sync()
            row["note"] += "; output %s" % ("channels_last" if got.is_contiguous(memory_format=cl) else "NCHW-contiguous")
            ok, row["check"] = rel_check(got.permute(0, 2, 3, 1).reshape(-1, K), ref, c["dtype"])
            if ok:
                time_row(row, fn, nsets, args.budget_ms, flop / 1e12)
        except Exception as e:
            row["check"] = "ERROR %s: %s" % (type(e).__name__, str(e)[:300])
        write_row(out, row)
    graphs.clear()
    del X, Wt, R, ref


def case_ew(c, args, out):
    Rr, S = c["dims"]
    dt = DT[c["dtype"]]
    esz = torch.tensor([], dtype=dt).element_size()
    n = Rr * S
    nsets = nsets_for(3 * n * esz)
    X = [rand((Rr, S), dt) for _ in range(nsets)]
    Y = [rand((Rr, S), dt) for _ in range(nsets)]
    Z = [torch.empty((Rr, S), device=DEV, dtype=dt) for _ in range(nsets)]
    base = {"case": c["id"] + args.suffix, "kind": "ew", "dtype": c["dtype"], "shape": shape_str(c["dims"]),
            "unit": "GB/s"}
    impls = [("torch.add", lambda i: torch.add(X[i], Y[i], out=Z[i]), 3.0 * n * esz, "z = x + y: read 2, write 1"),
             ("torch.copy", lambda i: Z[i].copy_(X[i]), 2.0 * n * esz, "z.copy_(x): read 1, write 1 (copy bandwidth)")]
    for name, fn, nbytes, note in impls:
        row = dict(base, impl=name, note=note, bytes=nbytes, flop=float(n) if name == "torch.add" else 0.0)
        try:
            poison(Z[0])
            fn(0)
            sync()
            want = X[0] + Y[0] if name == "torch.add" else X[0]
            ok = bool(torch.equal(Z[0], want))
            row["check"] = "ok all %d outputs exact" % n if ok else "FAIL outputs differ"
            if ok:
                time_row(row, fn, nsets, args.budget_ms, nbytes / 1e9)
        except Exception as e:
            row["check"] = "ERROR %s: %s" % (type(e).__name__, str(e)[:300])
        write_row(out, row)
    del X, Y, Z


def case_rows(c, args, out):
    """rowsum: z[r] = sum_s x[r, s]; rms: z[r] = sqrt(mean_s x[r, s]^2); softmax: z = softmax(x, -1);
    GB/s of read + write."""
    Rr, S = c["dims"]
    dt = DT[c["dtype"]]
    esz = torch.tensor([], dtype=dt).element_size()
    n = Rr * S
    rms = c["kind"] == "rms"
    rowsum = c["kind"] == "rowsum" or rms
    nbytes = float(n * esz + (Rr if rowsum else n) * esz)
    nsets = nsets_for(int(nbytes))
    X = [rand((Rr, S), dt) for _ in range(nsets)]
    Z = [torch.empty((Rr,) if rowsum else (Rr, S), device=DEV, dtype=dt) for _ in range(nsets)]
    base = {"case": c["id"] + args.suffix, "kind": c["kind"], "dtype": c["dtype"], "shape": shape_str(c["dims"]),
            "unit": "GB/s", "bytes": nbytes, "flop": float(n)}
    if rms:
        ref = X[0].double().square().mean(-1).sqrt()
        name, note = "torch.eager", "torch.sqrt(torch.mean(x * x, -1)): eager, three kernels"
        fn = lambda i: torch.sqrt(torch.mean(X[i] * X[i], dim=-1), out=Z[i])
    elif rowsum:
        ref = X[0].double().sum(-1)
        name, fn, note = "torch.sum", (lambda i: torch.sum(X[i], dim=-1, out=Z[i])), "torch.sum(x, -1): read 1, write a row"
    else:
        ref = torch.softmax(X[0].double(), -1)
        name, fn, note = "torch.softmax", (lambda i: torch.softmax(X[i], dim=-1)), "torch.softmax(x, -1): read 1, write 1"
    row = dict(base, impl=name, note=note)
    try:
        got = fn(0)
        sync()
        ok, row["check"] = rel_check(Z[0] if rowsum else got, ref, c["dtype"])
        if ok:
            time_row(row, fn, nsets, args.budget_ms, nbytes / 1e9)
    except Exception as e:
        row["check"] = "ERROR %s: %s" % (type(e).__name__, str(e)[:300])
    write_row(out, row)
    del X, Z, ref


def case_fused_rows(c, args, out):
    """Reductions fused with element-wise producers and consumers over [R, S] rows
    (bench/gpu_kiln.lua's run_fused_rows): rmsnorm z = x * rsqrt(mean(x^2, -1) + 1e-5),
    smmask z = softmax(x * 0.125 + mask, -1) with mask [S], lse z[r] = log(sum(exp(x), -1));
    GB/s of read + write; torch eager and torch.compile (inductor) where present."""
    Rr, S = c["dims"]
    dt = DT[c["dtype"]]
    esz = torch.tensor([], dtype=dt).element_size()
    n = Rr * S
    kind = c["kind"]
    wn = Rr if kind == "lse" else n
    nbytes = float((n + wn + (S if kind == "smmask" else 0)) * esz)
    nsets = nsets_for(int(nbytes))
    X = [rand((Rr, S), dt) for _ in range(nsets)]
    M = [rand((S,), dt) for _ in range(nsets)]
    if kind == "rmsnorm":
        def f(x, m):
            return x * torch.rsqrt(torch.mean(x * x, dim=-1, keepdim=True) + 1e-5)
        x0 = X[0].double()
        ref = x0 * torch.rsqrt(x0.square().mean(-1, keepdim=True) + 1e-5)
        note = "x * rsqrt(mean(x * x, -1, keepdim) + eps)"
    elif kind == "smmask":
        def f(x, m):
            return torch.softmax(x * 0.125 + m, dim=-1)
        ref = torch.softmax(X[0].double() * 0.125 + M[0].double(), -1)
        note = "softmax(x * 0.125 + mask, -1)"
    else:
        def f(x, m):
            return torch.log(torch.sum(torch.exp(x), dim=-1))
        ref = torch.log(torch.exp(X[0].double()).sum(-1))
        note = "log(sum(exp(x), -1))"
    base = {"case": c["id"] + args.suffix, "kind": kind, "dtype": c["dtype"], "shape": shape_str(c["dims"]),
            "unit": "GB/s", "bytes": nbytes, "flop": float(n)}
    impls = [("torch.eager", lambda i: f(X[i], M[i]), note + ": eager")]
    compiled = None
    if CUDA and HAVE_TRITON and not args.no_compile and hasattr(torch, "compile"):
        compiled = torch.compile(f, dynamic=False)
        impls.append(("torch.compile", lambda i: compiled(X[i], M[i]), note + ": inductor, default mode"))
    for name, fn, nt in impls:
        row = dict(base, impl=name, note=nt)
        try:
            if name == "torch.compile":
                sync()
                t0 = time.perf_counter()
                compiled(X[0], M[0])
                sync()
                row["note"] = "%s; first call (compile) %.0f ms" % (nt, (time.perf_counter() - t0) * 1e3)
            got = fn(0)
            sync()
            ok, row["check"] = rel_check(got, ref, c["dtype"])
            if ok:
                time_row(row, fn, nsets, args.budget_ms, nbytes / 1e9)
        except Exception as e:
            row["check"] = "ERROR %s: %s" % (type(e).__name__, str(e)[:300])
        write_row(out, row)
    del X, M, ref


def probe_triton_compile():
    """Child process: times Triton's first launch (compile + load + run) of the add kernel
    (the first kernel in the process) and of the tutorial matmul with one fixed config,
    under the TRITON_CACHE_DIR the parent chose. Prints one JSON line."""
    a = torch.rand((512, 512), device="cuda", dtype=torch.float16)
    b = torch.rand((512, 512), device="cuda", dtype=torch.float16)
    c = torch.empty((512, 512), device="cuda", dtype=torch.float16)
    x = torch.rand(1 << 20, device="cuda")
    z = torch.empty_like(x)
    torch.cuda.synchronize()
    res = {}
    t0 = time.perf_counter()
    add_kernel[(triton.cdiv(x.numel(), 1024),)](x, x, z, x.numel(), BLOCK=1024)
    torch.cuda.synchronize()
    res["add_first_ms"] = (time.perf_counter() - t0) * 1e3
    t0 = time.perf_counter()
    tutorial_matmul_kernel[(triton.cdiv(512, 128) * triton.cdiv(512, 128),)](
        a, b, c, 512, 512, 512, a.stride(0), a.stride(1), b.stride(0), b.stride(1), c.stride(0), c.stride(1),
        BLOCK_SIZE_M=128, BLOCK_SIZE_N=128, BLOCK_SIZE_K=32, GROUP_SIZE_M=8, num_warps=4, num_stages=4)
    torch.cuda.synchronize()
    res["matmul_first_ms"] = (time.perf_counter() - t0) * 1e3
    ok = bool(torch.allclose(c.float(), a.float() @ b.float(), rtol=1e-2, atol=1e-1))
    t0 = time.perf_counter()
    for _ in range(10):
        tutorial_matmul_kernel[(16,)](a, b, c, 512, 512, 512, a.stride(0), a.stride(1), b.stride(0), b.stride(1),
                                      c.stride(0), c.stride(1), BLOCK_SIZE_M=128, BLOCK_SIZE_N=128, BLOCK_SIZE_K=32,
                                      GROUP_SIZE_M=8, num_warps=4, num_stages=4)
    torch.cuda.synchronize()
    res["matmul_again_ms"] = (time.perf_counter() - t0) * 1e3 / 10
    res["ok"] = ok
    print("PROBE " + json.dumps(res), flush=True)


def case_compile(c, args, out):
    if not (HAVE_TRITON and CUDA) or args.no_compile:
        return
    cache = tempfile.mkdtemp(prefix="triton_probe_")
    env = dict(os.environ, TRITON_CACHE_DIR=cache)
    results = []
    for label in ("cold", "disk-cached"):
        p = subprocess.run([sys.executable, os.path.abspath(__file__), "--probe-triton-compile"], env=env,
                           capture_output=True, text=True, timeout=300)
        line = [ln for ln in p.stdout.splitlines() if ln.startswith("PROBE ")]
        if p.returncode != 0 or not line:
            write_row(out, {"case": "compile_sm_90_" + ("cold" if label == "cold" else "cached"), "kind": "compile",
                            "impl": "triton", "unit": "ms",
                            "check": "ERROR probe failed: " + (p.stderr.strip().splitlines() or ["?"])[-1][:300]})
            return
        results.append(json.loads(line[0][6:]))
    cold, warm = results
    check = "ok" if cold["ok"] and warm["ok"] else "FAIL matmul result"
    write_row(out, {"case": "compile_sm_90_cold", "kind": "compile", "impl": "triton", "dtype": "f16",
                    "shape": "512x512x512", "ms": cold["matmul_first_ms"], "value": cold["matmul_first_ms"], "unit": "ms",
                    "reps": 1, "check": check,
                    "note": "tutorial matmul, one config: first launch = compile + load + run, empty cache, Triton "
                            "already initialised by an add kernel (that first kernel of the process: %.0f ms); a "
                            "launch afterwards %.3f ms" % (cold["add_first_ms"], cold["matmul_again_ms"])})
    write_row(out, {"case": "compile_sm_90_cached", "kind": "compile", "impl": "triton", "dtype": "f16",
                    "shape": "512x512x512", "ms": warm["matmul_first_ms"], "value": warm["matmul_first_ms"],
                    "unit": "ms", "reps": 1, "check": check,
                    "note": "same, new process, Triton's disk cache warm (kiln's cached row is its in-memory cache); "
                            "an in-process launch afterwards %.3f ms" % warm["matmul_again_ms"]})


# ----------------------------------------------------------- input fusion ----
def graph_replays(fn, nsets):
    """fn(i) -> output tensor, captured once per set in a CUDA graph (after warm-up launches on a
    side stream, as torch's CUDA-graph docs do). Returns (replay(i), outputs): outputs[i] is the
    tensor set i's replay writes."""
    torch.cuda.synchronize()
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for i in range(nsets):
            for _ in range(2):
                fn(i)
    torch.cuda.current_stream().wait_stream(s)
    graphs, outs = [], []
    for i in range(nsets):
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            o = fn(i)
        graphs.append(g)
        outs.append(o)
    return (lambda i: graphs[i].replay()), outs


def fusion_peers(base, eager, eager_note, nsets, check, args, out, flop):
    """The peers of an input-fusion case: torch eager (eager(i) -> output) and, on CUDA, the
    same captured in a CUDA graph; check(output) -> (ok, text) before timing."""
    impls = [("torch.eager", eager_note)]
    if CUDA:
        impls.append(("torch.eager+graph", "the eager ops captured in a CUDA graph (no Python launch gaps)"))
    for name, note in impls:
        row = dict(base, impl=name, note=note)
        try:
            if name == "torch.eager":
                fn = eager
                got = eager(0)
                sync()
            else:
                fn, outs = graph_replays(eager, nsets)
                poison(outs[0])
                fn(0)
                sync()
                got = outs[0]
            ok, row["check"] = check(got)
            if ok:
                time_row(row, fn, nsets, args.budget_ms, flop / 1e12)
        except Exception as e:
            row["check"] = "ERROR %s: %s" % (type(e).__name__, str(e)[:300])
        write_row(out, row)


def case_gemm_cvt(c, args, out):
    """C = A.to(dtype) @ B with A f32: eager is a convert kernel and a cuBLAS GEMM."""
    M, N, K = c["dims"]
    dt = DT[c["dtype"]]
    flop, nbytes = 2.0 * M * N * K, float(M * K * 4 + (K * N + M * N) * 2)
    nsets = nsets_for(int(nbytes))
    A = [rand((M, K), torch.float32) for _ in range(nsets)]
    B = [rand((K, N), dt) for _ in range(nsets)]
    C = [torch.empty((M, N), device=DEV, dtype=dt) for _ in range(nsets)]
    ref = A[0].to(dt).double() @ B[0].double()      # the rounded A: what the convert produces
    base = {"case": c["id"] + args.suffix, "kind": "gemm_cvt", "dtype": c["dtype"], "shape": shape_str(c["dims"]),
            "flop": flop, "bytes": nbytes, "unit": "TFLOP/s"}

    def eager(i):
        return torch.matmul(A[i].to(dt), B[i], out=C[i])

    poison(C[0])
    fusion_peers(base, eager, "torch.matmul(A.to(%s), B): 2 launches (convert, cuBLAS)" % c["dtype"], nsets,
                 lambda got: rel_check(got, ref, c["dtype"]), args, out, flop)
    del A, B, C, ref


def case_gemm_scale(c, args, out):
    """C = (A * S) @ B, S [1, K] broadcast over A's rows: eager is a mul kernel and a cuBLAS GEMM."""
    M, N, K = c["dims"]
    dt = DT[c["dtype"]]
    esz = torch.tensor([], dtype=dt).element_size()
    flop, nbytes = 2.0 * M * N * K, float((M * K + K + K * N + M * N) * esz)
    nsets = nsets_for(int(nbytes))
    A = [rand((M, K), dt) for _ in range(nsets)]
    S = [rand((1, K), dt) for _ in range(nsets)]
    B = [rand((K, N), dt) for _ in range(nsets)]
    C = [torch.empty((M, N), device=DEV, dtype=dt) for _ in range(nsets)]
    ref = (A[0] * S[0]).double() @ B[0].double()    # A * S rounded to dtype, as the graph's mul
    base = {"case": c["id"] + args.suffix, "kind": "gemm_scale", "dtype": c["dtype"], "shape": shape_str(c["dims"]),
            "flop": flop, "bytes": nbytes, "unit": "TFLOP/s"}

    def eager(i):
        return torch.matmul(A[i] * S[i], B[i], out=C[i])

    poison(C[0])
    fusion_peers(base, eager, "torch.matmul(A * S, B): 2 launches (mul, cuBLAS)", nsets,
                 lambda got: rel_check(got, ref, c["dtype"]), args, out, flop)
    del A, S, B, C, ref


def case_conv_cvt(c, args, out):
    """relu(conv2d(x.to(dtype), w) + r), x f32 channels_last: eager is convert, conv, add, relu."""
    Nb, Cc, H, W, K = c["dims"]
    dt = DT[c["dtype"]]
    esz = torch.tensor([], dtype=dt).element_size()
    flop = 2.0 * Nb * H * W * K * Cc
    nbytes = float(Nb * Cc * H * W * 4 + (K * Cc + 2 * Nb * K * H * W) * esz)
    nsets = nsets_for(int(nbytes))
    cl = torch.channels_last
    X = [rand((Nb, Cc, H, W), torch.float32, cl) for _ in range(nsets)]
    Wt = [rand((K, Cc, 1, 1), dt, cl) for _ in range(nsets)]
    R = [rand((Nb, K, H, W), dt, cl) for _ in range(nsets)]
    x2 = X[0].to(dt).permute(0, 2, 3, 1).reshape(-1, Cc).double()    # the rounded x: what the convert produces
    w2 = Wt[0].reshape(K, Cc).double()
    ref = torch.relu(x2 @ w2.t() + R[0].permute(0, 2, 3, 1).reshape(-1, K).double())
    del x2
    base = {"case": c["id"] + args.suffix, "kind": "conv_cvt", "dtype": c["dtype"], "shape": shape_str(c["dims"]),
            "flop": flop, "bytes": nbytes, "unit": "TFLOP/s"}

    def eager(i):
        return torch.relu(F.conv2d(X[i].to(dt), Wt[i]) + R[i])

    fusion_peers(base, eager, "x.to(%s), conv2d, add, relu: 4 launches (cuDNN conv), channels_last" % c["dtype"], nsets,
                 lambda got: rel_check(got.permute(0, 2, 3, 1).reshape(-1, K), ref, c["dtype"]), args, out, flop)
    del X, Wt, R, ref


def case_swz(c, args, out):
    """The output-swizzle cases: relu(conv2d(x, w, padding=S//2) + r), x channels_last, the
    output NHWC, r channels_last (A = 1) or contiguous NCHW (A = 0); torch eager and graphed."""
    Nb, Cc, H, W, K, S, A = c["dims"]
    dt = DT[c["dtype"]]
    esz = torch.tensor([], dtype=dt).element_size()
    flop = 2.0 * Nb * H * W * K * Cc * S * S
    nbytes = float((Nb * Cc * H * W + K * Cc * S * S + 2 * Nb * K * H * W) * esz)
    nsets = nsets_for(int(nbytes))
    cl = torch.channels_last
    X = [rand((Nb, Cc, H, W), dt, cl) for _ in range(nsets)]
    Wt = [rand((K, Cc, S, S), dt, cl) for _ in range(nsets)]
    R = [rand((Nb, K, H, W), dt, cl if A == 1 else None) for _ in range(nsets)]
    ref = torch.relu(F.conv2d(X[0].double(), Wt[0].double(), padding=S // 2) + R[0].double()).permute(0, 2, 3, 1)
    base = {"case": c["id"] + args.suffix, "kind": "swz", "dtype": c["dtype"], "shape": shape_str(c["dims"]),
            "flop": flop, "bytes": nbytes, "unit": "TFLOP/s"}

    def eager(i):
        return torch.relu(F.conv2d(X[i], Wt[i], padding=S // 2) + R[i]).permute(0, 2, 3, 1)

    fusion_peers(base, eager, "conv2d, add, relu: 3 launches (cuDNN conv), x channels_last, r %s" %
                 ("channels_last" if A == 1 else "NCHW"), nsets,
                 lambda got: rel_check(got, ref, c["dtype"]), args, out, flop)
    del X, Wt, R, ref


CASES = {"gemm": case_gemm, "qgemm": case_qgemm, "conv": case_conv, "ew": case_ew, "compile": case_compile,
         "rowsum": case_rows, "rms": case_rows, "softmax": case_rows, "rmsnorm": case_fused_rows,
         "smmask": case_fused_rows, "lse": case_fused_rows,
         "gemm_cvt": case_gemm_cvt, "gemm_scale": case_gemm_scale, "conv_cvt": case_conv_cvt,
         "swz": case_swz}


def run_kiln(args, case_id, out, suffix=""):
    cmd = [args.kiln, os.path.join(HERE, "gpu_kiln.lua"), out, "--case", case_id, "--cases", args.cases,
           "--budget-ms", str(args.budget_ms), "--device", args.kiln_device]
    if suffix:
        cmd += ["--suffix", suffix]
    if args.ptx:
        cmd += ["--ptx", args.ptx]
    env = dict(os.environ)
    if case_id.startswith("compile"):
        env["CUDA_CACHE_DISABLE"] = "1"   # cold: the driver compiles kiln's PTX every load
    t0 = time.perf_counter()
    try:
        p = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=args.kiln_timeout)
    except subprocess.TimeoutExpired as e:
        sys.stdout.write((e.stdout or b"").decode(errors="replace") if isinstance(e.stdout, bytes) else (e.stdout or ""))
        write_row(out, {"case": case_id + suffix, "kind": "?", "impl": "kiln", "unit": "-",
                        "check": "ERROR kiln did not finish within %d s (killed)" % args.kiln_timeout})
        return
    sys.stdout.write(p.stdout)
    if p.returncode != 0:
        sys.stdout.write(p.stderr)
        print("kiln exited with %d on %s (%.1f s)" % (p.returncode, case_id, time.perf_counter() - t0), flush=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("out", nargs="?")
    ap.add_argument("--kiln", help="the kiln executable: run kiln's side of each case first")
    ap.add_argument("--kiln-device", default="cuda", help="device for kiln's side (host: a dry run here)")
    ap.add_argument("--kiln-timeout", type=int, default=150, help="seconds for kiln's side of one case")
    ap.add_argument("--case", action="append", default=[])
    ap.add_argument("--cases", default=os.path.join(HERE, "gpu_cases.txt"))
    ap.add_argument("--budget-ms", type=float, default=600.0)
    ap.add_argument("--ptx", help="directory for kiln's kernel binaries (passed to gpu_kiln.lua)")
    ap.add_argument("--suffix", default="", help=argparse.SUPPRESS)
    ap.add_argument("--no-triton", action="store_true", help="skip the Triton GEMM")
    ap.add_argument("--no-compile", action="store_true", help="skip torch.compile and the Triton compile probe")
    ap.add_argument("--no-repeat", action="store_true", help="skip the repeat of the first GEMM at the end")
    ap.add_argument("--probe-triton-compile", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.probe_triton_compile:
        probe_triton_compile()
        return
    if not args.out:
        ap.error("the output file is required")
    args.out = os.path.abspath(args.out)
    args.cases = os.path.abspath(args.cases)
    if args.ptx:
        os.makedirs(args.ptx, exist_ok=True)
        args.ptx = os.path.abspath(args.ptx)
    if args.kiln:
        args.kiln = os.path.abspath(args.kiln)
    if CUDA:
        # f32 accumulation for the fp16/bf16 GEMMs (no reduced-precision split-K reductions)
        try:
            torch.backends.cuda.matmul.allow_fp16_reduced_precision_reduction = False
            torch.backends.cuda.matmul.allow_bf16_reduced_precision_reduction = False
        except Exception as e:
            print("note: could not turn off reduced-precision reductions: %r" % (e,), flush=True)
        props = torch.cuda.get_device_properties(0)
        print("peers on %s (%d SMs), torch %s, triton %s, cuBLAS via torch, cuDNN %s" % (
            props.name, props.multi_processor_count, torch.__version__,
            triton.__version__ if HAVE_TRITON else "missing (%s)" % TRITON_ERR, torch.backends.cudnn.version()),
            flush=True)
    else:
        print("peers on the CPU (no CUDA device): a dry run of the harness, times are not comparable", flush=True)
    cases = read_cases(args.cases)
    if args.case:
        known = {c["id"]: c for c in cases}
        cases = [known[i] for i in args.case]
    t_start = time.perf_counter()
    for c in cases:
        t0 = time.perf_counter()
        if args.kiln:
            run_kiln(args, c["id"], args.out)
        try:
            CASES[c["kind"]](c, args, args.out)
        except Exception as e:
            write_row(args.out, {"case": c["id"], "kind": c["kind"], "impl": "peers", "unit": "-",
                                 "check": "ERROR %s: %s" % (type(e).__name__, str(e)[:300])})
        if CUDA:
            torch.cuda.empty_cache()
        print("  [%s: %.1f s, %.0f s in all]" % (c["id"], time.perf_counter() - t0, time.perf_counter() - t_start),
              flush=True)
    # the same version timed twice: kiln and cuBLAS on the first GEMM case again
    gemms = [c for c in cases if c["kind"] == "gemm"]
    if gemms and not args.no_repeat:
        c = gemms[0]
        if args.kiln:
            run_kiln(args, c["id"], args.out, suffix="#2")
        sub = argparse.Namespace(**vars(args))
        sub.suffix, sub.no_triton = "#2", True
        case_gemm(c, sub, args.out)
    print("peers done in %.0f s" % (time.perf_counter() - t_start), flush=True)


if __name__ == "__main__":
    main()

-- examples/gemm.lua — a matrix multiply (with a bias and a transposed B) compiled for the
-- best device present, checked against the reference evaluator, with its kernel IR.
--   scripts/kiln examples/gemm.lua [M N K]
local M, N, K = tonumber(arg and arg[1]) or 129, tonumber(arg and arg[2]) or 200, tonumber(arg and arg[3]) or 77
local dev = kiln.device(os.getenv("KILN_DEVICE") or "auto")

local g = kiln.graph("gemm")
local a = g:param("a", { M, K }, "f32")
local b = g:param("b", { N, K }, "f32")          -- used transposed
local bias = g:param("bias", { N }, "f32")       -- broadcast over rows
g:output(g:dot(a, b, { transpose_b = true }) + bias)

local p = kiln.compile(g, { target = dev.arch })
local inputs = { a = kiln.rand { M, K }, b = kiln.rand { N, K }, bias = kiln.rand { N } }
local got = p:run(inputs, { device = dev })
local want = g:eval(inputs)
local cmp = kiln.compare(got, want)
for _, k in ipairs(p:kernels()) do
  print(string.format("kernel %s: grid %d, block %d, LDS %d bytes, perf config %s", k.name, k.grid, k.block, k.lds_bytes, k.perf_config))
end
print(string.format("%dx%dx%d on %s: max_abs_err=%.3g max_rel_err=%.3g compile=%.1f ms", M, N, K, dev.arch, cmp.max_abs, cmp.max_rel, p.compile_ms))
local scale = 0
for _, v in ipairs(want:flat()) do scale = math.max(scale, math.abs(v)) end
assert(kiln.allclose(got, want, { rtol = 1e-5, atol = 1e-5 * scale }), "gemm: result differs from the reference")
print("the kernel after output fusion (rock-align-tiling):")
for _, snap in ipairs(p:kernels()[1].ir) do
  if snap.pass == "rock-align-tiling" then print(snap.text) end
end

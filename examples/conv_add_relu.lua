-- examples/conv_add_relu.lua — the seed case: an NHWC 1x1 convolution 2048 -> 512 on a
-- 7x7 image, plus a residual add and a relu, compiled into ONE fused kernel and checked
-- against the reference evaluator on fresh random inputs, in f32 and f16. Where the GPU's
-- split-K heuristic splits the long K of the 49 output rows of batch 1 (sm_90, gfx942), the
-- plan is the split GEMM and one element-wise kernel that sums its partials and applies the
-- add and the relu: still no separate kernel for the add or the relu.
--
--   scripts/kiln examples/conv_add_relu.lua            batch 1, best device present
--   scripts/kiln examples/conv_add_relu.lua --batch512 batch 512
--   KILN_DEVICE=host scripts/kiln examples/conv_add_relu.lua
local batch = 1
for _, a in ipairs(arg or {}) do
  if a == "--batch512" then batch = 512 end
end

local dev = kiln.device(os.getenv("KILN_DEVICE") or "auto")
print(string.format("device: %s (%s)", dev.name, dev.arch))

local ok_all = true
for _, dtype in ipairs { "f32", "f16" } do
  local g = kiln.graph("conv_add_relu_" .. dtype)
  local x = g:param("x", { batch, 2048, 7, 7 }, dtype, { layout = "NHWC" })
  local w = g:param("w", { 512, 2048, 1, 1 }, dtype, { layout = "KYXC" })
  local r = g:param("r", { batch, 512, 7, 7 }, dtype, { layout = "NHWC" })
  g:output((g:conv(x, w) + r):relu())

  local p = kiln.compile(g, { target = dev.arch })
  local inputs = {
    x = kiln.rand({ batch, 2048, 7, 7 }, dtype, { layout = "NHWC" }),
    w = kiln.rand({ 512, 2048, 1, 1 }, dtype, { layout = "KYXC" }),
    r = kiln.rand({ batch, 512, 7, 7 }, dtype, { layout = "NHWC" }),
  }
  local want = g:eval(inputs)
  local t0 = kiln.clock_ms()
  local got = p:run(inputs, { device = dev })       -- the first run also loads (JIT-compiles) the kernel
  local first_ms = kiln.clock_ms() - t0
  t0 = kiln.clock_ms()
  got = p:run(inputs, { device = dev })
  local run_ms = kiln.clock_ms() - t0
  -- a 2048-term dot product loses absolute (not relative) precision near zero: compare
  -- relative to the output's scale (f32: 1e-5, f16: 1e-2 of the largest |value|)
  local tol = dtype == "f32" and 1e-5 or 1e-2
  local scale = 0
  for _, v in ipairs(want:flat()) do scale = math.max(scale, math.abs(v)) end
  local close = kiln.allclose(got, want, { rtol = tol, atol = tol * scale })
  local cmp = kiln.compare(got, want)
  local ks = p:kernels()
  local fused = #ks == 1 or (#ks == 2 and ks[1].kind == "gemm" and ks[2].kind == "elementwise") -- split-K
  ok_all = ok_all and close and fused
  print(string.format("%-4s kernels=%d  max_abs_err=%.3g (%.2g of max |out| %.3g)  compile=%.1f ms  first run (with load)=%.1f ms  run=%.2f ms  %s",
    dtype, #p:kernels(), cmp.max_abs, cmp.max_abs / scale, scale, p.compile_ms, first_ms, run_ms, close and "OK" or "MISMATCH"))
end
if not ok_all then error("conv_add_relu: results differ from the reference (or the epilogue is not fused)") end

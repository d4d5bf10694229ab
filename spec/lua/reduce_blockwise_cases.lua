-- reduce_blockwise_cases.lua — the reduction / softmax cases of reduce_blockwise_spec.lua
-- (host) and reduce_blockwise_gpu_spec.lua (CUDA): each case a graph and fresh random
-- inputs; check compares against g:eval with the tolerances of fused_gen.check.
local kiln = require "kiln"
local gen = require "fused_gen"
local M = {}

M.LENGTHS = { 1, 7, 33, 1000, 4097 }
M.DTYPES = { "f32", "f16", "bf16" }

-- sum / mean / max (and min as -max(-x)) of x over axes, one graph, four outputs
local function reductions(name, shape, dtype, axes, keep)
  local g = kiln.graph(name)
  local x = g:param("x", shape, dtype)
  g:output(x:sum(axes, keep), x:mean(axes, keep), x:reduce_max(axes, keep), -((-x):reduce_max(axes, keep)))
  return g
end

-- Every case: { name, g, inputs }.
function M.cases()
  local out = {}
  local function add(name, g, shape, dtype, k)
    out[#out + 1] = { name = name, g = g, dtype = dtype, inputs = { x = kiln.rand(shape, dtype) }, k = k }
  end
  for _, dt in ipairs(M.DTYPES) do
    for _, n in ipairs(M.LENGTHS) do
      -- rows (the innermost axis reduced) and columns (axis 0 of a row-major matrix)
      add(("%s rows 5x%d"):format(dt, n), reductions("rows", { 5, n }, dt, { 1 }), { 5, n }, dt, n)
      add(("%s cols %dx6"):format(dt, n), reductions("cols", { n, 6 }, dt, { 0 }, true), { n, 6 }, dt, n)
      local gs = kiln.graph("softmax_rows")
      gs:output(gs:param("x", { 3, n }, dt):softmax(-1))
      add(("%s softmax rows 3x%d"):format(dt, n), gs, { 3, n }, dt)
      local gc = kiln.graph("softmax_cols")
      gc:output(gc:param("x", { n, 5 }, dt):softmax(0))
      add(("%s softmax cols %dx5"):format(dt, n), gc, { n, 5 }, dt)
    end
  end
  -- every axis set of a rank-3 tensor, with and without keepdims
  for _, axes in ipairs { { 0 }, { 1 }, { 2 }, { 0, 1 }, { 0, 2 }, { 1, 2 }, { 0, 1, 2 } } do
    for _, keep in ipairs { false, true } do
      local shape, k = { 3, 17, 40 }, 1
      for _, a in ipairs(axes) do k = k * shape[a + 1] end
      add(("f32 axes {%s} keepdims %s of 3x17x40"):format(table.concat(axes, ","), tostring(keep)),
          reductions("axes", shape, "f32", axes, keep), shape, "f32", k)
    end
  end
  -- long rows: several chunks per lane (two-pass softmax, LDS across waves; split = 1 keeps
  -- the softmax one kernel on GPU targets, whose heuristic would make it multi-block)
  add("f32 rows 4x70000", reductions("long", { 4, 70000 }, "f32", { 1 }), { 4, 70000 }, "f32", 70000)
  local gl = kiln.graph("softmax_long")
  gl:output(gl:hint(gl:param("x", { 2, 70000 }, "f16"):softmax(-1), { split = 1 }))
  add("f16 softmax rows 2x70000", gl, { 2, 70000 }, "f16")
  return out
end

-- got and want: lists of the outputs (table.pack of p:run / g:eval), per output
-- k: the number of elements each output reduces (nil for softmax). Outputs 1 and 2 of a
-- reduction case are the sum and the mean: a sum of k inputs of magnitude <= 1 has
-- magnitude ~sqrt(k) (the mean ~1/sqrt(k)), and rounding errors are relative to that, not
-- to a result that cancels to near 0, so their absolute tolerance is rtol * max(largest
-- |want|, sqrt(k) (1/sqrt(k) for the mean)); max and min, and softmax, use fused_gen.check.
function M.check(got, want, dtype, k)
  if got.n ~= want.n then return false, ("%d outputs, the reference %d"):format(got.n, want.n) end
  for i = 1, want.n do
    local ok, report
    if k and i <= 2 then
      local tol = (dtype == "f32") and 1e-5 or 1e-2
      local scale = i == 1 and math.sqrt(k) or 1 / math.sqrt(k)
      for _, v in ipairs(want[i]:flat()) do scale = math.max(scale, math.abs(v)) end
      ok, report = kiln.allclose(got[i], want[i], { rtol = tol, atol = tol * scale })
    else
      ok, report = gen.check(got[i], want[i], dtype)
    end
    if not ok then return false, ("output %d: %s"):format(i, tostring(report and report.summary or report)) end
  end
  return true
end

return M

-- reduce_split_cases.lua — multi-block reductions (passes/reduce_split.c) for
-- reduce_split_spec.lua (host) and scripts/gpu_suite.lua (a device): each case a graph
-- whose reductions carry a split hint (or none: the target's heuristic), fresh random
-- inputs, and the number of kernels (two per reduction: the min's negations fuse, -x into its
-- partial kernel and the outer one into its final kernel); checked against g:eval with
-- reduce_blockwise_cases.check (sums and means: tolerance scaled by sqrt(k)).
local kiln = require "kiln"
local M = {}

-- the split a case forces on an outermost reduced extent e: 4 where it divides, else e's
-- smallest factor (every partial covers the same number of elements)
local function split_of(e)
  if e % 4 == 0 then return 4 end
  for f = 2, e do if e % f == 0 then return f end end
end

-- sum / mean / max / min (-max(-x)) of x over axes, each split `split` ways (nil: the
-- heuristic decides), one graph, four outputs
function M.reductions(name, shape, dtype, axes, keep, split)
  local g = kiln.graph(name)
  local x = g:param("x", shape, dtype)
  local function h(v) return split and g:hint(v, { split = split }) or v end
  g:output(h(x:sum(axes, keep)), h(x:mean(axes, keep)), h(x:reduce_max(axes, keep)), -(h((-x):reduce_max(axes, keep))))
  return g
end

-- Every case: { name, g, dtype, inputs, k (elements per output), kernels }.
function M.cases()
  local out = {}
  local function add(name, shape, dtype, axes, keep, split)
    local k = 1
    for _, a in ipairs(axes) do k = k * shape[a + 1] end
    out[#out + 1] = { name = name, g = M.reductions("split", shape, dtype, axes, keep, split), dtype = dtype,
                      inputs = { x = kiln.rand(shape, dtype) }, k = k, kernels = 8 }
  end
  for _, dt in ipairs { "f32", "f16", "bf16" } do
    add(dt .. " rows 4x4096 split 8", { 4, 4096 }, dt, { 1 }, false, 8)
    add(dt .. " rows 2x70000 split 16 (long rows)", { 2, 70000 }, dt, { 1 }, false, 16)
    add(dt .. " rows 3x96 split 3 (short rows)", { 3, 96 }, dt, { 1 }, true, 3)
    add(dt .. " cols 4096x6 split 8 keepdims", { 4096, 6 }, dt, { 0 }, true, 8)
  end
  add("f32 1x65536 split 64", { 1, 65536 }, "f32", { 1 }, false, 64)
  for _, axes in ipairs { { 0 }, { 1 }, { 2 }, { 0, 1 }, { 0, 2 }, { 1, 2 }, { 0, 1, 2 } } do
    for _, keep in ipairs { false, true } do
      local shape = { 6, 16, 40 }
      local s = split_of(shape[axes[1] + 1])
      add(("f32 axes {%s} keepdims %s of 6x16x40 split %d"):format(table.concat(axes, ","), tostring(keep), s),
          shape, "f32", axes, keep, s)
    end
  end
  return out
end

-- the heuristic's shapes (few long rows: two kernels each on a GPU target) and shapes it
-- leaves as one kernel: { name, shape, axes, split on a GPU target }
M.HEURISTIC = {
  { "1x16777216 sum", { 1, 16777216 }, { 1 }, true },
  { "4x4194304 sum", { 4, 4194304 }, { 1 }, true },
  { "16x1048576 sum", { 16, 1048576 }, { 1 }, true },
  { "128x262144 sum (rows cover a quarter of the CUs)", { 128, 262144 }, { 1 }, false },
  { "262144x8 column sum", { 262144, 8 }, { 0 }, true },
  { "8192x8192 sum (many rows)", { 8192, 8192 }, { 1 }, false },
  { "4x4096 sum (short rows)", { 4, 4096 }, { 1 }, false },
}

return M

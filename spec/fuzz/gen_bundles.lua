-- spec/fuzz/gen_bundles.lua — writes the seed corpus of the bundle fuzz targets:
--   build/kiln spec/fuzz/gen_bundles.lua OUTDIR
-- A few bundles of small graphs (a dot with a bias and a relu; element-wise f16 with a
-- constant; a reduction and a softmax; two kernels with an intermediate), for the host
-- target, and the dot graph also for sm_90 (PTX) and gfx942 (HSACO), which compile
-- without a GPU. Small shapes keep the bundles a few KB; the corpus is generated at test
-- time (nothing binary is committed). Deterministic (fixed graphs, fixed constants).
local out = assert(arg[1], "usage: kiln spec/fuzz/gen_bundles.lua OUTDIR")

local function dot_relu()
  local g = kiln.graph("dot_relu")
  local a = g:param("a", { 4, 8 }, "f32")
  local b = g:param("b", { 6, 8 }, "f32")
  local bias = g:param("bias", { 6 }, "f32")
  g:output((g:dot(a, b, { transpose_b = true }) + bias):relu())
  return g
end

local function ew_const()
  local g = kiln.graph("ew_const")
  local x = g:param("x", { 1, 4, 2, 3 }, "f16", { layout = "NHWC" })
  local c = g:constant(kiln.tensor({ { { 0.5 } }, { { -1.25 } }, { { 2 } }, { { 3 } } }, "f16"))   -- 4x1x1: per channel
  g:output((x * c + 1.5):exp())
  return g
end

local function reduce_softmax()
  local g = kiln.graph("reduce_softmax")
  local x = g:param("x", { 3, 5 }, "f32")
  g:output(x:softmax(1))
  g:output(x:sum({ 0 }))
  return g
end

local function two_kernels()
  local g = kiln.graph("two_kernels")
  local a = g:param("a", { 4, 4 }, "f32")
  local b = g:param("b", { 4, 4 }, "f32")
  local d = g:dot(a, b)
  g:output(g:dot(d:sigmoid(), b) - d)
  return g
end

local cases = {
  { "dot_relu_host", dot_relu, { "host" } },
  { "ew_const_host", ew_const, { "host" } },
  { "reduce_softmax_host", reduce_softmax, { "host" } },
  { "two_kernels_host", two_kernels, { "host" } },
  { "dot_relu_gpu", dot_relu, { "host", "sm_90", "gfx942" } },
}
for _, c in ipairs(cases) do
  local ok, err = pcall(function()
    local p = kiln.compile(c[2](), { targets = c[3], cache = false })
    p:save(out .. "/" .. c[1] .. ".klb")
  end)
  if not ok then io.stderr:write("gen_bundles: ", c[1], ": ", tostring(err), "\n"); os.exit(1) end
end

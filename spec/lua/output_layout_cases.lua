-- output_layout_cases.lua — graphs whose outputs declare a memory layout
-- (g:output(v, {layout = ...} | {strides = ...})), shared by output_layout_spec.lua (host)
-- and scripts/gpu_suite.lua: every kernel kind (conv and dot with epilogues, element-wise,
-- reduce, softmax, concat, copies of params, GEMM + reduce, split-K), f32 / f16 / bf16,
-- permutations and padded (gapped) strides, one value returned in several layouts, and
-- the seeded random fused graphs of fused_gen.lua with a random layout on every output.
--   M.cases() -> { {name=, g=, inputs=, dtypes=, strides={[i]=declared|nil}, kernels=N|nil}, ... }
--   M.random(count) -> the same for fused_gen.gen(1..count), each output relaid
--   M.check(case, got, want) -> ok, message: every output in its declared strides (run and
--     reference alike) and within fused_gen.check's tolerance of the reference
local kiln = require "kiln"
local gen = require "fused_gen"
local M = {}

-- Strides of shape laid out in order perm (outermost first); gap > 0 pads the innermost
-- dim's run by gap elements (a gapped layout: the buffer is larger than the tensor).
function M.perm_strides(shape, perm, gap)
  local s, acc = {}, 1
  for i = #perm, 1, -1 do
    local d = perm[i] + 1
    s[d] = acc
    acc = acc * (shape[d] + ((i == #perm and gap) and gap or 0))
  end
  return s
end

local function layout_opts(shape, perm, gap) return { strides = M.perm_strides(shape, perm, gap) } end

local seed = 0
local function case(list, name, params, build, kernels)
  local g = kiln.graph((name:gsub("[^%w]", "_")))
  local p, inputs = {}, {}
  for _, d in ipairs(params) do
    seed = seed + 1
    p[d[1]] = g:param(d[1], d[2], d[3], d[4])
    inputs[d[1]] = kiln.rand(d[2], d[3], { seed = 9700 + seed, layout = d[4] and d[4].layout })
  end
  local outs = { build(g, p) } -- value, opts, value, opts, ... (opts may be false)
  local args, strides, dtypes = {}, {}, {}
  for i = 1, #outs, 2 do
    local v, o = outs[i], outs[i + 1]
    args[#args + 1] = v
    dtypes[#dtypes + 1] = v.dtype
    if o then
      args[#args + 1] = o
      strides[#dtypes] = o.strides or kiln.zeros(v.shape, v.dtype, { layout = o.layout }).strides
    end
  end
  g:output(table.unpack(args))
  list[#list + 1] = { name = name, g = g, inputs = inputs, dtypes = dtypes, strides = strides, kernels = kernels }
end

function M.cases()
  local L = {}
  for _, dt in ipairs { "f32", "f16", "bf16" } do
    local nhwc, kyxc = { layout = "NHWC" }, { layout = "KYXC" }
    -- conv: NHWC operands (the accumulator's natural layout is NHWC), outputs NCHW / NHWC / gapped
    case(L, dt .. " conv NHWC in, relu(c + bias) out NCHW", {
      { "x", { 2, 24, 9, 7 }, dt, nhwc }, { "w", { 40, 24, 3, 3 }, dt, kyxc }, { "bias", { 1, 40, 1, 1 }, dt } },
      function(g, p) return (g:conv(p.x, p.w, { padding = { 1, 1, 1, 1 } }) + p.bias):relu(), { layout = "NCHW" } end, 1)
    case(L, dt .. " conv NCHW in, out NHWC and c*2 out CHWN", {
      { "x", { 3, 16, 8, 8 }, dt }, { "w", { 24, 16, 3, 3 }, dt } },
      function(g, p)
        local c = g:conv(p.x, p.w, { stride = { 2, 2 } })
        return c, { layout = "NHWC" }, c * 2, { layout = "CHWN" }
      end, 1)
    case(L, dt .. " conv NHWC in, out NHWC with a padded C run", {
      { "x", { 1, 8, 6, 6 }, dt, nhwc }, { "w", { 20, 8, 1, 1 }, dt, kyxc } },
      function(g, p) return g:conv(p.x, p.w), layout_opts({ 1, 20, 6, 6 }, { 0, 2, 3, 1 }, 3) end, 1)
    -- dot: col-major, gapped, the same value in two layouts, an epilogue with a residual
    case(L, dt .. " dot out col-major, relu(d + r) gapped, d again row-major", {
      { "a", { 37, 29 }, dt }, { "b", { 29, 45 }, dt }, { "r", { 37, 45 }, dt } },
      function(g, p)
        local d = g:dot(p.a, p.b)
        return d, { layout = "col_major" }, (d + p.r):relu(), { strides = { 1, 40 } }, d, false
      end, 1)
    case(L, dt .. " batched dot out [2,0,1]", { { "a", { 3, 20, 16 }, dt }, { "b", { 3, 16, 24 }, dt } },
      function(g, p) return g:dot(p.a, p.b):tanh(), { layout = "2,0,1" } end, 1)
    -- element-wise, reduce, softmax, concat, a param returned in another layout
    case(L, dt .. " element-wise out [2,0,1] and [1,2,0]", { { "a", { 5, 7, 33 }, dt }, { "b", { 5, 7, 33 }, dt } },
      function(g, p)
        local s = p.a + p.b
        return s:exp(), { layout = "2,0,1" }, s, { layout = "1,2,0" }
      end)
    case(L, dt .. " param out col-major (a copy)", { { "a", { 6, 10 }, dt } },
      function(g, p) return p.a, { layout = "col_major" } end)
    case(L, dt .. " reduce_sum keepdims=false out col-major, reduce_max out [2,1,0]", { { "a", { 6, 5, 40 }, dt } },
      function(g, p) return p.a:sum({ 2 }), { layout = "col_major" }, p.a:reduce_max({ 1 }, true), { layout = "2,1,0" } end)
    case(L, dt .. " one reduce_sum out col-major and row-major (a copy kernel)", { { "a", { 7, 9, 20 }, dt } },
      function(g, p)
        local r = p.a:sum({ 2 })
        return r, { layout = "col_major" }, r, false, r, { layout = "col_major" }
      end, 2)
    case(L, dt .. " softmax out [1,0] gapped", { { "a", { 12, 50 }, dt } },
      function(g, p) return p.a:softmax(1), layout_opts({ 12, 50 }, { 1, 0 }, 2) end)
    case(L, dt .. " concat out col-major", { { "a", { 8, 6 }, dt }, { "b", { 8, 11 }, dt } },
      function(g, p) return g:concat({ p.a, p.b }, 1), { layout = "col_major" } end)
  end
  -- GEMM + reduce (one kernel with atomic adds on targets that have them) and split-K (f32)
  case(L, "f32 reduce_sum(dot) out col-major", { { "a", { 2, 24, 40 }, "f32" }, { "b", { 2, 40, 36 }, "f32" } },
    function(g, p) return g:dot(p.a, p.b):sum({ 0 }), { layout = "col_major" } end)
  case(L, "f32 narrow K-heavy dot out col-major (split-K where the target splits)",
    { { "a", { 16, 4096 }, "f32" }, { "b", { 4096, 16 }, "f32" } },
    function(g, p) return g:dot(p.a, p.b), { layout = "col_major" } end, nil)
  return L
end

-- A random permutation (and sometimes a gap) for each output of fused_gen.gen(seed).
function M.random(count)
  local L = {}
  for s = 1, count do
    local c = gen.gen(s)
    local state = s * 40503 % 65536
    local function r(n)
      state = (state * 1103515245 + 12345) % 2147483648
      return state % n + 1
    end
    local outs, args, strides = c.g:outputs(), {}, {}
    local desc = {}
    for i, v in ipairs(outs) do
      local shape, perm = v.shape, {}
      for d = 0, #shape - 1 do perm[#perm + 1] = d end
      for d = #perm, 2, -1 do
        local j = r(d)
        perm[d], perm[j] = perm[j], perm[d]
      end
      local gap = r(4) == 1 and r(3) or nil
      args[#args + 1] = v
      if #shape > 0 then
        strides[i] = M.perm_strides(shape, perm, gap)
        args[#args + 1] = { strides = strides[i] }
        desc[#desc + 1] = "[" .. table.concat(perm, ",") .. "]" .. (gap and ("+" .. gap) or "")
      end
    end
    c.g:output(table.unpack(args))
    c.strides = strides
    c.name = c.name .. " out " .. table.concat(desc, " ")
    L[#L + 1] = c
  end
  return L
end

local function same_strides(t, want)
  for d = 1, #want do
    if t.shape[d] > 1 and t.strides[d] ~= want[d] then return false end
  end
  return true
end

function M.check(c, got, want)
  if got.n ~= want.n then return false, ("%d outputs, the reference %d"):format(got.n, want.n) end
  for i = 1, want.n do
    local s = c.strides[i]
    if s and not same_strides(got[i], s) then
      return false, ("output %d: strides {%s}, declared {%s}"):format(i, table.concat(got[i].strides, ","), table.concat(s, ","))
    end
    if s and not same_strides(want[i], s) then
      return false, ("output %d: the reference's strides {%s}, declared {%s}"):format(i,
        table.concat(want[i].strides, ","), table.concat(s, ","))
    end
    local ok, report = gen.check(got[i], want[i], c.dtypes[i])
    if not ok then return false, ("output %d: %s"):format(i, tostring(report and report.summary or report)) end
  end
  return true
end

return M

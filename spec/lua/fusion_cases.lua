-- fusion_cases.lua — the fusion shapes of one conv/dot kernel, shared by fusion_spec.lua
-- (host) and fusion_gpu_spec.lua (tag gpu): element-wise prologues fused into the global
-- loads (each producer kind, chains, both operands, a conv input), the primary input
-- (default and hinted), fan-out, several outputs, views after and between epilogue ops,
-- graph-level CSE and scalar immediates; f32, f16 and bf16, odd sizes. Each case says how
-- many kernels it must compile to.
--   M.cases() -> { {name=, g=, inputs=, kernels=, dtypes={...}, check=fn(p, assert)|nil}, ... }
--   M.check(got, want, dtype) -> ok, report
local kiln = require "kiln"
local M = {}

local seed = 0
local function rnd(shape, dt)
  seed = seed + 1
  return kiln.rand(shape, dt, { seed = 7000 + seed })
end

-- A graph with params {name, shape, dtype}; build(g, p) returns the outputs.
local function case(list, name, kernels, params, build, check)
  local g = kiln.graph((name:gsub("[^%w]", "_")))
  local p, inputs = {}, {}
  for _, d in ipairs(params) do
    p[d[1]] = g:param(d[1], d[2], d[3])
    inputs[d[1]] = rnd(d[2], d[3])
  end
  local outs = { build(g, p) }
  g:output(table.unpack(outs))
  local dtypes = {}
  for i, o in ipairs(outs) do dtypes[i] = o.dtype end
  list[#list + 1] = { name = name, g = g, inputs = inputs, kernels = kernels, dtypes = dtypes, check = check }
end

function M.cases()
  local L = {}
  for _, dt in ipairs { "f32", "f16", "bf16" } do
    local M_, N_, K_ = 37, 29, 45 -- odd sizes: every tile padded
    local A, B = { M_, K_ }, { K_, N_ }
    local wide = "f32"                           -- dequantization computes in f32
    local other = dt == "f32" and "f16" or "f32" -- the type a convert producer starts from
    -- prologues
    case(L, dt .. " dot(convert(a " .. other .. "), b)", 1, { { "a", A, other }, { "b", B, dt } },
      function(g, p) return g:dot(p.a:convert(dt), p.b) end)
    if dt == "f16" then
      case(L, "f16 dot(convert(a i8), b)", 1, { { "a", A, "i8" }, { "b", B, "f16" } },
        function(g, p) return g:dot(p.a:convert("f16"), p.b) end)
    end
    case(L, dt .. " dot(a * 0.25, b) (an immediate scale)", 1, { { "a", A, dt }, { "b", B, dt } },
      function(g, p) return g:dot(p.a * 0.25, p.b) end,
      function(p, A) A.are.equal(3, #p:kernels()[1].args, "the scalar is an immediate, not an argument") end)
    case(L, dt .. " dot(a * s[1,K], b)", 1, { { "a", A, dt }, { "s", { 1, K_ }, dt }, { "b", B, dt } },
      function(g, p) return g:dot(p.a * p.s, p.b) end)
    case(L, dt .. " dot((q - z) * s, b) dequantize", 1,
      { { "q", A, "i8" }, { "z", { 1, K_ }, wide }, { "s", { 1, K_ }, wide }, { "b", B, dt } },
      function(g, p) return g:dot(((p.q:convert(wide) - p.z) * p.s):convert(dt), p.b) end)
    case(L, dt .. " dot(relu(a), b + bias[1,N])", 1,
      { { "a", A, dt }, { "b", B, dt }, { "bias", { 1, N_ }, dt } },
      function(g, p) return g:dot(p.a:relu(), p.b + p.bias) end)
    case(L, dt .. " dot(convert(a^T), b) (a transpose behind a convert)", 1,
      { { "a", { K_, M_ }, other }, { "b", B, dt } },
      function(g, p) return g:dot(p.a:convert(dt):transpose { 1, 0 }, p.b) end)
    case(L, dt .. " dot(convert(a) * 2 + 1, b) chain (zero not kept: the padding is masked)", 1,
      { { "a", A, other }, { "b", B, dt } },
      function(g, p) return g:dot(p.a:convert(dt) * 2 + 1, p.b) end)
    -- primary input: default (the largest input) and hinted
    case(L, dt .. " primary input by default: the largest", 1,
      { { "x", A, dt }, { "s", { 1, K_ }, dt }, { "b", B, dt } },
      function(g, p) return g:dot(p.s * p.x, p.b) end,
      function(p, A) A.are.same({ "in1" }, p:kernels()[1].primary_inputs) end)
    case(L, dt .. " primary input hinted", 1, { { "x", A, dt }, { "y", A, dt }, { "b", B, dt } },
      function(g, p)
        g:hint(p.y, { primary = true })
        return g:dot(p.x + p.y, p.b)
      end,
      function(p, A) A.are.same({ "in1" }, p:kernels()[1].primary_inputs) end)
    -- fan-out and several outputs
    local function dotab(g, p) return g:dot(p.a, p.b) end
    local AB = { { "a", A, dt }, { "b", B, dt } }
    case(L, dt .. " swish c * sigmoid(c)", 1, AB, function(g, p)
      local c = dotab(g, p)
      return c * c:sigmoid()
    end)
    case(L, dt .. " where(c, -c, c)", 1, AB, function(g, p)
      local c = dotab(g, p)
      return g:where(c:convert("i1"), -c, c)
    end)
    case(L, dt .. " {c, relu(c)}", 1, AB, function(g, p)
      local c = dotab(g, p)
      return c, c:relu()
    end)
    case(L, dt .. " {relu(c), c * 2 + 1}", 1, AB, function(g, p)
      local c = dotab(g, p)
      return c:relu(), c * 2 + 1
    end)
    case(L, dt .. " two identical dots are one GEMM", 1, AB,
      function(g, p) return g:dot(p.a, p.b):relu(), g:dot(p.a, p.b) * 3 end)
    case(L, dt .. " transpose and reshape between epilogue ops", 1, AB, function(g, p)
      local c = dotab(g, p)
      return ((c + 1):transpose { 1, 0 }:relu():reshape { N_ * M_ } * 2):sigmoid()
    end)
    case(L, dt .. " slice after the dot", 1, AB, function(g, p) return dotab(g, p):slice(0, 3, 30):abs() end)
    case(L, dt .. " broadcast after the dot (new leading dim): the epilogue is split per copy", 1, AB,
      function(g, p) return dotab(g, p):broadcast({ 3, M_, N_ }):relu() end)
    case(L, dt .. " implicit broadcast of the dot by its epilogue, and the dot an output too", 1,
      { { "a", A, dt }, { "b", B, dt }, { "y", { 2, M_, N_ }, dt } },
      function(g, p)
        local c = dotab(g, p)
        return c, (c - p.y):abs()
      end)
    case(L, dt .. " a size-1 dim of the dot grown by its epilogue", 1,
      { { "a", A, dt }, { "b", { K_, 1 }, dt }, { "y", { M_, 13 }, dt } },
      function(g, p) return (g:dot(p.a, p.b) * p.y):relu() end)
    case(L, dt .. " a broadcast into more than 16 copies is a kernel of its own", 2, AB,
      function(g, p) return dotab(g, p):broadcast({ 17, M_, N_ }) + 1 end)
    case(L, dt .. " a producer that is also an output (recomputed in the GEMM's loads)", 2,
      { { "a", A, other }, { "b", B, dt } },
      function(g, p)
        local ac = p.a:convert(dt)
        return g:dot(ac, p.b), ac
      end,
      function(p, A) A.truthy(p:ir("graph-partition"):find("recomputed", 1, true)) end)
    -- conv with a fused convert of its input and the seed epilogue
    case(L, dt .. " conv(convert(x), w) + r, relu", 1,
      { { "x", { 2, 6, 7, 9 }, other }, { "w", { 5, 6, 3, 3 }, dt }, { "r", { 2, 5, 7, 9 }, dt } },
      function(g, p) return (g:conv(p.x:convert(dt), p.w, { padding = { 1, 1, 1, 1 } }) + p.r):relu() end)
    case(L, dt .. " conv(x + 1, w): padding stays zero after the producer", 1,
      { { "x", { 1, 4, 6, 5 }, dt }, { "w", { 3, 4, 3, 3 }, dt } },
      function(g, p) return g:conv(p.x + 1, p.w, { padding = { 1, 1, 1, 1 } }) end)
  end
  return L
end

-- |got - want| <= tol * (|want| + largest |want|): accumulated sums lose absolute precision.
function M.check(got, want, dtype)
  local tol = dtype == "f32" and 1e-5 or dtype == "bf16" and 2e-2 or 1e-2
  local scale = 0
  for _, v in ipairs(want:flat()) do scale = math.max(scale, math.abs(v)) end
  return kiln.allclose(got, want, { rtol = tol, atol = tol * math.max(scale, 1e-30) })
end

return M

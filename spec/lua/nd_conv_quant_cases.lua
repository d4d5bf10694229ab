-- nd_conv_quant_cases.lua — the graph ops MIGraphX graphs need, shared by
-- nd_conv_quant_spec.lua (host) and scripts/gpu_suite.lua (kiln only: no busted):
-- 1-D and 3-D convs with random shapes (stride, padding, dilation, groups, depthwise),
-- quant_dot / quant_conv (i8 -> i32), quantize / dequantize, erf, recip, round,
-- greater / greater_equal with where, NaN-propagating max / min. Inputs are fresh random
-- values (never all zeros); i8 uses the full range without 0.
--   M.conv_ref(x, w, p) -> flat values of the direct sum (p: sp, stride, pad, dil, groups)
--   M.rand_conv(sp, dtype) -> {g=, inputs=, p=, dtype=, name=} (a random conv graph)
--   M.rand(shape, dtype) -> tensor;  M.check(got, want, dtype) -> ok, summary
--   M.cases(scale) -> { {name=, g=, inputs=, dtypes={...}}, ... } (scale 1: host sizes)
local kiln = require "kiln"
local M = {}

math.randomseed(os.time(), math.floor(os.clock() * 1e6))

local function numel(shape)
  local n = 1
  for _, d in ipairs(shape) do n = n * d end
  return n
end

function M.rand(shape, dtype)
  if dtype == "i8" then
    local flat = {}
    for i = 1, numel(shape) do
      local v = math.random(-128, 126)
      flat[i] = v >= 0 and v + 1 or v
    end
    return kiln.tensor(flat, "i8", { shape = shape })
  end
  return kiln.rand(shape, dtype, { dist = "normal" })
end

-- Tolerances by dtype (kiln.compare's defaults); integers exact.
-- Integers exactly; floats by the rule of `kiln migraphx --verify` (lua/kiln/migraphx.lua):
-- the dtype's default rtol, atol at least that fraction of the largest |reference| (a
-- conv's rounding error scales with the magnitude of its terms, not of a small, cancelled
-- output element).
function M.check(got, want, dtype)
  if dtype == "i8" or dtype == "i32" then
    local r = kiln.compare(got, want)
    return r.ok and r.max_abs == 0, r.summary
  end
  local rtol, atol = kiln.default_tolerance(want.dtype)
  local scale = 0
  for _, v in ipairs(want:flat()) do scale = math.max(scale, math.abs(v)) end
  local r = kiln.compare(got, want, { rtol = rtol, atol = math.max(atol, rtol * scale) })
  return r.ok, r.summary
end

-- The direct sum of an N-D conv (N C spatial... / K C/G spatial...), p.pad[2i-1], p.pad[2i]
-- the begin / end padding of spatial dim i.
function M.conv_ref(x, w, p)
  local xs, ws, sp = x.shape, w.shape, p.sp
  local N, C, K = xs[1], xs[2], ws[1]
  local G = p.groups
  local cpg, kpg = C // G, K // G
  local osz = {}
  for i = 1, sp do
    osz[i] = (xs[2 + i] + p.pad[2 * i - 1] + p.pad[2 * i] - p.dil[i] * (ws[2 + i] - 1) - 1) // p.stride[i] + 1
  end
  local out = {}
  local oidx, widx = {}, {}
  local function each(sizes, fn, idx, d)
    idx, d = idx or {}, d or 1
    if d > #sizes then return fn(idx) end
    for i = 0, sizes[d] - 1 do
      idx[d] = i
      each(sizes, fn, idx, d + 1)
    end
  end
  local wsp = {}
  for i = 1, sp do wsp[i] = ws[2 + i] end
  for n = 0, N - 1 do
    for k = 0, K - 1 do
      local g = k // kpg
      each(osz, function(o)
        local s = 0
        for c = 0, cpg - 1 do
          each(wsp, function(t)
            local xi, inside = { n, g * cpg + c }, true
            for i = 1, sp do
              local v = o[i] * p.stride[i] + t[i] * p.dil[i] - p.pad[2 * i - 1]
              if v < 0 or v >= xs[2 + i] then inside = false end
              xi[2 + i] = v
            end
            if inside then
              local wi = { k, c }
              for i = 1, sp do wi[2 + i] = t[i] end
              s = s + x:get(xi) * w:get(wi)
            end
          end)
        end
        out[#out + 1] = s
      end)
    end
  end
  local shape = { N, K }
  for i = 1, sp do shape[2 + i] = osz[i] end
  return out, shape
end

-- A random N-D conv graph (sp = 1 or 3 spatial dims): groups 1, 2 or depthwise.
function M.rand_conv(sp, dtype, big)
  local kinds = { "plain", "grouped", "depthwise" }
  local kind = kinds[math.random(#kinds)]
  local G = kind == "plain" and 1 or (kind == "grouped" and 2 or math.random(2, 4))
  local cpg = kind == "depthwise" and 1 or math.random(1, big and 8 or 3)
  local kpg = kind == "depthwise" and 1 or math.random(1, big and 8 or 3)
  local N = math.random(1, 2)
  local p = { sp = sp, stride = {}, dil = {}, pad = {}, groups = G }
  local xs, ws = { N, G * cpg }, { G * kpg, cpg }
  for i = 1, sp do
    local t = math.random(1, 3)
    p.stride[i], p.dil[i] = math.random(1, 2), math.random(1, 2)
    p.pad[2 * i - 1], p.pad[2 * i] = math.random(0, 2), math.random(0, 1)
    local need = p.dil[i] * (t - 1) + 1 - p.pad[2 * i - 1] - p.pad[2 * i]
    local base = sp == 1 and (big and 40 or 9) or (big and 9 or 5)
    xs[2 + i] = math.max(need, 1) + math.random(0, base)
    ws[2 + i] = t
  end
  local g = kiln.graph(string.format("conv%dd_%s_%s", sp, kind, dtype))
  local x, w = g:param("x", xs, dtype), g:param("w", ws, dtype)
  local op = dtype == "i8" and "quant_conv" or "conv"
  g:output(g[op](g, x, w, { stride = p.stride, dilation = p.dil, padding = p.pad, groups = G }))
  return { g = g, inputs = { x = M.rand(xs, dtype), w = M.rand(ws, dtype) }, p = p, dtype = dtype,
           name = string.format("%d-D %s conv %s x %s %s (stride %s, dilation %s, padding %s, groups %d)", sp, kind,
                                table.concat(xs, "x"), table.concat(ws, "x"), dtype, table.concat(p.stride, ","),
                                table.concat(p.dil, ","), table.concat(p.pad, ","), G) }
end

-- Fixed element-wise inputs: ties for round / quantize, NaN, +-0, +-inf, equal pairs.
M.SPECIALS = { 0 / 0, 0.0, -0.0, math.huge, -math.huge, 0.5, -0.5, 1.5, 2.5, -2.5, 1, -1, 3, 1e-3, -7.25, 100 }
function M.ew_inputs(dtype, n)
  local v = {}
  for i, s in ipairs(M.SPECIALS) do v[i] = s end
  local r = kiln.rand({ n - #v }, "f32", { dist = "normal" }):flat()
  for _, s in ipairs(r) do v[#v + 1] = 3 * s end
  return kiln.tensor(v, dtype, { shape = { n } })
end

-- Graph cases: element-wise ops and quantization on one dtype each (the compiled result
-- against g:eval; outputs' dtypes listed).
function M.cases(scale)
  scale = scale or 1
  local out = {}
  for _, dt in ipairs { "f32", "f16", "bf16" } do
    local n = 64 * scale
    local g = kiln.graph("ew_" .. dt)
    local x, y = g:param("x", { n }, dt), g:param("y", { n }, dt)
    local gt = g:greater(x, y)
    g:output(x:erf(), x:recip(), x:round(), gt, g:greater_equal(x, y), g:where(gt, x, y), g:max(x, y), g:min(x, y),
             g:where(g:greater_equal(x, 0.5), x, 0.25))
    local xs = M.ew_inputs(dt, n)
    local yv = xs:flat()
    for i = 1, #yv do if i % 3 ~= 0 then yv[i] = math.random() * 4 - 2 end end -- a third equal to x (ties)
    yv[1], yv[2] = 1, 0 / 0                                                        -- NaN on each side
    out[#out + 1] = { name = "erf recip round greater greater_equal where max min " .. dt, g = g,
                      inputs = { x = xs, y = kiln.tensor(yv, dt, { shape = { n } }) },
                      dtypes = { dt, dt, dt, dt, dt, dt, dt, dt, dt } }
    local q = kiln.graph("quant_" .. dt)
    local qx, qs, qz = q:param("x", { 4, n }, dt), q:param("s", { 4, 1 }, dt), q:param("z", { 1, n }, "i8")
    local qq = q:quantize(qx, qs, qz)
    q:output(qq, q:dequantize(qq, qs, qz), q:quantize(qx, qs))
    local sv = { 0.5, 0.03125, 1, 0.25 }
    local zv = {}
    for i = 1, n do zv[i] = math.random(-20, 20) end
    out[#out + 1] = { name = "quantize / dequantize " .. dt, g = q,
                      inputs = { x = kiln.tensor((function()
                                   local v = {}
                                   for i = 1, 4 * n do v[i] = (math.random() * 2 - 1) * (i % 4 == 0 and 300 or 8) end
                                   v[1], v[2], v[3] = 0.25, 0.75, -1.25  -- ties at scale 0.5
                                   return v
                                 end)(), dt, { shape = { 4, n } }),
                                 s = kiln.tensor(sv, dt, { shape = { 4, 1 } }), z = kiln.tensor(zv, "i8", { shape = { 1, n } }) },
                      dtypes = { "i8", dt, "i8" } }
  end
  do
    local g = kiln.graph("quant_dot")
    local a, b = g:param("a", { 3, 17 * scale, 40 }, "i8"), g:param("b", { 40, 19 * scale }, "i8")
    g:output(g:quant_dot(a, b))
    out[#out + 1] = { name = "quant_dot i8 -> i32", g = g, dtypes = { "i32" },
                      inputs = { a = M.rand({ 3, 17 * scale, 40 }, "i8"), b = M.rand({ 40, 19 * scale }, "i8") } }
  end
  return out
end

return M

-- fused_gen.lua — seeded random fused graphs for the compile specs: a conv (random
local kiln = require "kiln"
-- layout, stride, padding, dilation, groups) or a dot (random transposes and batch)
-- with a random epilogue (bias broadcast, residual add, relu/sigmoid/tanh/clip, casts),
-- plus element-wise-only, reduction and softmax graphs. Odd sizes on purpose.
-- gen(seed) -> {name=, g=, inputs=, dtype=, kind=}
local M = {}

local function pick(r, t) return t[r(#t)] end

local function epilogue(g, r, y, dtype, shape, make_param)
  local n = r(3) - 1          -- 0..2 epilogue ops
  for i = 1, n do
    local k = r(6)
    if k == 1 then            -- bias broadcast along dim 1 (channels / N)
      local bshape = {}
      for d = 1, #shape do bshape[d] = 1 end
      bshape[2] = shape[2]
      y = y + make_param("bias" .. i, bshape)
    elseif k == 2 then        -- residual add
      y = y + make_param("res" .. i, shape)
    elseif k == 3 then y = y:relu()
    elseif k == 4 then y = (dtype == "f32") and y:sigmoid() or y:relu()
    elseif k == 5 then y = (dtype == "f32") and y:tanh() or y:clip(-0.5, 0.5)
    else y = y:clip(-1.5, 0.75) end
  end
  if r(5) == 1 then
    local to = dtype == "f32" and "f16" or "f32"
    y = y:convert(to)
  end
  return y
end

function M.gen(seed)
  local state = seed * 2654435761 % 4294967296
  local function r(n)        -- deterministic 1..n
    state = (state * 1103515245 + 12345) % 2147483648
    return state % n + 1
  end
  local kinds = { "conv", "conv", "dot", "dot", "elementwise", "reduce", "softmax" }
  local kind = kinds[(seed - 1) % #kinds + 1]
  local dtype = (r(4) == 1) and "f16" or "f32"
  local g = kiln.graph("rand" .. seed)
  local inputs = {}
  local function param(name, shape, opts)
    inputs[name] = kiln.rand(shape, dtype, { seed = seed * 100 + #name, layout = opts and opts.layout })
    return g:param(name, shape, dtype, opts)
  end
  local odd = { 1, 3, 5, 7, 9, 17 }
  local y, desc
  if kind == "conv" then
    local groups = r(3) == 1 and 2 or 1
    local c, k = pick(r, { 1, 3, 4, 8 }) * groups, pick(r, { 1, 3, 5, 8 }) * groups
    local h, w = pick(r, { 3, 5, 7, 9 }), pick(r, { 3, 6, 7 })
    local fy, fx = pick(r, { 1, 2, 3 }), pick(r, { 1, 3 })
    local stride, dil = { r(2), r(2) }, { r(2), 1 }
    local pad = { r(3) - 1, r(2) - 1, r(2) - 1, r(3) - 1 }
    -- keep the dilated filter inside the padded input
    while (h + pad[1] + pad[2]) < dil[1] * (fy - 1) + 1 do pad[2] = pad[2] + 1 end
    while (w + pad[3] + pad[4]) < dil[2] * (fx - 1) + 1 do pad[4] = pad[4] + 1 end
    local n = pick(r, { 1, 2 })
    local layout = r(2) == 1 and "NHWC" or "NCHW"
    local x = param("x", { n, c, h, w }, { layout = layout })
    local wt = param("w", { k, c // groups, fy, fx }, { layout = layout == "NHWC" and "KYXC" or "KCYX" })
    y = g:conv(x, wt, { stride = stride, padding = pad, dilation = dil, groups = groups })
    local ho = (h + pad[1] + pad[2] - dil[1] * (fy - 1) - 1) // stride[1] + 1
    local wo = (w + pad[3] + pad[4] - dil[2] * (fx - 1) - 1) // stride[2] + 1
    desc = string.format("conv %s n%d c%d k%d %dx%d f%dx%d s%d,%d d%d p%d,%d,%d,%d g%d", layout, n, c, k, h, w, fy, fx,
      stride[1], stride[2], dil[1], pad[1], pad[2], pad[3], pad[4], groups)
    y = epilogue(g, r, y, dtype, { n, k, ho, wo }, function(nm, s) return param(nm, s, { layout = layout }) end)
  elseif kind == "dot" then
    local m, n, k = pick(r, odd), pick(r, { 1, 4, 7, 17, 33 }), pick(r, { 1, 3, 8, 17, 64 })
    local ta, tb = r(2) == 1, r(2) == 1
    local batch = r(3) == 1 and pick(r, { 2, 3 }) or nil
    local ash = ta and { k, m } or { m, k }
    local bsh = tb and { n, k } or { k, n }
    if batch then table.insert(ash, 1, batch); table.insert(bsh, 1, batch) end
    local a, b = param("a", ash), param("b", bsh)
    y = g:dot(a, b, { transpose_a = ta, transpose_b = tb })
    desc = string.format("dot m%d n%d k%d ta=%s tb=%s batch=%s", m, n, k, ta, tb, batch or "-")
    local osh = batch and { batch, m, n } or { m, n }
    y = epilogue(g, r, y, dtype, osh, function(nm, s)
      if #s == 2 and nm:sub(1, 4) == "bias" then s = { 1, n } end
      if #s == 3 and nm:sub(1, 4) == "bias" then s = { 1, 1, n } end
      return param(nm, s)
    end)
  elseif kind == "elementwise" then
    local shape = { pick(r, odd), pick(r, odd), pick(r, { 1, 4, 129 }) }
    local a, b = param("a", shape), param("b", { 1, shape[2], shape[3] })
    y = (a * b + 1):relu() - a:transpose { 0, 1, 2 }
    if r(2) == 1 then y = y:exp() end
    desc = string.format("elementwise %dx%dx%d", shape[1], shape[2], shape[3])
  elseif kind == "reduce" then
    local shape = { pick(r, odd), pick(r, odd), pick(r, { 2, 5, 17 }) }
    local a = param("a", shape)
    local axis = r(3) - 1
    local red = pick(r, { "sum", "mean", "reduce_max" })
    y = a[red](a, { axis }, r(2) == 1)
    desc = string.format("%s axis %d of %dx%dx%d", red, axis, shape[1], shape[2], shape[3])
  else
    local shape = { pick(r, odd), pick(r, { 3, 17, 64 }) }
    y = param("a", shape):softmax(r(2) == 1 and -1 or 0)
    desc = string.format("softmax %dx%d", shape[1], shape[2])
  end
  g:output(y)
  return { name = string.format("#%d %s %s", seed, dtype, desc), g = g, inputs = inputs, dtype = y.dtype, in_dtype = dtype, kind = kind }
end

-- Compares got with the reference: |got - ref| <= tol * (|ref| + scale), where scale is
-- the largest |ref| (accumulated sums lose absolute, not relative, precision near zero).
function M.check(got, want, dtype)
  local tol = (dtype == "f32") and 1e-5 or 1e-2
  local scale = 0
  for _, v in ipairs(want:flat()) do scale = math.max(scale, math.abs(v)) end
  local ok, report = kiln.allclose(got, want, { rtol = tol, atol = tol * math.max(scale, 1e-30) })
  return ok, report
end

return M

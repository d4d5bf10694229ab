-- fused_gen.lua — seeded random fused graphs for the compile specs: a conv (random
local kiln = require "kiln"
-- layout, stride, padding, dilation, groups) or a dot (random transposes and batch)
-- with random element-wise prologues on its operands (converts from narrower types,
-- scales, dequantization, relu, a broadcast bias, a transpose behind a convert, chains),
-- a random epilogue (bias broadcast, residual add, relu/sigmoid/tanh/clip, casts, values
-- used twice: swish, where(c, -v, v)) and several outputs ({c, relu(c)}, an intermediate
-- that is an output too), plus element-wise-only, reduction and softmax graphs. Odd
-- sizes on purpose. A conv/dot graph must compile to exactly one kernel.
-- gen(seed) -> {name=, g=, inputs=, dtype=, dtypes= (per output, the dtype of its tolerance), kind=, kernels=}
local M = {}

local function pick(r, t) return t[r(#t)] end

local function epilogue(g, r, y, dtype, shape, make_param, extra)
  local n = r(3) - 1          -- 0..2 epilogue ops
  for i = 1, n do
    local k = r(9)
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
    elseif k == 6 then y = y * y:sigmoid()                            -- swish: y used twice
    elseif k == 7 then y = g:where(y:convert("i1"), -y, y)            -- three uses of y
    elseif k == 8 then extra[#extra + 1] = y; y = y:relu()            -- an intermediate is an output too
    else y = y:clip(-1.5, 0.75) end
  end
  if r(6) == 1 then extra[#extra + 1] = y * 2 + 1 end                 -- a second epilogue of the result
  if r(5) == 1 then
    local to = dtype == "f32" and "f16" or "f32"
    y = y:convert(to)
  end
  return y
end

-- A random element-wise producer of a conv/dot operand of `shape` (in dtype): what the
-- kernel's global loads compute. Returns the operand and a description.
local function prologue(g, r, param, shape, dtype, name)
  local k = r(8)
  if k == 1 then        -- convert from a narrower type
    local from = dtype == "f32" and "f16" or "f32"
    return param(name, shape, nil, from):convert(dtype), "convert"
  elseif k == 2 then    -- scale by a scalar constant
    return param(name, shape) * 0.5, "scale"
  elseif k == 3 then    -- dequantize (x - z) * s with a per-last-dim scale
    local sshape = {}
    for d = 1, #shape do sshape[d] = 1 end
    sshape[#shape] = shape[#shape]
    return (param(name, shape) - param(name .. "_z", shape)) * param(name .. "_s", sshape), "dequant"
  elseif k == 4 then    -- relu
    return param(name, shape):relu(), "relu"
  elseif k == 5 then    -- a chain: convert, scale, add of a broadcast bias
    local bshape = {}
    for d = 1, #shape do bshape[d] = 1 end
    bshape[#shape] = shape[#shape]
    local from = dtype == "f32" and "f16" or "f32"
    return (param(name, shape, nil, from):convert(dtype) * 2 + param(name .. "_b", bshape)), "chain"
  elseif k == 6 and #shape >= 2 then -- a transpose behind a convert
    local t, perm = {}, {}
    for d = 1, #shape do t[d] = shape[d]; perm[d] = d - 1 end
    t[#shape], t[#shape - 1] = shape[#shape - 1], shape[#shape]
    perm[#shape], perm[#shape - 1] = #shape - 2, #shape - 1
    local from = dtype == "f32" and "f16" or "f32"
    return param(name, t, nil, from):convert(dtype):transpose(perm), "convert+transpose"
  end
  return param(name, shape), nil
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
  local function param(name, shape, opts, dt)
    inputs[name] = kiln.rand(shape, dt or dtype, { seed = seed * 100 + #name, layout = opts and opts.layout })
    return g:param(name, shape, dt or dtype, opts)
  end
  local extra, pro = {}, {}
  local function operand(name, shape, opts)
    if opts or r(3) ~= 1 then return param(name, shape, opts) end
    local v, what = prologue(g, r, param, shape, dtype, name)
    if what then pro[#pro + 1] = name .. ":" .. what end
    return v
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
    local x = layout == "NCHW" and operand("x", { n, c, h, w }) or param("x", { n, c, h, w }, { layout = layout })
    local wt = param("w", { k, c // groups, fy, fx }, { layout = layout == "NHWC" and "KYXC" or "KCYX" })
    y = g:conv(x, wt, { stride = stride, padding = pad, dilation = dil, groups = groups })
    local ho = (h + pad[1] + pad[2] - dil[1] * (fy - 1) - 1) // stride[1] + 1
    local wo = (w + pad[3] + pad[4] - dil[2] * (fx - 1) - 1) // stride[2] + 1
    desc = string.format("conv %s n%d c%d k%d %dx%d f%dx%d s%d,%d d%d p%d,%d,%d,%d g%d", layout, n, c, k, h, w, fy, fx,
      stride[1], stride[2], dil[1], pad[1], pad[2], pad[3], pad[4], groups)
    y = epilogue(g, r, y, dtype, { n, k, ho, wo }, function(nm, s) return param(nm, s, { layout = layout }) end, extra)
  elseif kind == "dot" then
    local m, n, k = pick(r, odd), pick(r, { 1, 4, 7, 17, 33 }), pick(r, { 1, 3, 8, 17, 64 })
    local ta, tb = r(2) == 1, r(2) == 1
    local batch = r(3) == 1 and pick(r, { 2, 3 }) or nil
    local ash = ta and { k, m } or { m, k }
    local bsh = tb and { n, k } or { k, n }
    if batch then table.insert(ash, 1, batch); table.insert(bsh, 1, batch) end
    local a, b = operand("a", ash), operand("b", bsh)
    y = g:dot(a, b, { transpose_a = ta, transpose_b = tb })
    desc = string.format("dot m%d n%d k%d ta=%s tb=%s batch=%s", m, n, k, ta, tb, batch or "-")
    local osh = batch and { batch, m, n } or { m, n }
    y = epilogue(g, r, y, dtype, osh, function(nm, s)
      if #s == 2 and nm:sub(1, 4) == "bias" then s = { 1, n } end
      if #s == 3 and nm:sub(1, 4) == "bias" then s = { 1, 1, n } end
      return param(nm, s)
    end, extra)
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
  if r(8) == 1 and (kind == "conv" or kind == "dot") then extra[#extra + 1] = y:relu() end -- {c, relu(c)}
  local outs = { y }
  for _, e in ipairs(extra) do outs[#outs + 1] = e end
  g:output(table.unpack(outs))
  local dtypes = {}
  -- the dtype whose tolerance an output is checked at: an f32 output of an f16 graph (a
  -- cast after the f16 GEMM) carries the f16 rounding of the values it was computed from
  for i, o in ipairs(outs) do dtypes[i] = (o.dtype == "f32" and dtype == "f16") and "f16" or o.dtype end
  if #pro > 0 then desc = desc .. " prologue " .. table.concat(pro, ",") end
  if #outs > 1 then desc = desc .. " outputs " .. #outs end
  return { name = string.format("#%d %s %s", seed, dtype, desc), g = g, inputs = inputs, dtype = y.dtype, dtypes = dtypes,
           in_dtype = dtype, kind = kind, kernels = (kind == "conv" or kind == "dot") and 1 or nil }
end

-- Compares got with the reference: |got - ref| <= tol * (|ref| + scale), where scale is
-- the largest |ref| (accumulated sums lose absolute, not relative, precision near zero).
-- A random reduction after a GEMM (GEMM + reduce fusion): dot (odd sizes, transposes, a
-- batch, prologues) then reduce_sum / reduce_mean / reduce_max over random axes (keepdims or
-- not), sometimes an element-wise op after it. `kernels`: the dot and the reduction are 1
-- where graph-partition fuses them (an f32 sum, mean or max, on a target with the f32 atomic
-- it needs; the op after is a kernel of its own then), else 2 (the op after fuses into the
-- reduction's kernel).
function M.gen_gemm_reduce(seed)
  local state = (seed * 2246822519 + 7) % 4294967296
  local function r(n)
    state = (state * 1103515245 + 12345) % 2147483648
    return state % n + 1
  end
  local dtype = (r(4) == 1) and "f16" or "f32"
  local g = kiln.graph("randgr" .. seed)
  local inputs = {}
  local function param(name, shape, opts, dt)
    inputs[name] = kiln.rand(shape, dt or dtype, { seed = seed * 100 + #name, dist = "normal" })
    return g:param(name, shape, dt or dtype, opts)
  end
  local m, n, k = pick(r, { 1, 3, 7, 17, 33 }), pick(r, { 1, 4, 9, 17 }), pick(r, { 1, 5, 16, 64, 300 })
  local ta, tb = r(2) == 1, r(2) == 1
  local batch = r(3) == 1 and pick(r, { 2, 3 }) or nil
  local ash, bsh = ta and { k, m } or { m, k }, tb and { n, k } or { k, n }
  if batch then table.insert(ash, 1, batch); table.insert(bsh, 1, batch) end
  local a = r(3) == 1 and (prologue(g, r, param, ash, dtype, "a")) or param("a", ash)
  local b = param("b", bsh)
  local y = g:dot(a, b, { transpose_a = ta, transpose_b = tb })
  local rank = batch and 3 or 2
  local axes = {}
  for d = 0, rank - 1 do if r(2) == 1 then axes[#axes + 1] = d end end
  if #axes == 0 then axes[1] = rank - 1 end
  local red = pick(r, { "reduce_sum", "reduce_sum", "reduce_sum", "reduce_mean", "reduce_max" })
  local keep = r(2) == 1
  y = y[red](y, axes, keep)
  local after = r(4) == 1
  if after then y = (y * 0.5):relu() end
  g:output(y)
  local fused = dtype == "f32" -- sum, mean and max of f32 fuse (f16 results keep two kernels)
  return { name = string.format("#%d %s dot m%d n%d k%d ta=%s tb=%s batch=%s %s {%s} keepdims=%s%s", seed, dtype, m, n, k,
             ta, tb, batch or "-", red, table.concat(axes, ","), keep, after and " relu after" or ""),
           g = g, inputs = inputs, dtype = y.dtype, fused = fused, kernels = fused and (after and 2 or 1) or 2 }
end

-- A sum of n terms each at most term_max in magnitude (a reduction after a GEMM, added up
-- in any order, e.g. by atomic adds) rounds like any sum: its error grows as sqrt(n) times
-- the terms' magnitude, not with the (possibly cancelled) result; the rule of the blockwise
-- reduction specs (reduce_blockwise_cases.check) with the terms' scale made explicit.
function M.check_sum(got, want, dtype, n, term_max)
  local tol = (dtype == "f32") and 1e-5 or 1e-2
  local scale = math.sqrt(n) * term_max
  for _, v in ipairs(want:flat()) do scale = math.max(scale, math.abs(v)) end
  return kiln.allclose(got, want, { rtol = tol, atol = tol * math.max(scale, 1e-30) })
end

function M.check(got, want, dtype)
  local tol = (dtype == "f32") and 1e-5 or 1e-2
  local scale = 0
  for _, v in ipairs(want:flat()) do scale = math.max(scale, math.abs(v)) end
  local ok, report = kiln.allclose(got, want, { rtol = tol, atol = tol * math.max(scale, 1e-30) })
  return ok, report
end

-- The kinds of a plan's steps in order, comma-separated ("prefill,launch").
function M.plan_kinds(plan)
  local t = {}
  for _, st in ipairs(plan.steps) do t[#t + 1] = st.kind end
  return table.concat(t, ",")
end

-- Every output of a run (table.pack(p:run(...))) against the reference's
-- (table.pack(g:eval(...))) by M.check: true, or false and a message naming the output.
function M.check_outputs(got, want)
  if got.n ~= want.n then return false, ("%d outputs, the reference %d"):format(got.n, want.n) end
  for i = 1, want.n do
    local ok, report = M.check(got[i], want[i], want[i].dtype)
    if not ok then return false, ("output %d: %s"):format(i, report.summary) end
  end
  return true
end

return M

-- reduce_fusion_cases.lua — reductions and softmax fused with their element-wise producers
-- and consumers (graph-partition's reduction groups, passes/graph_partition.c; the fused
-- rock.reduce / rock.softmax, passes/lower_loops_reduce.c) for reduce_fusion_spec.lua (the
-- host) and scripts/gpu_suite.lua (a device): each case a graph, fresh random inputs, the
-- number of kernels the host compiles it to, and the elements each output reduces (k, for
-- the tolerance of sums). check compares against g:eval.
local kiln = require "kiln"
local gen = require "fused_gen"
local M = {}

M.DTYPES = { "f32", "f16", "bf16" }
M.LENGTHS = { 1, 7, 33, 1000, 4097 }

-- Every case: { name, g, inputs, dtype, kernels, k }.
function M.cases()
  local out = {}
  -- build(g, p) returns the outputs; p(name, shape[, dtype]) makes a param with random input
  local function add(name, dtype, kernels, k, build, opts)
    local g = kiln.graph("rf")
    local inputs = {}
    local function p(pn, shape, dt)
      inputs[pn] = kiln.rand(shape, dt or dtype)
      return g:param(pn, shape, dt or dtype)
    end
    g:output(build(g, p))
    out[#out + 1] = { name = name, g = g, inputs = inputs, dtype = dtype, kernels = kernels, k = k,
                      split = opts and opts.split }
  end
  local eps = 1e-5
  for _, dt in ipairs(M.DTYPES) do
    for _, n in ipairs(M.LENGTHS) do
      add(("%s RMS norm rows 5x%d"):format(dt, n), dt, 1, n, function(_, p)
        local x = p("x", { 5, n })
        return x * ((x * x):mean({ 1 }, true) + eps):rsqrt()
      end)
      add(("%s RMS norm cols %dx6 (axis 0)"):format(dt, n), dt, 1, n, function(_, p)
        local x = p("x", { n, 6 })
        return x * ((x * x):mean({ 0 }, true) + eps):rsqrt()
      end)
      add(("%s sum(exp(x - c)), c a broadcast column, 3x%d"):format(dt, n), dt, 1, n, function(_, p)
        local x, c = p("x", { 3, n }), p("c", { 3, 1 })
        return (x - c):exp():sum({ 1 })
      end)
      add(("%s max(abs(a * b)) 4x%d"):format(dt, n), dt, 1, nil, function(_, p)
        local a, b = p("a", { 4, n }), p("b", { 4, n })
        return (a * b):abs():reduce_max({ 1 })
      end)
      add(("%s softmax(x * scale + mask) rows 3x%d, mask broadcast"):format(dt, n), dt, 1, nil, function(_, p)
        local x, mask = p("x", { 3, n }), p("mask", { n })
        return (x * 0.125 + mask):softmax(-1)
      end)
      add(("%s softmax(x * scale + mask) cols %dx5"):format(dt, n), dt, 1, nil, function(_, p)
        local x, mask = p("x", { n, 5 }), p("mask", { n, 1 })
        return (x * 0.125 + mask):softmax(0)
      end)
      add(("%s sqrt(sum(x * x) / n) 4x%d"):format(dt, n), dt, 1, nil, function(_, p)
        local x = p("x", { 4, n })
        return ((x * x):sum({ 1 }) / n):sqrt()
      end)
      add(("%s log(sum(exp(x))) 4x%d"):format(dt, n), dt, 1, nil, function(_, p)
        return p("x", { 4, n }):exp():sum({ 1 }):log()
      end)
      add(("%s x - max(x) 4x%d"):format(dt, n), dt, 1, nil, function(_, p)
        local x = p("x", { 4, n })
        return x - x:reduce_max({ 1 }, true)
      end)
      add(("%s x - mean(x) 4x%d"):format(dt, n), dt, 1, nil, function(_, p)
        local x = p("x", { 4, n })
        return x - x:mean({ 1 }, true)
      end)
    end
    add(dt .. " softmax(x) * y (a consumer with another input) 6x300", dt, 1, nil, function(_, p)
      return p("x", { 6, 300 }):softmax(-1) * p("y", { 6, 300 })
    end)
    add(dt .. " x - logsumexp(x): the max, then one kernel 4x777", dt, 2, nil, function(_, p)
      local x = p("x", { 4, 777 })
      local m = x:reduce_max({ 1 }, true)
      return x - ((x - m):exp():sum({ 1 }, true):log() + m)
    end)
    add(dt .. " layer norm: the mean, then one kernel 3x500", dt, 2, nil, function(_, p)
      local x = p("x", { 3, 500 })
      local d = x - x:mean({ 1 }, true)
      return d * ((d * d):mean({ 1 }, true) + eps):rsqrt()
    end)
    -- the mean of |x| (a producer), so that the rsqrt never meets a mean that cancelled to
    -- near 0 (random signed inputs did, under another seed: an ill-conditioned reference)
    add(dt .. " mean then + eps then rsqrt 7x129", dt, 1, nil, function(_, p)
      return (p("x", { 7, 129 }):abs():mean({ 1 }) + eps):rsqrt()
    end)
  end
  -- every axis set of a rank-3 tensor, keepdims or not: a producer, an output consumer, and
  -- (keepdims) the normalization; softmax over every axis with a producer and a consumer
  for _, axes in ipairs { { 0 }, { 1 }, { 2 }, { 0, 1 }, { 0, 2 }, { 1, 2 }, { 0, 1, 2 } } do
    local shape, k = { 3, 17, 40 }, 1
    for _, a in ipairs(axes) do k = k * shape[a + 1] end
    local as = table.concat(axes, ",")
    for _, keep in ipairs { false, true } do
      add(("f32 sqrt(sum(x * x)) axes {%s} keepdims %s of 3x17x40"):format(as, tostring(keep)), "f32", 1, nil,
          function(_, p) local x = p("x", shape); return (x * x):sum(axes, keep):sqrt() end)
      add(("f16 max(abs(x - 0.5)) * 2 axes {%s} keepdims %s of 3x17x40"):format(as, tostring(keep)), "f16", 1, nil,
          function(_, p) return ((p("x", shape) - 0.5):abs():reduce_max(axes, keep) * 2) end)
    end
    add(("f32 x / sum(abs(x)) axes {%s} of 3x17x40"):format(as), "f32", 1, nil,
        function(_, p) local x = p("x", shape); return x / (x:abs():sum(axes, true) + 1) end)
    add(("bf16 x * rsqrt(mean(x * x)) axes {%s} of 3x17x40"):format(as), "bf16", 1, nil,
        function(_, p) local x = p("x", shape); return x * ((x * x):mean(axes, true) + eps):rsqrt() end)
  end
  for ax = 0, 2 do
    add(("f32 softmax(x * 0.5 - y) * 3 axis %d of 3x17x40"):format(ax), "f32", 1, nil,
        function(_, p) return ((p("x", { 3, 17, 40 }) * 0.5 - p("y", { 3, 17, 40 })):softmax(ax) * 3) end)
    add(("f16 softmax(convert(x)) axis %d of 3x17x40 (f32 math)"):format(ax), "f16", 1, nil,
        function(_, p) return p("x", { 3, 17, 40 }):convert("f32"):softmax(ax):convert("f16") end)
  end
  -- a keepdims = false result of the leading axes broadcasts back by numpy's rules
  add("f32 x - mean(x, axis 0) (keepdims false) 9x13", "f32", 1, nil, function(_, p)
    local x = p("x", { 9, 13 })
    return x - x:mean({ 0 })
  end)
  -- what stays apart: a producer read elsewhere (recomputed when it reads no more bytes
  -- than it yields, else written once and read), a reduction result read twice
  add("f32 y = x * 2 returned and summed: recomputed, 2 kernels", "f32", 2, 64, function(_, p)
    local y = p("x", { 5, 64 }) * 2
    return y, y:sum({ 1 })
  end)
  add("f32 y = a + b returned and summed: read back, 2 kernels", "f32", 2, 64, function(_, p)
    local y = p("a", { 5, 64 }) + p("b", { 5, 64 })
    return y, y:sum({ 1 })
  end)
  add("f32 mean returned and sqrt(mean): 2 kernels", "f32", 2, nil, function(_, p)
    local m = p("x", { 5, 64 }):abs():mean({ 1 })
    return m, m:sqrt()
  end)
  -- integers (i64 accumulators; exact), f64, edge shapes
  add("i32 sum(x * 2) + 1 5x33", "i32", 1, nil, function(_, p) return (p("x", { 5, 33 }) * 2):sum({ 1 }) + 1 end)
  add("i32 x - max(x) 5x33", "i32", 1, nil, function(_, p)
    local x = p("x", { 5, 33 })
    return x - x:reduce_max({ 1 }, true)
  end)
  add("i32 mean(x * 3) cols 33x5", "i32", 1, nil, function(_, p) return (p("x", { 33, 5 }) * 3):mean({ 0 }) end)
  add("i8 sum(abs(x)) 5x33", "i8", 1, nil, function(_, p) return p("x", { 5, 33 }):abs():sum({ 1 }) end)
  add("f64 RMS norm 5x33", "f64", 1, nil, function(_, p)
    local x = p("x", { 5, 33 })
    return x * ((x * x):mean({ 1 }, true) + eps):rsqrt()
  end)
  add("f64 softmax(x * 2) 5x33", "f64", 1, nil, function(_, p) return (p("x", { 5, 33 }) * 2):softmax(-1) end)
  add("f32 empty input: sum + 1 stays two kernels", "f32", 2, nil, function(_, p) return p("x", { 0, 5 }):sum({ 0 }) + 1 end)
  add("f32 sqrt(sum(x * x)) to a scalar 7x5", "f32", 1, 35, function(_, p)
    local x = p("x", { 7, 5 })
    return (x * x):sum({ 0, 1 }):sqrt()
  end)
  add("f32 x - sum(x * 2) over an axis of 1 (keepdims) 7x1", "f32", 1, nil, function(_, p)
    local x = p("x", { 7, 1 })
    return x - (x * 2):sum({ 1 }, true)
  end)
  add("f32 x - max(x) 1-D 1000 (keepdims false)", "f32", 1, nil, function(_, p)
    local x = p("x", { 1000 })
    return x - x:reduce_max({ 0 })
  end)
  add("f32 softmax(transpose(x)) * 2 30x7", "f32", 1, nil, function(_, p)
    return p("x", { 30, 7 }):transpose({ 1, 0 }):softmax(-1) * 2
  end)
  add("f32 y = x * x read by a sum and a max: recomputed, 2 kernels", "f32", 2, nil, function(_, p)
    local x = p("x", { 8, 64 })
    local y = x * x
    return y:sum({ 1 }), y:reduce_max({ 1 })
  end)
  -- long rows split in two kernels (g:hint split): the producer in the partial kernel,
  -- consumers of the result's shape in the final one, the row normalization apart
  for _, dt in ipairs(M.DTYPES) do
    add(dt .. " split: sqrt(sum(x * x)) 4x65536 split 8", dt, 2, nil, function(g, p)
      local x = p("x", { 4, 65536 })
      return g:hint((x * x):sum({ 1 }), { split = 8 }):sqrt()
    end, { split = true })
    add(dt .. " split: RMS norm 3x32768 split 4 (3 kernels)", dt, 3, nil, function(g, p)
      local x = p("x", { 3, 32768 })
      return x * (g:hint((x * x):mean({ 1 }, true), { split = 4 }) + eps):rsqrt()
    end, { split = true })
  end
  -- multi-block softmax (reduce-split, a split hint): max and sum each as a partial and a
  -- final kernel (exp(x - max) fused into the sum's partial kernel), then the division: 5
  -- kernels; a producer of the softmax's input is read by three of them (written once: 6)
  for _, dt in ipairs(M.DTYPES) do
    add(dt .. " split softmax rows 3x4096 split 8 (5 kernels)", dt, 5, nil, function(g, p)
      return g:hint(p("x", { 3, 4096 }):softmax(-1), { split = 8 })
    end, { split = true })
  end
  add("f32 split softmax axis 0 of 40x3x7 split 5 (5 kernels)", "f32", 5, nil, function(g, p)
    return g:hint(p("x", { 40, 3, 7 }):softmax(0), { split = 5 })
  end, { split = true })
  add("f16 split softmax(x * scale + mask) 2x2048 split 4 (6 kernels)", "f16", 6, nil, function(g, p)
    local x, mask = p("x", { 2, 2048 }), p("mask", { 2048 })
    return g:hint((x * 0.125 + mask):softmax(-1), { split = 4 })
  end, { split = true })
  -- random producer / consumer chains
  for seed = 1, 40 do out[#out + 1] = M.random(seed) end
  return out
end

-- A random case: rank 1-3, odd sizes, a reduction (sum / mean / max / min / softmax) over
-- random axes, a producer chain of 1-3 ops (scalars, a second input of the same or a
-- broadcast shape, abs, exp, converts), a consumer chain of 0-2 ops, and for keepdims
-- reductions sometimes the normalization x op r. One kernel on the host.
function M.random(seed)
  local state = (seed * 2654435761 + 11) % 4294967296
  local function r(n)
    state = (state * 1103515245 + 12345) % 2147483648
    return state % n + 1
  end
  local dtype = M.DTYPES[r(3)]
  local rank = r(3)
  local shape = {}
  for d = 1, rank do shape[d] = ({ 1, 3, 7, 33, 130 })[r(5)] end
  local g = kiln.graph("rfr" .. seed)
  local inputs = {}
  local function p(pn, sh)
    inputs[pn] = kiln.rand(sh, dtype)
    return g:param(pn, sh, dtype)
  end
  local x = p("x", shape)
  local desc = {}
  local v = x
  for _ = 1, r(3) do
    local k = r(6)
    if k == 1 then v = v * 0.75; desc[#desc + 1] = "*0.75"
    elseif k == 2 then v = v + p("b" .. #desc, shape); desc[#desc + 1] = "+b"
    elseif k == 3 then
      local bs = {}
      for d = 1, rank do bs[d] = r(2) == 1 and 1 or shape[d] end
      v = v * p("c" .. #desc, bs); desc[#desc + 1] = "*bcast"
    elseif k == 4 then v = v:abs(); desc[#desc + 1] = "abs"
    elseif k == 5 then v = (v * 0.5):exp(); desc[#desc + 1] = "exp"
    else v = v:convert("f32"):convert(dtype); desc[#desc + 1] = "convert" end
  end
  local kinds = { "sum", "mean", "reduce_max", "min", "softmax" }
  local kind = kinds[r(5)]
  local axes, keep = {}, r(2) == 1
  for d = 0, rank - 1 do if r(2) == 1 then axes[#axes + 1] = d end end
  if #axes == 0 then axes[1] = rank - 1 end
  local y, k = nil, 1
  for _, a in ipairs(axes) do k = k * shape[a + 1] end
  if kind == "softmax" then
    y = v:softmax(axes[1])
  elseif kind == "min" then
    y = -((-v):reduce_max(axes, keep))
  else
    y = v[kind](v, axes, keep)
  end
  local nc = r(3) - 1
  for _ = 1, nc do
    local c = r(3)
    if c == 1 then y = y * 1.5; desc[#desc + 1] = "then *1.5"
    elseif c == 2 then y = (y:abs() + 1):sqrt(); desc[#desc + 1] = "then sqrt(abs+1)"
    else y = y - 0.25; desc[#desc + 1] = "then -0.25" end
  end
  if kind ~= "softmax" and keep and r(2) == 1 then
    y = x - y
    desc[#desc + 1] = "x - r"
  end
  g:output(y)
  return { name = ("random #%d %s %s {%s} keepdims %s of {%s}: %s"):format(seed, dtype, kind,
             table.concat(axes, ","), tostring(keep), table.concat(shape, "x"), table.concat(desc, " ")),
           g = g, inputs = inputs, dtype = dtype, kernels = 1, k = kind ~= "softmax" and kind ~= "reduce_max" and kind ~= "min" and k or nil }
end

-- Device-sized cases for scripts/gpu_suite.lua (the benchmark's shapes): { name, g,
-- inputs, dtype, kernels on a GPU target, k }. RMS norm of 4 rows of 4Mi splits (the
-- reduce-split heuristic: partial kernel with the x * x producer, final kernel with + eps
-- and rsqrt, the row product apart: 3 kernels).
function M.gpu_cases()
  local out = {}
  local function add(name, dtype, kernels, k, build)
    local g = kiln.graph("rfg")
    local inputs = {}
    local function p(pn, shape, dt)
      inputs[pn] = kiln.rand(shape, dt or dtype)
      return g:param(pn, shape, dt or dtype)
    end
    g:output(build(g, p))
    out[#out + 1] = { name = name, g = g, inputs = inputs, dtype = dtype, kernels = kernels, k = k }
  end
  add("RMS norm 8192x8192 f16", "f16", 1, nil, function(_, p)
    local x = p("x", { 8192, 8192 })
    return x * ((x * x):mean({ 1 }, true) + 1e-5):rsqrt()
  end)
  add("RMS norm 4x4194304 f32 (split: 3 kernels)", "f32", 3, nil, function(_, p)
    local x = p("x", { 4, 4194304 })
    return x * ((x * x):mean({ 1 }, true) + 1e-5):rsqrt()
  end)
  add("RMS norm 256x65536 f32 (rows read twice)", "f32", 1, nil, function(_, p)
    local x = p("x", { 256, 65536 })
    return x * ((x * x):mean({ 1 }, true) + 1e-5):rsqrt()
  end)
  add("softmax 4x4194304 f32 (multi-block: 5 kernels)", "f32", 5, nil, function(_, p)
    return p("x", { 4, 4194304 }):softmax(-1)
  end)
  add("softmax(x * scale + mask) 8192x8192 f16", "f16", 1, nil, function(_, p)
    local x, mask = p("x", { 8192, 8192 }), p("mask", { 8192 })
    return (x * 0.125 + mask):softmax(-1)
  end)
  add("log(sum(exp(x))) rows 8192x8192 f16", "f16", 1, nil, function(_, p)
    return p("x", { 8192, 8192 }):exp():sum({ 1 }):log()
  end)
  add("x - logsumexp(x) 4096x4096 f32", "f32", 2, nil, function(_, p)
    local x = p("x", { 4096, 4096 })
    local m = x:reduce_max({ 1 }, true)
    return x - ((x - m):exp():sum({ 1 }, true):log() + m)
  end)
  add("x * rsqrt(mean(x * x)) cols 4096x512 bf16", "bf16", 1, nil, function(_, p)
    local x = p("x", { 4096, 512 })
    return x * ((x * x):mean({ 0 }, true) + 1e-5):rsqrt()
  end)
  return out
end

-- got / want: table.pack of p:run / g:eval. Sums: absolute tolerance scaled by sqrt(k)
-- (fused_gen.check_sum with terms of magnitude <= the largest |output| / k... at least 1),
-- the rest fused_gen.check (tolerance relative to the output's largest magnitude).
function M.check(got, want, dtype, k)
  if got.n ~= want.n then return false, ("%d outputs, the reference %d"):format(got.n, want.n) end
  for i = 1, want.n do
    local ok, report
    if k then
      ok, report = gen.check_sum(got[i], want[i], dtype, k, 1)
    else
      ok, report = gen.check(got[i], want[i], dtype)
    end
    if not ok then return false, ("output %d: %s"):format(i, tostring(report and report.summary or report)) end
  end
  return true
end

return M

-- vector_access_cases.lua — element-wise kernels whose global accesses are as wide as
-- their views allow: the cases of vector_access_spec.lua (host) and scripts/gpu_suite.lua
-- (the device). Each case is one element-wise kernel, fresh random inputs, and the width
-- in bytes p:kernels() must report for every argument (loads of the inputs, the store of
-- the output): each access as wide as its own view allows — contiguous views 16 bytes, odd
-- sizes one element, a transposed or column-broadcast input one element next to 16-byte
-- accesses of the others, a slice starting at column 2 of f32 rows 8 bytes.
local kiln = require "kiln"
local gen = require "fused_gen"
local M = {}

local function rand(shape, dt)
  if dt == "i32" then return kiln.rand(shape, dt) end
  return kiln.rand(shape, dt, { dist = "normal" })
end

-- { name, g, inputs, dtype (of the output), widths = { [arg] = bytes } }
function M.cases()
  local out = {}
  local function case(name, shapes, dts, build, widths, odt, layouts)
    local g = kiln.graph("vec")
    local ps, inputs = {}, {}
    for i, s in ipairs(shapes) do
      local n, lay = "x" .. i, layouts and layouts[i]
      ps[i] = g:param(n, s, dts[i], lay and { layout = lay } or nil)
      inputs[n] = lay and rand(s, dts[i]):as_layout(lay) or rand(s, dts[i])
    end
    g:output(build(table.unpack(ps)))
    out[#out + 1] = { name = name, g = g, inputs = inputs, dtype = odt or dts[1], widths = widths }
  end
  local add = function(a, b) return a + b end
  for _, dt in ipairs { "f32", "f16", "bf16" } do
    local w = dt == "f32" and 4 or 2
    -- contiguous: 16-byte vectors, full workgroups and a partial last one (65792 / 33000 vectors)
    case(dt .. " add 257x1024", { { 257, 1024 }, { 257, 1024 } }, { dt, dt }, add, { in0 = 16, in1 = 16, out0 = 16 })
    case(dt .. " add 33000x8", { { 33000, 8 }, { 33000, 8 } }, { dt, dt }, add, { in0 = 16, in1 = 16, out0 = 16 })
    -- odd sizes: one element per access
    case(dt .. " add 1000003", { { 1000003 }, { 1000003 } }, { dt, dt }, add, { in0 = w, in1 = w, out0 = w })
    case(dt .. " mul 3x5x7", { { 3, 5, 7 }, { 3, 5, 7 } }, { dt, dt }, function(a, b) return a * b end,
         { in0 = w, in1 = w, out0 = w })
    -- a transposed read: one element per access there, 16 bytes for the others
    case(dt .. " transpose 384x512 + 512x384", { { 384, 512 }, { 512, 384 } }, { dt, dt },
         function(a, b) return a:transpose { 1, 0 } + b end, { in0 = w, in1 = 16, out0 = 16 })
  end
  -- NHWC operands of NCHW-ordered ops (a conv epilogue of its own kernel, split-K's sum): the
  -- kernel walks the output in its memory order, channels first: 16 bytes; an NCHW operand
  -- next to them is read one element at a time
  case("f16 NHWC add, relu 2x64x7x9", { { 2, 64, 7, 9 }, { 2, 64, 7, 9 } }, { "f16", "f16" },
       function(a, b) return (a + b):relu() end, { in0 = 16, in1 = 16, out0 = 16 }, nil, { "NHWC", "NHWC" })
  case("f32 NHWC + NCHW 2x32x5x6", { { 2, 32, 5, 6 }, { 2, 32, 5, 6 } }, { "f32", "f32" }, add,
       { in0 = 16, in1 = 4, out0 = 16 }, nil, { "NHWC" })
  -- a slice starting at column 2: two f32 (8 bytes) stay aligned
  case("f32 slice cols 2..258 of 300x260 + 300x256", { { 300, 260 }, { 300, 256 } }, { "f32", "f32" },
       function(a, b) return a:slice(1, 2, 258) + b end, { in0 = 8, in1 = 16, out0 = 16 })
  -- a row broadcast keeps 16 bytes (its rows are 1000 long); a column broadcast reads one
  -- element at a time
  case("f32 row broadcast 64x1000 + 1000", { { 64, 1000 }, { 1000 } }, { "f32", "f32" }, add,
       { in0 = 16, in1 = 16, out0 = 16 })
  case("f16 column broadcast 1000x64 + 1000x1", { { 1000, 64 }, { 1000, 1 } }, { "f16", "f16" }, add,
       { in0 = 16, in1 = 2, out0 = 16 })
  -- a rank-0 operand is one value, broadcast into the vectors
  case("f32 scale by a scalar 4096", { { 4096 }, {} }, { "f32", "f32" }, function(a, s) return a * s end,
       { in0 = 16, in1 = 4, out0 = 16 })
  -- a body of several ops (math on vectors), and a mixed-dtype one: 16 bytes of f16 and
  -- two 16-byte vectors of f32 per point
  case("f32 exp/tanh/relu/clip chain 8192", { { 8192 }, { 8192 } }, { "f32", "f32" }, function(a, b)
    return (a:exp() * 0.5 + b:tanh()):relu():clip(-1, 3)
  end, { in0 = 16, in1 = 16, out0 = 16 })
  case("f16 + f32 -> f32 4096", { { 4096 }, { 4096 } }, { "f16", "f32" }, function(a, b) return a:convert("f32") + b end,
       { in0 = 16, in1 = 16, out0 = 16 }, "f32")
  case("f64 * f16 -> f16 2048x8", { { 2048, 8 }, { 2048, 8 } }, { "f64", "f16" },
       function(a, b) return (a * b:convert("f64")):convert("f16") end, { in0 = 16, in1 = 16, out0 = 16 }, "f16")
  case("i32 add 4096", { { 4096 }, { 4096 } }, { "i32", "i32" }, add, { in0 = 16, in1 = 16, out0 = 16 })
  return out
end

-- Reductions that keep the innermost dim (vectors of consecutive output points, lane-wise
-- accumulators; on GPUs at most 32 bytes of them per thread): same fields.
function M.reductions()
  local out = {}
  for _, c in ipairs {
    { "f32 sum over axis 0 of 333x64", { 333, 64 }, "f32", function(x) return x:sum { 0 } end, 16 },
    { "bf16 mean over axis 0 of 300x512", { 300, 512 }, "bf16", function(x) return x:mean { 0 } end, 16 },
    { "f16 max over axis 1 of 7x9x24", { 7, 9, 24 }, "f16", function(x) return x:reduce_max { 1 } end, 16 },
    { "i32 max over axis 0 of 100x8", { 100, 8 }, "i32", function(x) return x:reduce_max { 0 } end, 16 },
    { "f32 sum over axis 0 of 50x6 (two points per vector)", { 50, 6 }, "f32", function(x) return x:sum { 0 } end, 8 },
  } do
    local g = kiln.graph("red")
    g:output(c[4](g:param("x", c[2], c[3])))
    out[#out + 1] = { name = c[1], g = g, inputs = { x = rand(c[2], c[3]) }, dtype = c[3],
                      widths = { in0 = c[5], out0 = c[5] } }
  end
  return out
end

-- The widths p:kernels() reports against want: nil or an error message.
function M.check_widths(p, c, target)
  local ks = p:kernels(target)
  if #ks ~= 1 then return #ks .. " kernels, want 1" end
  local got = {}
  for _, a in ipairs(ks[1].accesses) do
    local key = a.arg
    if got[key] and got[key] ~= a.bytes then return ("%s: accesses of %d and %d bytes"):format(key, got[key], a.bytes) end
    got[key] = a.bytes
  end
  for arg, want in pairs(c.widths) do
    if got[arg] ~= want then return ("%s: %s bytes, want %d"):format(arg, tostring(got[arg]), want) end
  end
  return nil
end

function M.check(got, want, dtype)
  if dtype == "i32" then
    local a, b = got:flat(), want:flat()
    for i = 1, #b do if a[i] ~= b[i] then return false, { summary = ("element %d: %s vs %s"):format(i, a[i], b[i]) } end end
    return true
  end
  return gen.check(got, want, dtype)
end

return M

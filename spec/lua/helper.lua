-- spec/lua/helper.lua — shared by the kiln busted specs (require "spec.lua.helper").
-- Run the specs from the repository root:
--   busted --lpath='lua/?.lua;lua/?/init.lua' --cpath='build/?.so' spec/lua
-- KILN_BIN overrides the kiln executable used by cli_spec (default build/kiln).
local luassert = require "luassert"   -- the specs' `assert` (plain Lua's in a module)
local helper = {}

local function cwd()
  local p = io.popen("pwd")
  local d = p:read("l")
  p:close()
  return d
end
helper.root = cwd()

function helper.kiln_bin()
  local bin = os.getenv("KILN_BIN") or "build/kiln"
  if bin:sub(1, 1) ~= "/" then bin = helper.root .. "/" .. bin end
  return bin
end

-- The first GPU device present (CUDA, then HIP), or nil and why none could be opened: the
-- gpu-tagged specs run on it or report every case pending with that reason.
function helper.gpu_device()
  local why
  for _, kind in ipairs{ "cuda", "hip" } do
    local ok, d = pcall(require("kiln").device, kind)
    if ok then return d end
    why = (why and why .. "; " or "") .. tostring(d):gsub("\n.*", "")
  end
  return nil, why
end

-- A small function with a duplicate expression, a square and foldable constants.
helper.sample = [[
func.func @f(%a: f32, %b: f32) {
  %0 = arith.addf %a, %b : f32
  %1 = arith.mulf %0, %0 : f32
  %2 = arith.addf %a, %b : f32
  %c2 = arith.constant 2 : i32
  %c3 = arith.constant 3 : i32
  %3 = arith.addi %c2, %c3 : i32
  "test.use"(%1, %2, %3) : (f32, f32, i32) -> ()
  func.return
}
]]

-- The current line of the caller (for location checks).
function helper.line(level)
  return debug.getinfo((level or 1) + 1, "l").currentline
end

-- This spec file's name as kiln records it in locations (chunk name without '@').
function helper.this_file(level)
  local src = debug.getinfo((level or 1) + 1, "S").source
  return (src:gsub("^[@=]", ""))
end

-- Calls fn(idx, k) for every index of shape in row-major order: idx is 0-based (one
-- table, reused: copy it to keep it), k the 1-based flat position.
function helper.each_index(shape, fn)
  local idx, n = {}, 1
  for i = 1, #shape do idx[i] = 0; n = n * shape[i] end
  for k = 1, n do
    fn(idx, k)
    for d = #shape, 1, -1 do
      idx[d] = idx[d] + 1
      if idx[d] < shape[d] then break end
      idx[d] = 0
    end
  end
end

-- pcall(fn, ...) that must fail; returns the error message. (Call kiln through a
-- closure written in the spec when the message's Lua line matters.)
function helper.fails(fn, ...)
  local ok, err = pcall(fn, ...)
  luassert.is_false(ok, "expected an error")
  return tostring(err)
end

-- Asserts that s contains sub (plain text).
function helper.has(s, sub) luassert.truthy(s:find(sub, 1, true), ("%q not found in:\n%s"):format(sub, s)) end

function helper.shell_quote(s)
  return "'" .. tostring(s):gsub("'", "'\\''") .. "'"
end

-- Runs a shell command; returns stdout, stderr, exit code.
function helper.run(cmd, stdin)
  local errf = os.tmpname()
  local inf
  if stdin then
    inf = os.tmpname()
    local f = assert(io.open(inf, "wb")); f:write(stdin); f:close()
    cmd = cmd .. " < " .. inf
  end
  local p = io.popen(cmd .. " 2> " .. errf, "r")
  local out = p:read("a")
  local _, _, code = p:close()
  local f = io.open(errf, "rb")
  local err = f and f:read("a") or ""
  if f then f:close() end
  os.remove(errf)
  if inf then os.remove(inf) end
  return out, err, code
end

-- The whole file at path (bytes); raises if it cannot be read.
function helper.read_file(path)
  local f = assert(io.open(path, "rb"))
  local s = f:read("a")
  f:close()
  return s
end

function helper.write_temp(text, suffix)
  local name = os.tmpname() .. (suffix or "")
  local f = assert(io.open(name, "wb"))
  f:write(text)
  f:close()
  return name
end

-- Names of the ops directly in the body of the first function of module m.
function helper.body_op_names(m)
  local names = {}
  for _, op in ipairs(m:find("func.func"):body():ops()) do names[#names + 1] = op.name end
  return names
end

return helper

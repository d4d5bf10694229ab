-- spec/lua/helper.lua — shared by the kiln busted specs (require "spec.lua.helper").
-- Run the specs from the repository root:
--   busted --lpath='lua/?.lua;lua/?/init.lua' --cpath='build/?.so' spec/lua
-- KILN_BIN overrides the kiln executable used by cli_spec (default build/kiln).
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

-- spec/lua/gemm_graphs.lua — graphs and helpers the NVIDIA code-generation specs share
-- (nvidia_gemm_spec, tma_spec, cp_async_spec): count(s, pat) the matches of a Lua pattern;
-- dot(M, N, K, dt, at, bt) C = A @ B with A stored [K, M] (at) or [M, K] and B stored [N, K]
-- (bt) or [K, N]; seed_conv() the seed case at batch 512: NHWC 1x1 conv 2048 -> 512 on 7x7,
-- f16, plus a residual and a relu; ptxas_v(arch, ptx) the output of `ptxas -arch=arch -v` on
-- the PTX (nil when ptxas is absent: ptxas_tool.lua); sanitized(what) true (and says so) under
-- scripts/test's sanitizer pass (KILN_SPEC_SANITIZED), which leaves the large-kernel ptxas
-- checks to the plain pass.
local kiln = require "kiln"
local M = {}

function M.count(s, pat)
  local n = 0
  for _ in s:gmatch(pat) do n = n + 1 end
  return n
end

function M.dot(Mr, N, K, dt, at, bt)
  local g = kiln.graph("gemm")
  local a = at and g:param("a", { K, Mr }, dt):transpose { 1, 0 } or g:param("a", { Mr, K }, dt)
  local b = bt and g:param("b", { N, K }, dt):transpose { 1, 0 } or g:param("b", { K, N }, dt)
  g:output(g:dot(a, b))
  return g
end

function M.seed_conv()
  local g = kiln.graph("seed_conv")
  local x = g:param("x", { 512, 2048, 7, 7 }, "f16", { layout = "NHWC" })
  local w = g:param("w", { 512, 2048, 1, 1 }, "f16", { layout = "KYXC" })
  local r = g:param("r", { 512, 512, 7, 7 }, "f16", { layout = "NHWC" })
  g:output((g:conv(x, w) + r):relu())
  return g
end

local find_ptxas = require "ptxas_tool"
function M.ptxas_v(arch, ptx)
  local ptxas = find_ptxas()
  if not ptxas then return nil end
  local path = os.tmpname()
  local f = assert(io.open(path, "wb"))
  f:write(ptx)
  f:close()
  local h = io.popen(("%s -arch=%s -v -o /dev/null %s 2>&1"):format(ptxas, arch, path))
  local out = h:read("a")
  h:close()
  os.remove(path)
  return out
end

function M.sanitized(what)
  if not os.getenv("KILN_SPEC_SANITIZED") then return false end
  print(what .. ": left to the plain pass (the sanitizer pass skips the large-kernel ptxas checks)")
  return true
end

return M

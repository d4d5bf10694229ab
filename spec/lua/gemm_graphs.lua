-- spec/lua/gemm_graphs.lua — graphs and helpers the NVIDIA code-generation specs share
-- (nvidia_gemm_spec, tma_spec, cp_async_spec, ptx_addr_spec): count(s, pat) the matches of a
-- Lua pattern; dot(M, N, K, dt, at, bt) C = A @ B with A stored [K, M] (at) or [M, K] and B
-- stored [N, K] (bt) or [K, N]; conv(N, C, K, HW[, name]) an NHWC 1x1 conv C -> K on HW x HW
-- at batch N, f16, plus a residual and a relu; seed_conv() the seed case, conv(512, 2048,
-- 512, 7); ptxas_v(arch, ptx) the output of `ptxas -arch=arch -v` on the PTX (nil when ptxas
-- is absent or under the sanitizer pass: ptxas_tool.lua); ptxas_unclean(arch, ptx, frames) its
-- nonzero spill / stack-frame reports; gtb_pipeline(opts) the default
-- pipeline with rock-gridwise-to-blockwise{opts}; gtb_extra(pl, extra) the pipeline pl (nil:
-- the default) with extra ("name=value") added to its rock-gridwise-to-blockwise options, pl
-- itself where it names that option already; gemm_of(p, target) a program's GEMM kernel.
-- scripts/test's sanitizer pass (KILN_SPEC_SANITIZED=1) looks for memory errors in the
-- library, which the small cases and a sample of long lists of like cases find as well as
-- all of them: sanitized(what) true (and says so) under it, for the large-kernel checks the
-- plain pass alone runs; sample(list, what[, every]) the list, or under it every 5th (every)
-- element from the first (and says so); other specs sample with it too.
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

function M.conv(N, C, K, HW, name)
  local g = kiln.graph(name or "conv")
  local x = g:param("x", { N, C, HW, HW }, "f16", { layout = "NHWC" })
  local w = g:param("w", { K, C, 1, 1 }, "f16", { layout = "KYXC" })
  local r = g:param("r", { N, K, HW, HW }, "f16", { layout = "NHWC" })
  g:output((g:conv(x, w) + r):relu())
  return g
end

function M.gtb_pipeline(opts)
  local pl, n = kiln.default_pipeline():gsub("rock%-gridwise%-to%-blockwise[^,]*,",
                                              "rock-gridwise-to-blockwise{" .. opts .. "},", 1)
  assert(n == 1, "the default pipeline has no rock-gridwise-to-blockwise")
  return pl
end
-- g compiled for sm_90a (no cache) with rock-gridwise-to-blockwise{opts} and perf config pc
function M.compile_gtb_sm90a(g, opts, pc)
  return kiln.compile(g, { target = "sm_90a", cache = false, perf_config = pc, pipeline = M.gtb_pipeline(opts) })
end
function M.gtb_extra(pl, extra)
  pl = pl or kiln.default_pipeline()
  if pl:find(extra:match("^[%w%-]+=") or extra, 1, true) then return pl end
  local out, n = pl:gsub("rock%-gridwise%-to%-blockwise{([^}]*)}", "rock-gridwise-to-blockwise{%1," .. extra .. "}", 1)
  if n == 0 then out = pl:gsub("rock%-gridwise%-to%-blockwise,", "rock-gridwise-to-blockwise{" .. extra .. "},", 1) end
  return out
end
function M.gemm_of(p, target)
  for _, k in ipairs(p:kernels(target)) do if k.kind == "gemm" then return k end end
end

function M.seed_conv() return M.conv(512, 2048, 512, 7, "seed_conv") end

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
-- ptxas_unclean(arch, ptx, frames): nil where ptxas_v is nil, else the list of `ptxas -v`
-- reports of nonzero spill-store bytes (and, with frames, nonzero stack frames; empty when
-- clean) and the log
function M.ptxas_unclean(arch, ptx, frames)
  local log = M.ptxas_v(arch, ptx)
  if not log then return nil end
  local bad = {}
  for n in log:gmatch("(%d+) bytes spill stores") do
    if n ~= "0" then bad[#bad + 1] = n .. " bytes spill stores" end
  end
  for n in frames and log:gmatch("(%d+) bytes stack frame") or function() end do
    if n ~= "0" then bad[#bad + 1] = n .. " bytes stack frame" end
  end
  return bad, log
end

function M.sample(list, what, every)
  if not os.getenv("KILN_SPEC_SANITIZED") then return list end
  every = every or 5
  local out = {}
  for i = 1, #list, every do out[#out + 1] = list[i] end
  print(("%s: %d of the %d cases under the sanitizer pass (every %d%s; the plain pass runs all)"):format(
    what, #out, #list, every, every == 2 and "nd" or every == 3 and "rd" or "th"))
  return out
end

function M.sanitized(what)
  if not os.getenv("KILN_SPEC_SANITIZED") then return false end
  print(what .. ": left to the plain pass (the sanitizer pass skips the large kernels and the ptxas checks)")
  return true
end

return M

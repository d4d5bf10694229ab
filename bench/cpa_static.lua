-- bench/cpa_static.lua — static memory-access analysis of the cp.async GEMM pipeline (no GPU):
-- compiles bench/gpu_kiln.lua's 4096^3 f16 GEMM (B stored [N, K]: both operands through
-- cp.async; --b: B stored [K, N]) at rock-gridwise-to-blockwise{cp-async=S} for S = 1..4 and
-- interprets the PTX of one warp (spec/lua/ptx_addr.lua) to count, per memory instruction
-- kind, the executions, the global 32-byte sectors per request (ideal: bytes / 32) and the
-- shared-memory wavefronts per request (bank conflicts: ideal = bytes / 128 for 16-byte
-- lanes, 1 for 4-byte lanes), plus the kernel's LDS bytes and the PTX's instruction mix.
-- For cp.async it also counts the fill pieces per request: distinct (128-byte global line,
-- 128-byte LDS row) pairs over the warp's lanes, the LDS writes of the copy if the fill of
-- each global line is written per LDS row it lands in (ideal: 4 for 512 contiguous bytes).
--   build/kiln bench/cpa_static.lua [sm_90|sm_80] [--b] [--warp W] [--layout xor|krow|kgroup]
package.path = "./spec/lua/?.lua;" .. package.path
local kiln = require "kiln"
local PA = require "ptx_addr"
local C = require "cp_async_cases"
local target, bt, warp, layout = "sm_90", true, 0, nil
do
  local i = 1
  while arg and arg[i] do
    if arg[i] == "--b" then bt = false
    elseif arg[i] == "--warp" then i = i + 1; warp = assert(math.tointeger(tonumber(arg[i])))
    elseif arg[i] == "--layout" then i = i + 1; layout = arg[i]
    else target = arg[i] end
    i = i + 1
  end
end

local g = kiln.graph(bt and "gemm_bt" or "gemm")
local a = g:param("a", { 4096, 4096 }, "f16")
local b = bt and g:param("b", { 4096, 4096 }, "f16"):transpose { 1, 0 } or g:param("b", { 4096, 4096 }, "f16")
g:output(g:dot(a, b))

-- shared wavefronts of one request: lanes in phases (16-byte: 8 lanes, 8-byte: 16, else 32),
-- per phase the most distinct 4-byte words any one bank holds
local function wavefronts(acc, bytes, phase_of)
  local phases = {}
  for _, x in ipairs(acc) do
    local ph = phase_of(x)
    phases[ph] = phases[ph] or {}
    for w = 0, bytes // 4 - 1 do
      local word = x.addr // 4 + w
      local bank = word % 32
      phases[ph][bank] = phases[ph][bank] or {}
      phases[ph][bank][word] = true
    end
  end
  local n = 0
  for _, banks in pairs(phases) do
    local m = 0
    for _, words in pairs(banks) do
      local c = 0
      for _ in pairs(words) do c = c + 1 end
      m = math.max(m, c)
    end
    n = n + m
  end
  return n
end

for S = 1, 4 do
  local pl = C.pipeline(S)
  if layout then pl = pl:gsub("cp%-async=(%d)", "cp-async=%1,cp-async-layout=" .. layout) end
  local p = kiln.compile(g, { target = target, cache = false, pipeline = pl })
  local k
  for _, x in ipairs(p:kernels(target)) do if x.kind == "gemm" then k = x end end
  local ptx = p:disasm(k.name, target)
  -- requests: key (instruction, occurrence per thread) -> list of lane accesses
  local occ, req, order = {}, {}, {}
  local last_dst, fills, fill_req = {}, {}, {}
  local threads = {}
  for l = 0, 31 do threads[warp * 32 + l] = true end
  local params = {}
  for i, x in ipairs(k.args) do params[i] = PA.buffer_bytes(x.type) end
  local rep = PA.check(ptx, { params = params, grid = k.grid, block = k.block, blocks = { 0 }, threads = threads,
    dynamic_shared = k.lds_bytes > 48 * 1024 and k.lds_bytes or 0,
    trace = function(tid, inst, space, addr, bytes, what)
      if what == "cp.async destination" then last_dst[tid] = addr // 128
      elseif what == "cp.async source" then
        local key = inst.text .. "\0" .. ((occ[tid] or {})[inst.text .. "\0" .. what] or 0)
        if not fills[key] then fills[key] = {}; fill_req[#fill_req + 1] = key end
        fills[key][(addr // 128) .. ":" .. last_dst[tid]] = true
      end
      occ[tid] = occ[tid] or {}
      local key = inst.text .. "\0" .. what
      local n = (occ[tid][key] or 0) + 1
      occ[tid][key] = n
      local rk = key .. "\0" .. n
      if not req[rk] then req[rk] = { inst = inst, space = space, bytes = bytes, what = what, lanes = {} }; order[#order + 1] = rk end
      local r = req[rk]
      r.lanes[#r.lanes + 1] = { lane = tid % 32, addr = addr }
    end })
  assert(not rep, rep)
  -- per kind: executions, sectors or wavefronts, ideal
  local kinds, korder = {}, {}
  for _, rk in ipairs(order) do
    local r = req[rk]
    local kind = r.what .. " " .. r.bytes .. "B " .. r.space
    local s = kinds[kind]
    if not s then s = { n = 0, got = 0, ideal = 0 }; kinds[kind] = s; korder[#korder + 1] = kind end
    s.n = s.n + 1
    local total = 0
    for _ in ipairs(r.lanes) do total = total + r.bytes end
    if r.space == "global" then
      local sec = {}
      for _, x in ipairs(r.lanes) do for o = 0, r.bytes - 1, 32 do sec[(x.addr + o) // 32] = true end; sec[(x.addr + r.bytes - 1) // 32] = true end
      local c = 0
      for _ in pairs(sec) do c = c + 1 end
      s.got, s.ideal = s.got + c, s.ideal + math.max(1, total // 32)
    else
      local phase
      if r.what == "ldmatrix row" then phase = function(x) return x.lane // 8 end
      elseif r.bytes >= 16 then phase = function(x) return x.lane // 8 end
      elseif r.bytes == 8 then phase = function(x) return x.lane // 16 end
      else phase = function() return 0 end end
      s.got = s.got + wavefronts(r.lanes, r.bytes, phase)
      s.ideal = s.ideal + math.max(1, total // 128)
    end
  end
  local mix = {}
  for _, pat in ipairs { "cp%.async%.c[ag]", "cp%.async%.wait_group", "cp%.async%.commit_group", "bar%.sync", "ldmatrix",
                         "mma%.sync", "ld%.global", "st%.shared", "ld%.shared" } do
    local c = 0
    for _ in ptx:gmatch("\n%s*[^\n]-" .. pat) do c = c + 1 end
    mix[#mix + 1] = pat:gsub("%%", "") .. "=" .. c
  end
  print(("S=%d stages=%d async=%s lds=%d  PTX: %s"):format(S, k.pipeline_stages or 0,
    k.async_copy ~= "" and k.async_copy or "-", k.lds_bytes, table.concat(mix, " ")))
  if #fill_req > 0 then
    local pieces = 0
    for _, key in ipairs(fill_req) do for _ in pairs(fills[key]) do pieces = pieces + 1 end end
    print(("  %-32s requests %6d  pieces  %7d (per request %.2f)"):format("cp.async fill (line, LDS row)", #fill_req,
      pieces, pieces / #fill_req))
  end
  for _, kind in ipairs(korder) do
    local s = kinds[kind]
    print(("  %-32s requests %6d  %s %7d (ideal %7d, x%.2f)"):format(kind, s.n,
      kind:find("global") and "sectors" or "wavefronts", s.got, s.ideal, s.got / s.ideal))
  end
end

-- scripts/gpu_wgmma.lua — the Hopper wgmma path (sm_90a) on the device, alone:
-- every case of spec/lua/wgmma_cases.lua against g:eval, each printed with its perf config
-- (the simplest case first). Needs a compute capability 9.0 GPU (H100 / H200).
--   build/kiln scripts/gpu_wgmma.lua [device]
package.path = "spec/lua/?.lua;" .. package.path
local W = require "wgmma_cases"
local dev = kiln.device(arg and arg[1] or "cuda")
print(string.format("device: %s (%s, cc %s), %s", dev.name, dev.arch, tostring(dev.cc), dev.kind))
if not W.device_ok(dev) then print("not a compute capability 9.0 CUDA device: nothing to run"); return end
local pass, fail, t0 = 0, 0, kiln.clock_ms()
for _, c in ipairs(W.cases()) do
  local ok, res, msg = pcall(W.run, c, dev)
  if ok then
    pass = pass + 1
    print(("ok   %s  %s%s"):format(c.name, res, msg and ("  " .. msg) or ""))
  else
    fail = fail + 1
    print(("FAIL %s  %s: %s"):format(c.name, c.perf or "wgmma=true", tostring(res)))
  end
end
print(string.format("wgmma on %s: %d passed, %d failed (%.1f s)", dev.arch, pass, fail, (kiln.clock_ms() - t0) / 1e3))
if fail > 0 then os.exit(1) end

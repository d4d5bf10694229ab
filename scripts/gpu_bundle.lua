-- scripts/gpu_bundle.lua — a bundle compiled for host + sm_90 + gfx942, saved, loaded
-- back into a new context and run on the present GPU (and the host), against g:eval.
local dev = kiln.device(arg and arg[1] or "auto")
local g = kiln.graph("bundle_check")
local a = g:param("a", { 65, 40 }, "f16")
local b = g:param("b", { 40, 33 }, "f16")
local bias = g:param("bias", { 1, 33 }, "f16")
g:output((g:dot(a, b) + bias):relu())
local p = kiln.compile(g, { targets = { "host", "sm_90", "gfx942" } })
local path = os.tmpname()
p:save(path)
local q = kiln.load(kiln.context(), path)
os.remove(path)
local inputs = { a = kiln.rand({ 65, 40 }, "f16"), b = kiln.rand({ 40, 33 }, "f16"), bias = kiln.rand({ 1, 33 }, "f16") }
local want = g:eval(inputs)
for _, d in ipairs { kiln.device("host"), dev } do
  local got = q:run(inputs, { device = d })
  local ok = kiln.allclose(got, want, { rtol = 1e-2, atol = 1e-2 })
  print(string.format("bundle run on %s (%s): %s", d.name, d.arch, ok and "OK" or "MISMATCH"))
  if not ok then os.exit(1) end
end

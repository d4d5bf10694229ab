-- bench/cvt_sm90.lua — the input-fusion cost rule's sm_90 (mma.sync) cases on a compute
-- capability 9.0 GPU: conv_cvt (relu(conv(convert(x f32 NHWC -> f16), w) + r), N = 512,
-- C = 2048, 7x7, K = 512) and gemm_cvt 4096^3 compiled for sm_90 three ways: the default
-- pipeline (the rule decides), input fusion forced (graph-partition{input-fusion-cost=false})
-- and off (input-fusion=false); one line each: kernels, median ms of 20 launches.
--   build/kiln bench/cvt_sm90.lua [device]
local dev = kiln.device(arg and arg[1] or "auto")
if dev.kind ~= "cuda" then print("cvt_sm90: needs a CUDA device, got " .. dev.kind); return end
local function with(opt) return (kiln.default_pipeline():gsub("graph%-partition,", "graph-partition{" .. opt .. "},", 1)) end
local function median(t) table.sort(t); return t[(#t + 1) // 2] end
local cases = {}
do
  local g = kiln.graph("conv_cvt")
  local x = g:param("x", { 512, 2048, 7, 7 }, "f32", { layout = "NHWC" })
  local w = g:param("w", { 512, 2048, 1, 1 }, "f16", { layout = "KYXC" })
  g:output((g:conv(x:convert("f16"), w) + g:param("r", { 512, 512, 7, 7 }, "f16", { layout = "NHWC" })):relu())
  cases[#cases + 1] = { "conv_cvt_f16_n512", g, { x = kiln.rand({ 512, 2048, 7, 7 }, "f32", { layout = "NHWC" }),
    w = kiln.rand({ 512, 2048, 1, 1 }, "f16", { layout = "KYXC" }), r = kiln.rand({ 512, 512, 7, 7 }, "f16", { layout = "NHWC" }) } }
  local h = kiln.graph("gemm_cvt")
  h:output(h:dot(h:param("a", { 4096, 4096 }, "f32"):convert("f16"), h:param("b", { 4096, 4096 }, "f16")))
  cases[#cases + 1] = { "gemm_cvt_f16_4096", h, { a = kiln.rand({ 4096, 4096 }, "f32"), b = kiln.rand({ 4096, 4096 }, "f16") } }
end
for _, c in ipairs(cases) do
  for _, t in ipairs { "sm_90", "sm_90a" } do
    for _, m in ipairs { { "default", nil }, { "fused", with("input-fusion-cost=false") }, { "unfused", with("input-fusion=false") } } do
      local ok, err = pcall(function()
        local p = kiln.compile(c[2], { target = t, pipeline = m[2] })
        local r = p:prepare(c[3], { device = dev })
        local ms = median(r:time { warmup = 3, reps = 20 })
        local ks = {}
        for _, k in ipairs(p:kernels()) do ks[#ks + 1] = k.kind end
        print(("%-20s %-6s %-8s %-22s %.4f ms"):format(c[1], t, m[1], table.concat(ks, ","), ms))
      end)
      if not ok then print(("%-20s %-6s %-8s ERROR %s"):format(c[1], t, m[1], tostring(err))) end
    end
  end
end

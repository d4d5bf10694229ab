-- amd_cases.lua — the benchmark suite's shapes (bench/gpu_cases.txt) as graphs, for the
-- static AMDGPU checks (amd_isa_spec.lua, amd_stats_spec.lua) and the static estimate
-- table (bench/amd_static.lua). Each case: {id, kind ("gemm", "conv", "softmax",
-- "rowsum", "ew"), build = function(kiln) -> graph}.
local M = {}

local function gemm(m, n, k, dt)
  return function(kiln)
    local g = kiln.graph(("gemm_%s_%dx%dx%d"):format(dt, m, n, k))
    g:output(g:dot(g:param("a", { m, k }, dt), g:param("b", { k, n }, dt)))
    return g
  end
end
-- relu(conv(x, w) + r): NHWC x, KYXC w[K, C, S, S] (padding S // 2), NHWC r
local function conv(n, c, h, w, k, s, dt)
  return function(kiln)
    local g = kiln.graph(("conv_%s_n%d_c%d_%dx%d_k%d_s%d"):format(dt, n, c, h, w, k, s))
    local x = g:param("x", { n, c, h, w }, dt, { layout = "NHWC" })
    local f = g:param("w", { k, c, s, s }, dt, { layout = "KYXC" })
    local r = g:param("r", { n, k, h, w }, dt, { layout = "NHWC" })
    local p = s // 2
    g:output((g:conv(x, f, { padding = { p, p, p, p } }) + r):relu())
    return g
  end
end
local function unary(id, shape, dt, f)
  return function(kiln)
    local g = kiln.graph(id)
    g:output(f(g:param("x", shape, dt)))
    return g
  end
end
local function ew_add(r, s, dt)
  return function(kiln)
    local g = kiln.graph(("ew_add_%s"):format(dt))
    g:output(g:param("x", { r, s }, dt) + g:param("y", { r, s }, dt))
    return g
  end
end

M.GEMMS = {
  { "gemm_f16_4096", "gemm", gemm(4096, 4096, 4096, "f16"), big = true },
  { "gemm_bf16_4096", "gemm", gemm(4096, 4096, 4096, "bf16"), big = true },
  { "gemm_f32_4096", "gemm", gemm(4096, 4096, 4096, "f32"), big = true },
  { "gemm_f16_8192x320x1280", "gemm", gemm(8192, 320, 1280, "f16") },
  { "gemm_bf16_8192x320x1280", "gemm", gemm(8192, 320, 1280, "bf16") },
  { "gemm_f32_8192x320x1280", "gemm", gemm(8192, 320, 1280, "f32") },
  { "gemm_f16_384x2304x768", "gemm", gemm(384, 2304, 768, "f16") },
  { "gemm_bf16_384x2304x768", "gemm", gemm(384, 2304, 768, "bf16") },
  { "conv_seed_f16_n1", "conv", conv(1, 2048, 7, 7, 512, 1, "f16") },
  { "conv_seed_f16_n512", "conv", conv(512, 2048, 7, 7, 512, 1, "f16") },
  { "conv_r50_3x3_c64_f16_n64", "conv", conv(64, 64, 56, 56, 64, 3, "f16") },
  { "conv_r50_3x3_c128_f16_n64", "conv", conv(64, 128, 28, 28, 128, 3, "f16") },
  { "conv_r50_3x3_c256_f16_n64", "conv", conv(64, 256, 14, 14, 256, 3, "f16") },
  { "conv_r50_3x3_c512_f16_n64", "conv", conv(64, 512, 7, 7, 512, 3, "f16") },
}
M.OTHERS = {
  { "softmax_f16_8192x8192", "softmax", unary("softmax_f16", { 8192, 8192 }, "f16", function(x) return x:softmax(-1) end) },
  { "softmax_f32_64x262144", "softmax", unary("softmax_f32", { 64, 262144 }, "f32", function(x) return x:softmax(-1) end) },
  { "rowsum_f16_8192x8192", "rowsum", unary("rowsum_f16", { 8192, 8192 }, "f16", function(x) return x:sum { 1 } end) },
  { "rowsum_f32_64x262144", "rowsum", unary("rowsum_f32", { 64, 262144 }, "f32", function(x) return x:sum { 1 } end) },
  { "ew_add_f32_16384x16384", "ew", ew_add(16384, 16384, "f32") },
  { "ew_add_f16_16384x16384", "ew", ew_add(16384, 16384, "f16") },
}
M.TARGETS = { "gfx90a", "gfx942", "gfx1100", "gfx1030" }

return M

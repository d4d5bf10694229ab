-- ptx_addr_spec.lua — static address checks of NVIDIA GEMM kernels (spec/lua/ptx_addr.lua, no
-- GPU needed): the PTX of bench/gpu_kiln.lua's 4096^3 f16 GEMM (B row-major and B stored
-- [N, K]; sm_80: B^T only) at rock-gridwise-to-blockwise{cp-async=S}, S = 1..4 (the default xor
-- stages), for sm_90 and sm_80 (and B^T with cp-async-layout=krow, S = 2..4), is
-- interpreted for threads of the first and the last block: every cp.async, ld / st and
-- ldmatrix stays within its kernel argument or within the shared memory the launch gives
-- (lds_bytes as dynamic shared memory above 48 KiB); and the checker itself reports a
-- launch with too little dynamic shared memory and a buffer one vector too short.
-- (scripts/test's sanitizer pass: every third kernel, gemm_graphs.sample.)
local kiln = require "kiln"
local PA = require "ptx_addr"
local C = require "cp_async_cases"
local G = require "gemm_graphs"

local function gemm(bt) return G.dot(4096, 4096, 4096, "f16", false, bt) end
-- lanes 0, 5 and 31 of each warp, and a middle lane of warp 1 (4 warps of the 128x128 tiles)
local THREADS = {}
for w = 0, 3 do for _, l in ipairs { 0, 5, 31 } do THREADS[w * 32 + l] = true end end
THREADS[32 + 18] = true

describe("PTX address ranges of the cp.async GEMMs (static)", function()
  -- (the sanitizer pass: a sample of the kernels; the interpretation is Lua's, not the library's)
  local runs = {}
  for _, t in ipairs { "sm_90", "sm_80" } do
    for _, bt in ipairs(t == "sm_90" and { false, true } or { true }) do
      for S = 1, 4 do runs[#runs + 1] = { t, bt, S } end
    end
  end
  for _, r in ipairs(G.sample(runs, "ptx_addr_spec: the default layout's kernels", 3)) do
    local t, bt, S = r[1], r[2], r[3]
    it(("%s 4096^3 f16%s cp-async=%d"):format(t, bt and " B^T" or "", S), function()
      local p = kiln.compile(gemm(bt), { target = t, cache = false, pipeline = C.pipeline(S) })
      local k = p:kernels(t)[1]
      if bt and S > 1 then assert.are.equal(S, k.pipeline_stages) end
      local rep = PA.check_kernel(p, k, t, { blocks = { 0, k.grid - 1 }, threads = THREADS })
      assert.is_nil(rep, rep)
    end)
  end
  -- cp-async-layout=krow: the async operands' stages [rows, K + 16 bytes] (larger LDS)
  runs = {}
  for _, t in ipairs { "sm_90", "sm_80" } do
    for S = 2, 4 do runs[#runs + 1] = { t, S } end
  end
  for _, r in ipairs(G.sample(runs, "ptx_addr_spec: the krow kernels", 3)) do
    local t, S = r[1], r[2]
    it(("%s 4096^3 f16 B^T cp-async=%d, cp-async-layout=krow"):format(t, S), function()
      local pl = C.pipeline(S):gsub("cp%-async=(%d)", "cp-async=%1,cp-async-layout=krow")
      local p = kiln.compile(gemm(true), { target = t, cache = false, pipeline = pl })
      local k = p:kernels(t)[1]
      assert.are.equal(S, k.pipeline_stages)
      local mb, nb, kb = k.perf_config:match("^v2:(%d+),(%d+),(%d+)")
      -- per stage MB + NB rows x (KB + 8) f16
      assert.are.equal(S * (tonumber(mb) + tonumber(nb)) * (tonumber(kb) + 8) * 2, k.lds_bytes)
      local rep = PA.check_kernel(p, k, t, { blocks = { 0, k.grid - 1 }, threads = THREADS })
      assert.is_nil(rep, rep)
    end)
  end
  it("models mul.hi (division by a constant: the grouped workgroup order's arithmetic)", function()
    -- thread t stores word t / 3 (mul.hi.u32 by 0xAAAAAAAB, >> 1) and word t / 5 of a signed
    -- division (mul.hi.s32 by 0x66666667, >> 1): 96 threads reach words 31 and 19
    local ptx = [[
.version 8.0
.target sm_90
.address_size 64
.visible .entry k(.param .u64 p, .param .u64 q)
{
  .reg .b32 %r<8>;
  .reg .b64 %rd<8>;
  ld.param.u64 %rd1, [p];
  ld.param.u64 %rd4, [q];
  mov.u32 %r1, %tid.x;
  mul.hi.u32 %r2, %r1, -1431655765;
  shr.u32 %r3, %r2, 1;
  mul.wide.u32 %rd2, %r3, 4;
  add.s64 %rd3, %rd1, %rd2;
  st.global.u32 [%rd3], %r3;
  mul.hi.s32 %r4, %r1, 1717986919;
  shr.s32 %r5, %r4, 1;
  mul.wide.s32 %rd5, %r5, 4;
  add.s64 %rd6, %rd4, %rd5;
  st.global.u32 [%rd6], %r5;
  ret;
}
]]
    local opts = { params = { 128, 80 }, grid = 1, block = 96, blocks = { 0 } } -- every thread
    assert.is_nil(PA.check(ptx, opts))
    opts.params = { 124, 80 } -- thread 95 stores word 31: bytes 124..127
    local rep = PA.check(ptx, opts)
    assert.is_truthy(rep and rep:find("of argument 1 outside its", 1, true), rep)
    opts.params = { 128, 76 } -- thread 95 stores word 19 of q: bytes 76..79
    rep = PA.check(ptx, opts)
    assert.is_truthy(rep and rep:find("of argument 2 outside its", 1, true), rep)
  end)

  it("reports too little dynamic shared memory and a short buffer", function()
    -- kgroup stages (56000 bytes; xor's are 48 KiB at S = 3: static shared memory)
    local p = kiln.compile(gemm(true), { target = "sm_90", cache = false, pipeline = C.pipeline(3, "kgroup"),
                                         perf_config = "v2:128,128,32,64,64,8" })
    local k = p:kernels("sm_90")[1]
    assert.is_true(k.lds_bytes > 48 * 1024)
    local ptx = p:disasm(k.name, "sm_90")
    local bytes = 4096 * 4096 * 2
    local opts = { params = { bytes, bytes, bytes }, grid = k.grid, block = k.block, blocks = { k.grid - 1 },
                   threads = THREADS, dynamic_shared = 0, limit = 1 }
    local rep = PA.check(ptx, opts)
    assert.is_truthy(rep and rep:find("outside the 0 bytes of shared memory", 1, true), rep)
    opts.dynamic_shared, opts.params[2] = k.lds_bytes, bytes - 16
    rep = PA.check(ptx, opts)
    assert.is_truthy(rep and rep:find("of argument 2 outside its", 1, true), rep)
  end)
end)

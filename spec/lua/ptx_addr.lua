-- ptx_addr.lua — a host-side check of the addresses an NVIDIA kernel's PTX touches (no GPU
-- needed): the PTX is interpreted thread by thread on its integer and address arithmetic only
-- (loaded values, floats and matrix results are "unknown": an address that depends on one is
-- reported), and every memory access — cp.async source and destination (with its src-size),
-- ld / st .shared / .global, ldmatrix / stmatrix rows — is checked against its buffer: global accesses
-- within one kernel argument's bytes, shared accesses within the static .shared arrays, or,
-- for `.extern .shared` (dynamic shared memory), within the bytes the launch passes.
--
--   M.check(ptx, opts) -> nil | report string (the first violations, each with its thread)
--     opts.params:  { bytes of argument 1, bytes of argument 2, ... } (kernel argument order)
--     opts.dynamic_shared: bytes of dynamic shared memory the launch passes (0 when none)
--     opts.grid, opts.block: launch sizes (x only); opts.blocks: block ids to run (default
--     first, last and the middle one); opts.threads: thread ids (default all of the block)
--   M.check_kernel(program, kernel_info, target[, opts]) -> nil | report: params from the
--     kernel's argument types, dynamic shared memory as the runtime launches it (lds_bytes
--     when above 48 KiB, driver/plan_exec.c), grid and block from the kernel info.
--     opts.trace: optional function(tid, inst, space, address, bytes, what) called for every
--     access with a known address (shared addresses relative to the shared memory's start;
--     inst: the parsed instruction, one table per PTX line; bench/cpa_static.lua uses it)
--   M.buffer_bytes(type_text) -> bytes of a dense buffer type ("buffer<4x8xf16>")
local M = {}

local MASK32 = 0xffffffff

local function trim(s) return (s:gsub("^%s+", ""):gsub("%s+$", "")) end

-- Splits the operand list at top-level commas (braces group vector operands).
local function split_operands(s)
  local out, depth, cur = {}, 0, {}
  for ch in s:gmatch(".") do
    if ch == "{" then depth = depth + 1 end
    if ch == "}" then depth = depth - 1 end
    if ch == "," and depth == 0 then
      out[#out + 1] = trim(table.concat(cur))
      cur = {}
    else
      cur[#cur + 1] = ch
    end
  end
  local last = trim(table.concat(cur))
  if last ~= "" then out[#out + 1] = last end
  return out
end

-- Parses the entry function of the PTX into { insts = {...}, labels = {name -> index},
-- params = {name -> index}, shared = {name -> offset}, static_shared = bytes, dynamic = name }.
local function parse(ptx)
  local k = { insts = {}, labels = {}, params = {}, shared = {}, static_shared = 0, nparams = 0 }
  local text = ptx:gsub("//[^\n]*", "")
  -- shared declarations (module scope or function scope)
  k.dynamic = text:match("%.extern%s+%.shared%s+%.align%s+%d+%s+%.[bus]8%s+([%w_$]+)%[%]%s*;")
  for al, name, n in text:gmatch("%.shared%s+%.align%s+(%d+)%s+%.[bus]8%s+([%w_$]+)%[(%d+)%]%s*;") do
    al = tonumber(al)
    k.static_shared = (k.static_shared + al - 1) // al * al
    k.shared[name] = k.static_shared
    k.static_shared = k.static_shared + tonumber(n)
  end
  local entry = text:match("%.entry%s+[%w_$]+%s*(%b())")
  assert(entry, "ptx_addr: no .entry in the PTX")
  for p in entry:gmatch("%.param%s+%.[%w]+%s+([%w_$]+)") do
    k.nparams = k.nparams + 1
    k.params[p] = k.nparams
  end
  local body = text:match("%.entry%s+[%w_$]+%s*%b().-(%b{})")
  assert(body, "ptx_addr: no body of the .entry")
  body = body:sub(2, -2)
  for stmt in body:gmatch("[^;]+") do
    local s = trim(stmt)
    while true do -- labels before the statement
      local lab, rest = s:match("^([%w_$]+):%s*(.*)$")
      if not lab then break end
      k.labels[lab] = #k.insts + 1
      s = rest
    end
    if s ~= "" and s:sub(1, 1) ~= "." and s:sub(1, 1) ~= "{" and s:sub(1, 1) ~= "}" then
      local pred, neg = nil, false
      local p, r = s:match("^@(!?%%[%w_]+)%s+(.*)$")
      if p then
        neg = p:sub(1, 1) == "!"
        pred = neg and p:sub(2) or p
        s = r
      end
      local op, args = s:match("^([%w_.]+)%s*(.*)$")
      k.insts[#k.insts + 1] = { op = op, args = split_operands(args), pred = pred, neg = neg, text = s }
    end
  end
  return k
end

local function bits_of(op)
  for _, t in ipairs { "64", "32", "16", "8" } do
    if op:match("%.[bsu]" .. t .. "$") or op:match("%.[bsu]" .. t .. "%.") then return tonumber(t) end
  end
  return 64
end
local function wrap(v, bits)
  if bits == 64 then return v end
  return v & ((1 << bits) - 1)
end
local function sext(v, bits)
  if bits == 64 then return v end
  v = v & ((1 << bits) - 1)
  if v >= (1 << (bits - 1)) then v = v - (1 << bits) end
  return v
end
local function is_float(op)
  return op:find("%.f16") or op:find("%.f32") or op:find("%.f64") or op:find("%.bf16") or op:find("%.e4m3")
      or op:find("%.e5m2") or op:find("^mma") or op:find("^wgmma") or op:find("^ex2") or op:find("^rcp")
      or op:find("^sqrt") or op:find("^rsqrt") or op:find("^lg2") or op:find("^sin") or op:find("^cos")
      or op:find("^tanh")
end

-- One run of a thread: returns the list of violations (strings).
local function run_thread(k, env, tid, bid, out, limit)
  local R = {}
  local pc, steps = 1, 0
  local insts = k.insts
  local function val(a)
    if a:sub(1, 1) == "%" then
      local sp, dim = a:match("^%%(%a+)%.([xyz])$")
      if sp == "tid" or sp == "ctaid" or sp == "ntid" or sp == "nctaid" then
        if dim ~= "x" then return (sp == "ntid" or sp == "nctaid") and 1 or 0 end
        return sp == "tid" and tid or sp == "ctaid" and bid or sp == "ntid" and env.block or env.grid
      end
      return R[a] -- nil: unknown
    end
    if k.shared[a] then return env.shared_base + k.shared[a] end
    if a == k.dynamic then return env.shared_base + env.dyn_off end
    local h = a:match("^0[xX](%x+)$")
    if h then return math.tointeger(tonumber(h, 16)) end
    local n = math.tointeger(tonumber(a))
    if n then return n end
    return nil
  end
  local function fail(msg)
    if #out < limit then out[#out + 1] = ("block %d thread %d: %s"):format(bid, tid, msg) end
  end
  -- address operand "[%rd5+16]" / "[%rd5]" / "[name]" / "[name+8]"
  local function addr(a)
    local inner = a:match("^%[(.*)%]$")
    if not inner then return nil end
    local base, sign, off = inner:match("^([^+%-]+)([+%-])(%-?%d+)$")
    if not base then base, sign, off = inner, "+", "0" end
    local b = val(trim(base))
    if b == nil then return nil end
    local o = math.tointeger(tonumber(off))
    return sign == "-" and b - o or b + o
  end
  local function check(space, a, bytes, what, inst)
    if env.trace and a ~= nil then env.trace(tid, inst, space, a - (space == "shared" and env.shared_base or 0), bytes, what) end
    if a == nil then
      fail(("%s: the address depends on loaded data (%s)"):format(what, inst.text))
      return
    end
    if space == "shared" then
      local lo, hi = env.shared_base, env.shared_base + env.shared_total
      if a < lo or a + bytes > hi then
        fail(("%s: shared bytes [%d, %d) outside the %d bytes of shared memory (%s)"):format(what, a - lo,
          a - lo + bytes, env.shared_total, inst.text))
      elseif a % math.min(bytes, 16) ~= 0 then
        fail(("%s: shared address %d not aligned to %d bytes (%s)"):format(what, a - lo, math.min(bytes, 16), inst.text))
      end
    else
      for i, p in ipairs(env.params) do
        if a >= p.base and a < p.base + (1 << 40) then
          if a + bytes > p.base + p.bytes then
            fail(("%s: global bytes [%d, %d) of argument %d outside its %d bytes (%s)"):format(what, a - p.base,
              a - p.base + bytes, i, p.bytes, inst.text))
          elseif a % math.min(bytes, 16) ~= 0 then
            fail(("%s: global address of argument %d not aligned to %d bytes (%s)"):format(what, i, math.min(bytes, 16), inst.text))
          end
          return
        end
      end
      fail(("%s: global address %#x is in no kernel argument (%s)"):format(what, a, inst.text))
    end
  end
  local function vec_bytes(op)
    local v = tonumber(op:match("%.v(%d)")) or 1
    local t = op:match("%.[bsuf](%d+)$") or op:match("%.[bsuf](%d+)%.") or "32"
    return v * tonumber(t) // 8
  end
  while pc <= #insts do
    steps = steps + 1
    if steps > env.max_steps then
      fail("more than " .. env.max_steps .. " instructions: a loop that does not end?")
      return
    end
    local I = insts[pc]
    pc = pc + 1
    local op, A = I.op, I.args
    local exec = true
    if I.pred then
      local p = R[I.pred]
      if p == nil then
        fail("predicate " .. I.pred .. " depends on loaded data (" .. I.text .. ")")
        return
      end
      exec = (p ~= 0) ~= I.neg
    end
    if exec then
      if op == "ret" or op == "exit" then return
      elseif op == "bra" or op == "bra.uni" then
        local t = k.labels[A[1]]
        if not t then fail("unknown label " .. A[1]); return end
        pc = t
      elseif op:match("^ld%.param") then
        local name = A[2]:match("^%[([%w_$]+)%]$")
        local i = name and k.params[name]
        R[A[1]] = i and env.params[i] and env.params[i].base or nil
      elseif op:match("^cp%.async%.c[ag]%.shared%.global") then
        local n = math.tointeger(tonumber(A[3]))
        local srcsz = A[4] and val(A[4]) or n
        check("shared", addr(A[1]), n, "cp.async destination", I)
        if srcsz == nil then fail("cp.async src-size depends on loaded data (" .. I.text .. ")")
        elseif srcsz > 0 then check("global", addr(A[2]), srcsz, "cp.async source", I) end
      elseif op:match("^cp%.async") or op:match("^bar") or op:match("^membar") or op:match("^fence") then
        -- commit / wait / barriers: no address
      elseif op:match("^ldmatrix") then
        local n = tonumber(op:match("%.x(%d)")) or 1
        if tid % 32 < 8 * n then check("shared", addr(A[2]), 16, "ldmatrix row", I) end
        for r in A[1]:gmatch("%%[%w_]+") do R[r] = nil end
      elseif op:match("^stmatrix") then -- lanes 0 .. 8N-1 give the row addresses (16 bytes each)
        local n = tonumber(op:match("%.x(%d)")) or 1
        -- its address is a 32-bit shared-window offset (lower_accel.c's inline PTX): the
        -- shared base (1 << 32 here) truncated away, added back
        local a = addr(A[1])
        if a and a < env.shared_base then a = a + env.shared_base end
        if tid % 32 < 8 * n then check("shared", a, 16, "stmatrix row", I) end
      elseif op:match("^ld%.") or op:match("^ld$") then
        local space = op:match("%.shared") and "shared" or op:match("%.global") and "global" or op:match("%.local") and "local"
        if space == "local" then fail("local memory access (" .. I.text .. ")")
        elseif space then check(space, addr(A[2]), vec_bytes(op), "load", I) end
        for r in A[1]:gmatch("%%[%w_]+") do R[r] = nil end
      elseif op:match("^st%.") then
        local space = op:match("%.shared") and "shared" or op:match("%.global") and "global" or op:match("%.local") and "local"
        if space == "local" then fail("local memory access (" .. I.text .. ")")
        elseif space then check(space, addr(A[1]), vec_bytes(op), "store", I) end
      elseif op:match("^atom") or op:match("^red") then
        local space = op:match("%.shared") and "shared" or "global"
        local t = tonumber(op:match("%.[bsuf](%d+)$")) or 32
        check(space, addr(op:match("^atom") and A[2] or A[1]), t // 8, "atomic", I)
        if op:match("^atom") then R[A[1]] = nil end
      elseif is_float(op) then
        for r in (A[1] or ""):gmatch("%%[%w_]+") do R[r] = nil end
      else
        local d = A[1]
        local bits = bits_of(op)
        local function v(i) return val(A[i]) end
        local res
        local base = op:match("^([%a]+)")
        if base == "mov" then
          res = v(2)
          if res and A[2]:match("^%%[%a]+%.[xyz]$") then res = wrap(res, 32) end
        elseif base == "cvt" then
          local dt, st = op:match("^cvt%.([%w]+)%.([%w]+)$")
          local x = v(2)
          if x and dt and st then
            local sb, db = tonumber(st:sub(2)), tonumber(dt:sub(2))
            x = st:sub(1, 1) == "s" and sext(x, sb) or wrap(x, sb)
            res = dt:sub(1, 1) == "s" and sext(x, db) or wrap(x, db)
          end
        elseif base == "setp" then
          local cmp, t = op:match("^setp%.(%a+)%.(%w+)$")
          local a, b = v(2), v(3)
          if a and b and cmp then
            local tb = tonumber(t:sub(2))
            if t:sub(1, 1) == "s" then a, b = sext(a, tb), sext(b, tb) else a, b = wrap(a, tb), wrap(b, tb) end
            local r
            local ua = t:sub(1, 1) ~= "s"
            local lt = ua and math.ult(a, b) or (not ua and a < b)
            if cmp == "eq" then r = a == b elseif cmp == "ne" then r = a ~= b
            elseif cmp == "lt" or cmp == "lo" then r = lt
            elseif cmp == "le" or cmp == "ls" then r = lt or a == b
            elseif cmp == "gt" or cmp == "hi" then r = not lt and a ~= b
            elseif cmp == "ge" or cmp == "hs" then r = not lt
            else fail("unsupported comparison " .. op); return end
            res = r and 1 or 0
          end
        elseif base == "selp" then
          local p = v(4)
          if p ~= nil then res = p ~= 0 and v(2) or v(3) end
        elseif base == "add" or base == "sub" or base == "and" or base == "or" or base == "xor" then
          local a, b = v(2), v(3)
          if a and b then
            res = base == "add" and a + b or base == "sub" and a - b or base == "and" and a & b
                or base == "or" and a | b or a ~ b
            res = wrap(res, bits)
          end
        elseif base == "not" then
          local a = v(2)
          if a then res = wrap(~a, bits) end
        elseif base == "neg" then
          local a = v(2)
          if a then res = wrap(-a, bits) end
        elseif base == "shl" then
          local a, b = v(2), v(3)
          if a and b then res = b >= bits and 0 or wrap(a << b, bits) end
        elseif base == "shr" then
          local a, b = v(2), v(3)
          if a and b then
            if op:match("%.s%d+$") then res = wrap(sext(a, bits) >> math.min(b, bits - 1) | (sext(a, bits) < 0 and ~(-1 >> math.min(b, bits - 1)) or 0), bits)
            else res = b >= bits and 0 or (wrap(a, bits) >> b) end
          end
        elseif base == "mul" or base == "mad" then
          local a, b = v(2), v(3)
          local c = base == "mad" and v(4) or 0
          if a and b and c then
            local signed = op:match("%.s%d+$") ~= nil
            if op:match("%.wide") then
              local sb = bits
              a = signed and sext(a, sb) or wrap(a, sb)
              b = signed and sext(b, sb) or wrap(b, sb)
              res = a * b + c
            elseif op:match("%.hi") then -- the high half of the 2 x bits product (division by a constant)
              if bits <= 32 then
                a = signed and sext(a, bits) or wrap(a, bits)
                b = signed and sext(b, bits) or wrap(b, bits)
                -- the product is exact mod 2^64; signed: // floors (an arithmetic shift), unsigned: >> (logical)
                local pr = a * b
                res = wrap((signed and pr // (1 << bits) or pr >> bits) + c, bits)
              elseif not signed then -- u64: 32-bit limbs
                a, b = wrap(a, 64), wrap(b, 64)
                local M32 = 0xffffffff
                local al, ah, bl, bh = a & M32, a >> 32, b & M32, b >> 32
                local ll, lh, hl, hh = al * bl, al * bh, ah * bl, ah * bh
                local mid = (ll >> 32) + (lh & M32) + (hl & M32)
                res = wrap(hh + (lh >> 32) + (hl >> 32) + (mid >> 32) + c, 64)
              else
                fail("mul.hi.s64 is not modelled (" .. I.text .. ")"); return
              end
            else
              res = wrap(a * b + c, bits)
            end
          end
        elseif base == "div" or base == "rem" then
          local a, b = v(2), v(3)
          if a and b then
            if b == 0 then fail("division by zero (" .. I.text .. ")"); return end
            if op:match("%.s%d+$") then
              a, b = sext(a, bits), sext(b, bits)
              local q = a // b
              if (a % b ~= 0) and ((a < 0) ~= (b < 0)) then q = q + 1 end
              res = wrap(base == "div" and q or a - q * b, bits)
            else
              a, b = wrap(a, bits), wrap(b, bits)
              if a < 0 or b < 0 then fail("unsigned division above 2^63 (" .. I.text .. ")"); return end
              res = base == "div" and a // b or a % b
            end
          end
        elseif base == "min" or base == "max" then
          local a, b = v(2), v(3)
          if a and b then
            if op:match("%.s%d+$") then a, b = sext(a, bits), sext(b, bits) end
            local less = op:match("%.s%d+$") and a < b or (not op:match("%.s%d+$") and math.ult(a, b))
            res = wrap((base == "min") == less and a or b, bits)
          end
        elseif base == "bfe" then
          local a, pos, len = v(2), v(3), v(4)
          if a and pos and len then
            local x = wrap(a, bits) >> pos
            if len >= bits then res = x else
              x = x & ((1 << len) - 1)
              if op:match("%.s%d+$") and len > 0 and (x >> (len - 1)) & 1 == 1 then x = x - (1 << len) end
              res = wrap(x, bits)
            end
          end
        else
          fail("unsupported instruction " .. op .. " (" .. I.text .. ")")
          return
        end
        if d then R[d] = res end
      end
    end
  end
end

-- see the header
function M.check(ptx, opts)
  local k = parse(ptx)
  local env = { params = {}, block = opts.block, grid = opts.grid, shared_base = 1 << 32, dyn_off = 0,
                max_steps = opts.max_steps or 20000000, trace = opts.trace }
  for i, b in ipairs(opts.params) do env.params[i] = { base = (i + 1) << 44, bytes = b } end
  if k.dynamic then
    env.dyn_off = (k.static_shared + 15) // 16 * 16
    env.shared_total = env.dyn_off + (opts.dynamic_shared or 0)
  else
    env.shared_total = k.static_shared
  end
  local out, limit = {}, opts.limit or 8
  local blocks = opts.blocks or { 0, opts.grid // 2, opts.grid - 1 }
  for _, bid in ipairs(blocks) do
    for t = 0, opts.block - 1 do
      if not opts.threads or opts.threads[t] then run_thread(k, env, t, bid, out, limit) end
      if #out >= limit then break end
    end
    if #out >= limit then break end
  end
  if #out == 0 then return nil end
  return table.concat(out, "\n")
end

local ELEM = { f16 = 2, bf16 = 2, f32 = 4, f64 = 8, i8 = 1, u8 = 1, i16 = 2, i32 = 4, i64 = 8, i1 = 1,
               f8E4M3FNUZ = 1, f8E5M2FNUZ = 1, f8E4M3FN = 1, f8E5M2 = 1 }
function M.buffer_bytes(ty)
  local inner = assert(ty:match("^buffer<(.-)>"), "ptx_addr: not a buffer type: " .. ty):match("^[^,]*")
  local n, elem = 1, nil
  for part in inner:gmatch("[^x]+") do
    local d = math.tointeger(tonumber(part))
    if d then n = n * d else elem = part end
  end
  local eb = assert(ELEM[elem], "ptx_addr: unknown element type in " .. ty)
  return n * eb
end

function M.check_kernel(p, k, target, opts)
  opts = opts or {}
  local params = {}
  for i, a in ipairs(k.args) do params[i] = M.buffer_bytes(a.type) end
  return M.check(p:disasm(k.name, target), {
    params = params, grid = k.grid, block = k.block, blocks = opts.blocks, threads = opts.threads,
    dynamic_shared = k.lds_bytes > 48 * 1024 and k.lds_bytes or 0, limit = opts.limit })
end

return M

-- kiln/repl.lua — what the REPL of the kiln executable (lua/main.c) asks Lua for:
--   repl.complete(word) -> sorted list of completions of word (each the whole word)
-- complete: word is the text before the cursor made of names, '.' and ':' ("kiln.com",
-- "g:par", "stri"). The part before the last '.' or ':' must be a chain of names; it is
-- looked up without calling anything but plain table reads, __index tables and the
-- tables an __index function closes over (the methods and properties of kiln handles), so
-- completing never runs user code. After ':' only functions are offered. Globals also
-- complete to Lua's keywords. Never raises: anything unknown gives no completions.
local M = {}

local KEYWORDS = { "and", "break", "do", "else", "elseif", "end", "false", "for", "function", "goto", "if", "in",
  "local", "nil", "not", "or", "repeat", "return", "then", "true", "until", "while" }

-- a plain read: rawget, then the __index chain when it is made of tables
local function field(v, k)
  for _ = 1, 8 do
    if type(v) == "table" then
      local r = rawget(v, k)
      if r ~= nil then return r end
    end
    local mt = getmetatable(v)
    local idx = type(mt) == "table" and rawget(mt, "__index")
    if type(idx) ~= "table" then
      if type(idx) == "function" then
        for i = 1, 8 do
          local name, up = debug.getupvalue(idx, i)
          if not name then break end
          if type(up) == "table" and rawget(up, k) ~= nil then return rawget(up, k) end
        end
      end
      return nil
    end
    v = idx
  end
end

-- every key a plain read of v can see: {name = value}
local function keys(v)
  local out, seen = {}, 0
  for _ = 1, 8 do
    if type(v) == "table" then
      for k, x in next, v do
        if type(k) == "string" and out[k] == nil then out[k] = x end
      end
    end
    local mt = getmetatable(v)
    local idx = type(mt) == "table" and rawget(mt, "__index")
    if type(idx) == "function" then
      for i = 1, 8 do
        local name, up = debug.getupvalue(idx, i)
        if not name then break end
        if type(up) == "table" then
          for k, x in next, up do
            if type(k) == "string" and out[k] == nil then out[k] = x end
          end
        end
      end
    end
    if type(idx) ~= "table" then break end
    v = idx
    seen = seen + 1
  end
  return out
end

function M.complete(word)
  local ok, res = pcall(function()
    local head, sep, partial = word:match("^(.-)([.:])([%w_]*)$")
    local out = {}
    if not head then
      partial = word
      if not partial:match("^[%a_][%w_]*$") and partial ~= "" then return out end
      for k in pairs(keys(_G)) do
        if k:match("^[%a_][%w_]*$") and k:sub(1, #partial) == partial then out[#out + 1] = k end
      end
      for _, k in ipairs(KEYWORDS) do
        if k:sub(1, #partial) == partial then out[#out + 1] = k end
      end
      table.sort(out)
      return out
    end
    local v = _G
    for name in (head .. "."):gmatch("(.-)%.") do
      if not name:match("^[%a_][%w_]*$") then return out end
      v = field(v, name)
      if v == nil then return out end
    end
    for k, x in pairs(keys(v)) do
      if k:match("^[%a_][%w_]*$") and not k:match("^__") and k:sub(1, #partial) == partial and
          (sep == "." or type(x) == "function") then
        out[#out + 1] = head .. sep .. k
      end
    end
    table.sort(out)
    return out
  end)
  return ok and res or {}
end

return M

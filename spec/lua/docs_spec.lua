-- docs_spec.lua — the documentation runs as written, and the repository speaks for itself.
-- Every fenced code block of README.md and docs/*.md is taken by its info string:
--   ```lua          run with build/kiln (KILN_DEVICE=host) from the repository root
--   ```sh runnable  run with bash -e from the repository root (build/kiln is built)
--   ```c            the C example of "Embedding from C": install_spec builds it against the
--                   installed kiln.h and runs it
--   ```sh, ```      text (set-up commands, diagrams): not run
-- Any other info string fails, so a new kind of block gets a decision here. A second test
-- greps every tracked file for references to things a clone does not have.
local helper = require "spec.lua.helper"
local q = helper.shell_quote
local bin = helper.kiln_bin()

local function read(path) return helper.read_file(helper.root .. "/" .. path) end

local function doc_files()
  local files = { "README.md" }
  local p = assert(io.popen("ls " .. q(helper.root .. "/docs") .. " 2>/dev/null"))
  for name in p:lines() do
    if name:match("%.md$") then files[#files + 1] = "docs/" .. name end
  end
  p:close()
  return files
end

-- The fenced blocks of a markdown text: {info=, code=, line=, section=}.
local function blocks(text)
  local out, line, section, cur = {}, 0, "", nil
  for l in (text .. "\n"):gmatch("(.-)\n") do
    line = line + 1
    if cur then
      if l:match("^```%s*$") then
        out[#out + 1] = cur
        cur = nil
      else
        cur.code = cur.code .. l .. "\n"
      end
    elseif l:match("^```") then
      cur = { info = l:match("^```%s*(.-)%s*$"), code = "", line = line, section = section }
    elseif l:match("^##+ ") then
      section = l:match("^##+ (.-)%s*$")
    end
  end
  assert(not cur, "unterminated code block at line " .. (cur and cur.line or 0))
  return out
end

describe("documentation", function()
  it("README starts with the two commands", function()
    local b = blocks(read("README.md"))[1]
    assert.are.equal("sh", b.info)
    assert.are.equal("scripts/kiln examples/conv_add_relu.lua\nscripts/test\n", b.code)
  end)

  for _, file in ipairs(doc_files()) do
    for _, b in ipairs(blocks(read(file))) do
      local where = ("%s:%d (%s)"):format(file, b.line, b.section)
      if b.info == "lua" then
        it("runs the Lua block at " .. where, function()
          local path = helper.write_temp(b.code, ".lua")
          local out, err, code = helper.run("cd " .. q(helper.root) .. " && KILN_DEVICE=host " .. q(bin) .. " " .. q(path))
          os.remove(path)
          assert(code == 0, where .. " failed (exit " .. tostring(code) .. "):\n" .. out .. err)
        end)
      elseif b.info == "sh runnable" then
        it("runs the shell block at " .. where, function()
          local path = helper.write_temp(b.code, ".sh")
          local out, err, code = helper.run("cd " .. q(helper.root) .. " && KILN_DEVICE=host bash -e " .. q(path))
          os.remove(path)
          assert(code == 0, where .. " failed (exit " .. tostring(code) .. "):\n" .. out .. err)
        end)
      elseif b.info == "c" then
        it("the C block at " .. where .. " is the one install_spec builds and runs", function()
          assert.are.equal("README.md", file)
          assert.are.equal("Embedding from C", b.section)
          helper.has(read("spec/lua/install_spec.lua"), "## Embedding from C")
        end)
      else
        it("the block at " .. where .. " is text", function()
          assert(b.info == "" or b.info == "sh", where .. ": unknown code block kind '" .. b.info ..
                 "' (lua, sh runnable, c, sh, or none)")
        end)
      end
    end
  end

  it("no tracked file refers to anything outside the repository", function()
    local patterns = {   -- built so that this file does not match itself
      "%.%.".."/shared", "%.".."library", "[Dd]evice ".."tool", "[Ii]ssue ".."#?%d", "[Ii]ssues ".."show",
      "the ".."issue's",
    }
    local p = assert(io.popen("cd " .. q(helper.root) .. " && git ls-files 2>/dev/null"))
    local bad, n = {}, 0
    for path in p:lines() do
      local f = io.open(helper.root .. "/" .. path, "rb")
      local text = f and f:read("a") or ""
      if f then f:close() end
      n = n + 1
      if not text:find("\0", 1, true) then
        local ln = 0
        for l in (text .. "\n"):gmatch("(.-)\n") do
          ln = ln + 1
          for _, pat in ipairs(patterns) do
            if l:find(pat) then bad[#bad + 1] = ("%s:%d: %s"):format(path, ln, l) end
          end
        end
      end
    end
    p:close()
    if n == 0 then pending("not a git checkout: no file list") return end
    assert(#bad == 0, "references outside the repository:\n" .. table.concat(bad, "\n"))
  end)
end)

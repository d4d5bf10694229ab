-- repl_spec.lua — the REPL as a user meets it, through a pseudo-terminal
-- (spec/pty/repl_drive.py): strings print raw, `=expr`, pretty tables and tensors, Tab
-- completion of globals, fields and methods, Ctrl-C at the prompt clears the line, Ctrl-C
-- during a run interrupts it and leaves the state usable, Ctrl-D exits. Pending where
-- python3 or a pseudo-terminal is missing.
local helper = require "spec.lua.helper"
local q = helper.shell_quote

describe("REPL through a pty", function()
  it("prints, completes and takes Ctrl-C like lua5.4", function()
    local _, _, has_py = helper.run("command -v python3 >/dev/null")
    if has_py ~= 0 then
      pending("python3 is not installed: the REPL's pty test is skipped")
      return
    end
    local out, err, code = helper.run("timeout 120 python3 " .. q(helper.root .. "/spec/pty/repl_drive.py") .. " " ..
                                      q(helper.kiln_bin()))
    if out:match("^skip: ") then
      pending(out)
      return
    end
    assert(code == 0, "REPL checks failed:\n" .. out .. err)
    helper.has(out, "ok Ctrl-C during a run")
  end)
end)

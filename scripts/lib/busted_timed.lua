-- busted_timed.lua — busted output handler (`busted -o scripts/lib/busted_timed.lua`):
-- busted's plainTerminal output, then one line per test that took at least 0.5 s,
-- slowest first: "time   12.34 s  describe name it name". scripts/test runs the specs
-- with it, so each spec file's log (LOGDIR/NAME.log of scripts/lib/busted.sh) says where
-- its time went; KILN_SPEC_TIMES=1 prints those lines of every file after the run.
return function(options)
  local busted = require "busted"
  local handler = require "busted.outputHandlers.plainTerminal"(options)
  local times = {}
  busted.subscribe({ "test", "end" }, function(element)
    times[#times + 1] = { element.duration or 0, handler.getFullName(element) }
    return nil, true
  end)
  busted.subscribe({ "suite", "end" }, function()
    table.sort(times, function(a, b) return a[1] > b[1] end)
    for _, t in ipairs(times) do
      if t[1] < 0.5 then break end
      io.write(("time %7.2f s  %s\n"):format(t[1], t[2]))
    end
    io.flush()
    return nil, true
  end)
  return handler
end

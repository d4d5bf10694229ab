-- kiln/cache.lua — `kiln cache`: the on-disk kernel cache from the command line (loaded
-- by kiln/lib.lua; the cache itself is driver/disk_cache.c, kiln.cache_clear and
-- kiln.cache_stats are its Lua binding).
--
--   kiln cache [--dir DIR]          entries, bytes and directory
--   kiln cache --clear [--dir DIR]  removes every entry ("removed N entries from DIR")
--   kiln.cache_main(args) -> exit code (0; 2 for bad usage; 1 if the directory cannot be read)
-- DIR defaults to $KILN_CACHE_DIR.
local USAGE = "usage: kiln cache [--clear] [--dir DIR]   (DIR defaults to $KILN_CACHE_DIR)"

return function(kiln)
  function kiln.cache_main(args)
    local clear, dir = false, nil
    local i = 1
    while i <= #args do
      local a = args[i]
      if a == "--clear" then clear = true
      elseif a == "--dir" and args[i + 1] then dir = args[i + 1]; i = i + 1
      elseif a == "--help" or a == "-h" then print(USAGE); return 0
      else io.stderr:write("kiln cache: unknown argument '", a, "'\n", USAGE, "\n"); return 2 end
      i = i + 1
    end
    dir = dir or os.getenv("KILN_CACHE_DIR")
    if not dir or dir == "" then
      io.stderr:write("kiln cache: no cache directory (give --dir DIR or set KILN_CACHE_DIR)\n")
      return 2
    end
    local ok, res = pcall(clear and kiln.cache_clear or kiln.cache_stats, dir)
    if not ok then io.stderr:write("kiln cache: ", tostring(res), "\n"); return 1 end
    if clear then
      print(("removed %d entries from %s"):format(res, dir))
    else
      print(("%d entries, %d bytes in %s"):format(res.entries, res.bytes, dir))
    end
    return 0
  end
end

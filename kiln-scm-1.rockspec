-- kiln-scm-1.rockspec — the kiln Lua module for LuaRocks users, built with CMake.
-- From a checkout: `luarocks make kiln-scm-1.rockspec`. Installs only kiln.so (LIBDIR)
-- and kiln/*.lua (LUADIR); the libraries, headers, kiln.pc and the kiln executable come
-- from `cmake --install` (README "Installing"). Needs LLVM 19 and lld 19 development
-- files (Debian: llvm-19-dev, liblld-19-dev, zlib1g-dev, libzstd-dev) and cmake.
rockspec_format = "3.0"
package = "kiln"
version = "scm-1"
source = {
   url = "git+file://.",
}
description = {
   license = "MIT",
   summary = "Embeddable GPU kernel compiler with a Lua 5.4 front end",
   detailed = [[
kiln compiles tensor graphs built from Lua to kernels for the host (LLVM JIT), AMD GPUs
(HSACO) and NVIDIA GPUs (PTX), with a float64 reference evaluator to check them against.
]],
}
dependencies = {
   "lua >= 5.4, < 5.5",
}
build_dependencies = {}
build = {
   type = "cmake",
   variables = {
      CMAKE_BUILD_TYPE = "RelWithDebInfo",
      CMAKE_INSTALL_PREFIX = "$(PREFIX)",
      LUA_INCLUDE = "$(LUA_INCDIR)",
      KILN_INSTALL_MODULE_ONLY = "ON",
      KILN_INSTALL_LUA_CMOD = "$(LIBDIR)",
      KILN_INSTALL_LUA_LMOD = "$(LUADIR)",
   },
}

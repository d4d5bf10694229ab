/* main.c — the kiln executable: Lua 5.4 with the kiln module preloaded (global `kiln`).
 *   kiln                      REPL (readline + ~/.kiln_history when built with readline): strings
 *                             print raw, other values through kiln.pretty; "=expr"; Tab completes
 *                             through kiln.repl.complete (lua/kiln/repl.lua); Ctrl-C clears the
 *                             line at the prompt, interrupts a running chunk ("interrupted!")
 *   kiln compile FILE ...     one stage of a compile (kiln.compile_main, lua/kiln/compile_cli.lua)
 *   kiln FILE.lua ARGS...     runs a script; `arg` is set up as by lua5.4
 *   kiln -e CODE, -i, -l MOD  as lua5.4
 *   kiln opt FILE.kir ...     parse, run a pipeline, print the module (IR tests)
 *   kiln migraphx FILE.mlir   parse a MIGraphX-dialect file, compile, run, verify (lua/kiln/migraphx.lua)
 *   kiln conv-config "ARGS"   an MIOpenDriver conv spec: build, verify, time
 *   kiln cache [--clear]      the on-disk kernel cache (lua/kiln/cache.lua)
 *   kiln tune FILE ...        tune GEMM perf configs into the tuning database (lua/kiln/tune.lua)
 * The Lua part of kiln (the files in lua/kiln/) is found through package.path, to which this
 * program prepends, when installed (cmake --install: <prefix>/bin/kiln), only
 * <prefix>/share/lua/5.4/?.lua; otherwise <dir of the executable>/../lua/?.lua
 * (build/kiln -> lua/) and KILN_SOURCE_DIR/lua/?.lua (the source tree it was built
 * from). Either way it works from any directory. `kiln opt` needs no Lua files unless --load is given. Errors go to stderr
 * and give a non-zero exit status. */
#include "lua/kiln_lua.h"
#include "core/parse.h"
#include "core/pass.h"
#include "passes/passes.h"
#include "core/print.h"
#include "core/verify.h"
#include "core/dialect_rock.h"
#include "driver/code_stats.h"
#include "driver/program.h"
#include "core/target.h"
#include <llvm-c/Core.h>
#include <getopt.h>
#include <lualib.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#ifdef KILN_HAVE_READLINE
#include <readline/readline.h>
#include <readline/history.h>
#endif

#ifndef KILN_SOURCE_DIR
#define KILN_SOURCE_DIR "."
#endif
#define KILN_VERSION "0.1.0"

static const char *progname = "kiln";

static void usage(FILE *f) {
  fprintf(f,
          "usage: kiln [options] [script.lua [args...]]\n"
          "       kiln opt FILE.kir [opt options]\n"
          "       kiln compile FILE.lua|FILE.kir --emit WHAT [--target T] [-o OUT] [--kernel K]\n"
          "       kiln migraphx FILE.mlir [--target T] [--func NAME] [--rand uniform|ones|seed=N]\n"
          "                     [--verify] [--print-results] [--time]\n"
          "       kiln conv-config \"MIOPENDRIVER CONV ARGS (-n -c -H -W -k -y -x ... -F 1)\" [--layout NHWC]\n"
          "       kiln cache [--clear] [--dir DIR]\n"
          "       kiln tune FILE.lua|FILE.kir|FILE.mlir [--level quick|full|exhaustive] [--target T]\n"
          "                 [--jobs N] [--db PATH] [--shard I/N | --slurm DIR [--shards N] [--submit]]\n"
          "       kiln tune --merge SHARD.db... [--db PATH]\n"
          "\n"
          "Lua front end of the kiln kernel compiler; `kiln` is a global in scripts and the REPL.\n"
          "Without a script: an interactive REPL (prints returned values, strings raw; `=expr`\n"
          "prints expr; incomplete chunks continue on the next line; Tab completes globals, fields\n"
          "and methods; Ctrl-C clears the line or interrupts a run; history in ~/.kiln_history).\n"
          "Every option takes its value as --opt=value or --opt value; -- ends the options.\n"
          "\n"
          "options:\n"
          "  -e CODE        run CODE\n"
          "  -l NAME        require library NAME into global NAME\n"
          "  -i             enter the REPL after running the script / -e code\n"
          "  -              run standard input as a script\n"
          "  --             stop handling options\n"
          "  -h, --help     show this help\n"
          "  -v, --version  show the version, the LLVM version and the targets\n"
          "\n"
          "kiln opt FILE.kir (FILE may be - for standard input):\n"
          "  --pipeline P, -p P           pass pipeline, e.g. \"canonicalize,cse\" or \"pass{opt=3}\"\n"
          "  --print-ir-after=all|a,b     print the IR after all / the named passes to stderr\n"
          "  --generic                    print ops in generic form\n"
          "  --locs                       print locations\n"
          "  --verify-each=true|false     verify after every pass (default true)\n"
          "  --timing                     print per-pass wall time to stderr\n"
          "  --stats                      print op counts of the result to stderr\n"
          "  --target T                   compile for T (gfx942, gfx90a, gfx1100, gfx1030, sm_90, host): sets the\n"
          "                               module's target before the pipeline runs (default pipeline: the\n"
          "                               compile pipeline, kiln.default_pipeline()); with --stats also lower\n"
          "                               every kernel for T and print its registers, LDS, scratch, occupancy\n"
          "                               (AMDGPU: waves per SIMD), main loop's instruction mix and, with\n"
          "                               llvm-mca(-19) on PATH, its cycles per iteration (mca_cycles)\n"
          "  --load FILE.lua              run a Lua script first (it may register passes)\n"
          "  --list-passes                list the registered passes and exit\n"
          "  -o FILE                      write the module to FILE instead of stdout\n"
          "\n"
          "kiln compile (`kiln compile --help` for the details):\n"
          "  --emit ir-after:PASS|llvm|llvm-opt|ptx|sass-stats|asm|hsaco|obj   the stage to write\n"
          "  --target T   host (default), an AMD chip (gfx942 ...) or an NVIDIA one (sm_90 ...)\n"
          "  -o OUT       output file (default: stdout for text, required for hsaco and obj)\n"
          "\n"
          "environment:\n"
          "  KILN_DEVICE=host|cuda|hip|auto  the device examples, `kiln migraphx` and `kiln conv-config`\n"
          "                               run on (default auto: the best one present)\n"
          "  KILN_THREADS=N               threads of the host device (default: the online CPUs)\n"
          "  KILN_DEBUG=V                 any value: print rock-output-swizzle's and input fusion's\n"
          "                               decisions; a list containing `rewrite`: also log every\n"
          "                               pattern application\n"
          "  KILN_PRINT_IR_AFTER=all|a,b  print the IR after every / the named passes of every\n"
          "                               pass pipeline to stderr\n"
          "  KILN_CACHE_DIR=DIR           keep compiled kernels on disk in DIR across processes (off\n"
          "                               when unset; kiln.compile's cache_dir= overrides it)\n"
          "  KILN_CACHE_MAX_MB=N          bound of that cache, least recently used evicted (default 1024)\n"
          "  KILN_TUNING_DB=PATH          the tuning database kiln.compile reads and kiln tune writes\n"
          "                               (kiln.compile's tuning_db= overrides it; default below)\n"
          "  XDG_CACHE_HOME               without KILN_TUNING_DB: $XDG_CACHE_HOME/kiln/tuning.db, else\n"
          "                               $HOME/.cache/kiln/tuning.db\n"
          "  KILN_CP_ASYNC=auto|off|2|3|4 K-loop pipeline of asynchronous global -> shared copies\n"
          "                               (cp.async; stages) in the default pipeline (default: auto)\n"
          "  TMPDIR                       where code generation writes its temporary files (default /tmp)\n"
          "  PATH                         kiln opt --stats --target gfx*: where llvm-mca-19 / llvm-mca is looked up\n"
          "  HOME                         the REPL keeps its history in $HOME/.kiln_history\n"
          "                               (and the default tuning database, above)\n");
}

/* The synopsis alone, after an argument error. */
static void short_usage(FILE *f) {
  fprintf(f,
          "usage: kiln [options] [script.lua [args...]]\n"
          "       kiln opt FILE.kir [opt options]\n"
          "       kiln compile FILE.lua|FILE.kir --emit WHAT [--target T] [-o OUT] [--kernel K]\n"
          "       kiln migraphx FILE.mlir [options]\n"
          "       kiln conv-config \"MIOPENDRIVER CONV ARGS\" [options]\n"
          "       kiln tune FILE.lua|FILE.kir|FILE.mlir [options]\n"
          "`kiln --help` lists every option and environment variable.\n");
}

/* kiln -v: the version, the LLVM it was built with and the targets it compiles for. */
static void print_version(void) {
  unsigned maj = 0, min = 0, patch = 0;
  LLVMGetVersion(&maj, &min, &patch);
  printf("kiln %s (%s)\nLLVM %u.%u.%u\ntargets:", KILN_VERSION, LUA_RELEASE, maj, min, patch);
  for (int i = 0; i < kl_target_count(); i++) printf(" %s", kl_target_at(i)->name);
  printf("\n");
}

/* ------------------------------------------------------------ Lua state ---- */
/* Installed (<prefix>/bin/kiln next to <prefix>/share/lua/5.4/kiln/): only the installed
 * Lua files, so the installed program never depends on the source tree. Otherwise (run
 * from build/): <exe dir>/../lua (build/kiln -> lua/) and the source tree it was built
 * from (KILN_SOURCE_DIR). */
static void prepend_package_path(lua_State *L) {
  char exe[4096], paths[9000] = "";
  bool installed = false;
  ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  if (n > 0) {
    exe[n] = 0;
    char *slash = strrchr(exe, '/');
    if (slash) {
      *slash = 0;
      char prefix[4096], probe[4200];
      snprintf(prefix, sizeof prefix, "%s", exe); /* <prefix>/bin -> <prefix> */
      char *up = strrchr(prefix, '/');
      if (up) *up = 0;
      snprintf(probe, sizeof probe, "%s/share/lua/5.4/kiln/lib.lua", prefix);
      installed = up && access(probe, R_OK) == 0;
      if (installed)
        snprintf(paths, sizeof paths, "%s/share/lua/5.4/?.lua;%s/share/lua/5.4/?/init.lua;", prefix, prefix);
      else
        snprintf(paths, sizeof paths, "%s/../lua/?.lua;%s/../lua/?/init.lua;", exe, exe);
    }
  }
  lua_getglobal(L, "package");
  lua_getfield(L, -1, "path");
  if (installed)
    lua_pushfstring(L, "%s%s", paths, lua_tostring(L, -1));
  else
    lua_pushfstring(L, "%s%s/lua/?.lua;%s/lua/?/init.lua;%s", paths, KILN_SOURCE_DIR, KILN_SOURCE_DIR,
                    lua_tostring(L, -1));
  lua_setfield(L, -3, "path");
  lua_pop(L, 2);
}

static int report(lua_State *L, int status) {
  if (status != LUA_OK) {
    const char *msg = lua_tostring(L, -1);
    fprintf(stderr, "%s: %s\n", progname, msg ? msg : "(error object is not a string)");
    fflush(stderr);
    lua_pop(L, 1);
  }
  return status;
}

/* Ctrl-C while Lua code runs raises "interrupted!" at the next Lua instruction (as
 * lua5.4 does). Lua code that C callbacks run is always inside a lua_pcall, so the
 * error never unwinds through C drivers. A process-wide pointer is fine here: this is
 * the executable, not the library. */
static lua_State *interrupt_L = NULL;
static void lstop(lua_State *L, lua_Debug *ar) {
  (void)ar;
  lua_sethook(L, NULL, 0, 0);
  luaL_error(L, "interrupted!");
}
static void on_sigint(int sig) {
  signal(sig, SIG_DFL);
  lua_sethook(interrupt_L, lstop, LUA_MASKCALL | LUA_MASKRET | LUA_MASKLINE | LUA_MASKCOUNT, 1);
}

static int docall(lua_State *L, int narg, int nres) {
  int base = lua_gettop(L) - narg;
  lua_pushcfunction(L, kl_lua_traceback);
  lua_insert(L, base);
  interrupt_L = L;
  signal(SIGINT, on_sigint);
  int status = lua_pcall(L, narg, nres, base);
  signal(SIGINT, SIG_DFL);
  lua_remove(L, base);
  return status;
}

static int open_kiln(lua_State *L) {
  luaL_openlibs(L);
  prepend_package_path(L);
  luaL_getsubtable(L, LUA_REGISTRYINDEX, LUA_PRELOAD_TABLE);
  lua_pushcfunction(L, kl_lua_open);
  lua_setfield(L, -2, "kiln");
  lua_pop(L, 1);
  lua_getglobal(L, "require");
  lua_pushstring(L, "kiln");
  int st = docall(L, 1, 1);
  if (st != LUA_OK) return report(L, st);
  lua_setglobal(L, "kiln");
  return LUA_OK;
}

static lua_State *new_state(void) {
  lua_State *L = luaL_newstate();
  if (!L) {
    fprintf(stderr, "%s: cannot create a Lua state (out of memory)\n", progname);
    return NULL;
  }
  if (open_kiln(L) != LUA_OK) {
    lua_close(L);
    return NULL;
  }
  return L;
}

/* ---------------------------------------------------------------- REPL ---- */
#define PROMPT1 "kiln> "
#define PROMPT2 "  >> "

static char *history_path(void) {
  const char *home = getenv("HOME");
  if (!home || !*home) return NULL;
  size_t n = strlen(home) + 32;
  char *p = malloc(n);
  if (p) snprintf(p, n, "%s/.kiln_history", home);
  return p;
}

#ifdef KILN_HAVE_READLINE
/* Tab completion: kiln.repl.complete (lua/kiln/repl.lua) on the word before the cursor,
 * names joined by '.' and ':' (globals, fields, methods of the value before ':'). */
static lua_State *repl_L = NULL;
static char **completions = NULL;
static int ncompletions = 0, next_completion = 0;

static void clear_completions(void) {
  for (int i = 0; i < ncompletions; i++) free(completions[i]);
  free(completions);
  completions = NULL;
  ncompletions = next_completion = 0;
}

static int collect_completions(lua_State *L) {
  const char *word = lua_tostring(L, 1);
  lua_getglobal(L, "require");
  lua_pushstring(L, "kiln.repl");
  lua_call(L, 1, 1);
  lua_getfield(L, -1, "complete");
  lua_pushstring(L, word);
  lua_call(L, 1, 1);
  int n = (int)luaL_len(L, -1);
  completions = calloc((size_t)n + 1, sizeof *completions);
  for (int i = 1; completions && i <= n; i++) {
    lua_rawgeti(L, -1, i);
    const char *c = lua_tostring(L, -1);
    if (c && (completions[ncompletions] = strdup(c))) ncompletions++;
    lua_pop(L, 1);
  }
  return 0;
}

static char *completion_generator(const char *text, int state) {
  if (state == 0) {
    clear_completions();
    if (repl_L) {
      int top = lua_gettop(repl_L);
      lua_pushcfunction(repl_L, collect_completions);
      lua_pushstring(repl_L, text);
      if (lua_pcall(repl_L, 1, 0, 0) != LUA_OK) clear_completions();
      lua_settop(repl_L, top);
    }
  }
  return next_completion < ncompletions ? strdup(completions[next_completion++]) : NULL;
}

static char **kiln_completion(const char *text, int start, int end) {
  (void)start;
  (void)end;
  rl_attempted_completion_over = 1; /* no file-name completion */
  rl_completion_append_character = '\0';
  return rl_completion_matches(text, completion_generator);
}

/* Ctrl-C at the prompt: drop the line being edited and start a fresh one. */
static void on_prompt_sigint(int sig) {
  (void)sig;
  if (write(STDOUT_FILENO, "\n", 1) < 0) { /* nothing to do about it */
  }
  rl_replace_line("", 0);
  rl_on_new_line();
  rl_redisplay();
}
#endif

/* Returns a malloc'd line without its newline, or NULL at end of input. */
static char *read_line(const char *prompt, bool tty) {
#ifdef KILN_HAVE_READLINE
  if (tty) {
    signal(SIGINT, on_prompt_sigint);
    char *line = readline(prompt);
    signal(SIGINT, SIG_DFL);
    return line;
  }
#endif
  if (tty || prompt) {
    fputs(prompt, stdout);
    fflush(stdout);
  }
  size_t cap = 256, len = 0;
  char *buf = malloc(cap);
  if (!buf) return NULL;
  int c;
  while ((c = getchar()) != EOF && c != '\n') {
    if (len + 2 > cap) {
      char *nb = realloc(buf, cap *= 2);
      if (!nb) {
        free(buf);
        return NULL;
      }
      buf = nb;
    }
    buf[len++] = (char)c;
  }
  if (c == EOF && len == 0) {
    free(buf);
    return NULL;
  }
  buf[len] = 0;
  return buf;
}

static bool incomplete(lua_State *L, int status) {
  if (status != LUA_ERRSYNTAX) return false;
  size_t n;
  const char *msg = lua_tolstring(L, -1, &n);
  const char *mark = "<eof>";
  size_t m = strlen(mark);
  return n >= m && strcmp(msg + n - m, mark) == 0;
}

/* Loads one REPL entry: "return LINE" first, else LINE plus continuation lines while
 * the chunk is incomplete. Leaves the chunk (or an error message) on the stack and
 * returns the status; -1 at end of input. *entry receives the text (malloc'd). */
static int load_entry(lua_State *L, bool tty, char **entry) {
  char *line = read_line(PROMPT1, tty);
  if (!line) return -1;
  const char *eq = line + strspn(line, " \t");
  if (*eq == '=') { /* "=expr": print expr (the Lua 5.1 habit) */
    const char *ret = lua_pushfstring(L, "return %s", eq + 1);
    int st = luaL_loadbuffer(L, ret, strlen(ret), "=stdin");
    lua_remove(L, -2);
    *entry = line;
    return st;
  }
  const char *ret = lua_pushfstring(L, "return %s", line);
  int st = luaL_loadbuffer(L, ret, strlen(ret), "=stdin");
  if (st == LUA_OK) {
    lua_remove(L, -2);
    *entry = line;
    return st;
  }
  lua_pop(L, 2);
  for (;;) {
    st = luaL_loadbuffer(L, line, strlen(line), "=stdin");
    if (!incomplete(L, st)) break;
    lua_pop(L, 1);
    char *more = read_line(PROMPT2, tty);
    if (!more) break;
    size_t a = strlen(line), b = strlen(more);
    char *joined = malloc(a + b + 2);
    if (!joined) {
      free(more);
      break;
    }
    memcpy(joined, line, a);
    joined[a] = '\n';
    memcpy(joined + a + 1, more, b + 1);
    free(line);
    free(more);
    line = joined;
  }
  if (st != LUA_OK && lua_gettop(L) == 0) st = luaL_loadbuffer(L, line, strlen(line), "=stdin");
  *entry = line;
  return st;
}

/* Prints the values on the stack above base, with kiln.pretty when available. */
static void print_results(lua_State *L, int base) {
  int n = lua_gettop(L) - base;
  if (n <= 0) return;
  lua_getglobal(L, "kiln");
  bool pretty = lua_istable(L, -1) && lua_getfield(L, -1, "pretty") == LUA_TFUNCTION;
  int pf = lua_gettop(L);
  for (int i = 1; i <= n; i++) {
    if (lua_type(L, base + i) == LUA_TSTRING) /* raw, as lua5.4 prints strings */
      lua_pushvalue(L, base + i);
    else if (pretty) {
      lua_pushvalue(L, pf);
      lua_pushvalue(L, base + i);
      if (docall(L, 1, 1) != LUA_OK || !lua_isstring(L, -1)) {
        lua_pop(L, 1);
        luaL_tolstring(L, base + i, NULL);
      }
    } else
      luaL_tolstring(L, base + i, NULL);
    fputs(lua_tostring(L, -1), stdout);
    fputs(i < n ? "\t" : "\n", stdout);
    lua_pop(L, 1);
  }
  fflush(stdout);
  lua_settop(L, base);
}

static void repl(lua_State *L) {
  bool tty = isatty(0);
  char *hist = history_path();
#ifdef KILN_HAVE_READLINE
  if (tty) {
    rl_readline_name = "kiln";
    rl_catch_signals = 0; /* SIGINT is ours: on_prompt_sigint at the prompt, an interrupt while running */
    rl_attempted_completion_function = kiln_completion;
    rl_basic_word_break_characters = " \t\n\"\\'`@$><=;|&{(,+-*/%^~[]#";
    repl_L = L;
    stifle_history(1000);
    if (hist) read_history(hist);
  }
#endif
  if (tty) printf("kiln %s (%s) — type Lua; `return` is optional; Ctrl-D exits\n", KILN_VERSION, LUA_RELEASE);
  for (;;) {
    lua_settop(L, 0);
    char *entry = NULL;
    int st = load_entry(L, tty, &entry);
    if (st == -1) break;
#ifdef KILN_HAVE_READLINE
    if (tty && entry && *entry) {
      add_history(entry);
      if (hist) write_history(hist);
    }
#endif
    free(entry);
    if (st == LUA_OK) st = docall(L, 0, LUA_MULTRET);
    if (st == LUA_OK)
      print_results(L, 0);
    else
      report(L, st);
  }
  if (tty) putchar('\n');
#ifdef KILN_HAVE_READLINE
  clear_completions();
  repl_L = NULL;
#endif
  free(hist);
}

/* -------------------------------------------------------------- scripts ---- */
static void create_arg_table(lua_State *L, int argc, char **argv, int script) {
  int narr = argc - script - 1;
  lua_createtable(L, narr > 0 ? narr : 0, script + 1);
  for (int i = 0; i < argc; i++) {
    lua_pushstring(L, argv[i]);
    lua_rawseti(L, -2, i - script);
  }
  lua_setglobal(L, "arg");
}

static int run_script(lua_State *L, int argc, char **argv, int script, bool from_stdin) {
  const char *fname = from_stdin ? NULL : argv[script];
  int st = luaL_loadfile(L, fname);
  if (st != LUA_OK) return report(L, st);
  int n = argc - script - 1;
  luaL_checkstack(L, n + 3, "too many arguments to script");
  for (int i = script + 1; i < argc; i++) lua_pushstring(L, argv[i]);
  return report(L, docall(L, n, 0));
}

static int run_string(lua_State *L, const char *code, const char *name) {
  int st = luaL_loadbuffer(L, code, strlen(code), name);
  if (st == LUA_OK) st = docall(L, 0, 0);
  return report(L, st);
}

static int require_lib(lua_State *L, const char *name) {
  lua_getglobal(L, "require");
  lua_pushstring(L, name);
  int st = docall(L, 1, 1);
  if (st == LUA_OK) lua_setglobal(L, name);
  return report(L, st);
}

/* The error of a getopt_long loop (opterr = 0, optstring starting with ":"): unknown
 * option or missing value, then the usage on stderr; returns the exit status 2. */
static int option_error(const char *cmd, int c, char **argv) {
  const char *arg = argv[optind - 1];
  if (c == ':')
    fprintf(stderr, "%s%s%s: '%s' needs an argument\n", progname, cmd ? " " : "", cmd ? cmd : "", arg);
  else if (optopt && (arg[0] != '-' || arg[1] != '-'))
    fprintf(stderr, "%s%s%s: unknown option '-%c'\n", progname, cmd ? " " : "", cmd ? cmd : "", optopt);
  else
    fprintf(stderr, "%s%s%s: unknown option '%s'\n", progname, cmd ? " " : "", cmd ? cmd : "", arg);
  short_usage(stderr);
  return 2;
}

static int lua_main(int argc, char **argv) {
  /* options up to the script ("+": stop at the first non-option, as lua5.4 does); -e and
   * -l run in their order after the state exists */
  static const struct option longs[] = { { "help", no_argument, NULL, 'h' },
                                         { "version", no_argument, NULL, 'v' },
                                         { NULL, 0, NULL, 0 } };
  bool interactive = false, ran = false, version = false;
  const char **actions = calloc((size_t)argc + 1, sizeof *actions); /* "e" or "l" then its value, in order */
  int nact = 0, c;
  if (!actions) return 1;
  opterr = 0;
  optind = 1;
  while ((c = getopt_long(argc, argv, "+:e:l:ivh", longs, NULL)) != -1) {
    switch (c) {
      case 'h':
        usage(stdout);
        free(actions);
        return 0;
      case 'v': version = true; break;
      case 'i': interactive = true; break;
      case 'e':
      case 'l':
        actions[nact++] = c == 'e' ? "e" : "l";
        actions[nact++] = optarg;
        break;
      default: free(actions); return option_error(NULL, c, argv);
    }
  }
  int script = optind < argc ? optind : 0;
  bool stdin_script = script && !strcmp(argv[script], "-") && strcmp(argv[script - 1], "--");
  if (version) {
    print_version();
    if (argc == 2) {
      free(actions);
      return 0;
    }
  }
  lua_State *L = new_state();
  if (!L) {
    free(actions);
    return 1;
  }
  create_arg_table(L, argc, argv, script ? script : 0);
  int status = LUA_OK;
  for (int k = 0; k < nact && status == LUA_OK; k += 2) {
    if (actions[k][0] == 'e') {
      status = run_string(L, actions[k + 1], "=(command line)");
      ran = true;
    } else
      status = require_lib(L, actions[k + 1]);
  }
  free(actions);
  if (status == LUA_OK && script) {
    status = run_script(L, argc, argv, script, stdin_script);
    ran = true;
  }
  if (status == LUA_OK && (interactive || (!ran && !version))) {
    if (!interactive && !isatty(0) && !ran) { /* `kiln < file`: run stdin as a script */
      status = report(L, luaL_loadfile(L, NULL));
      if (status == LUA_OK) status = report(L, docall(L, 0, 0));
    } else
      repl(L);
  }
  lua_close(L);
  return status == LUA_OK ? 0 : 1;
}

/* ------------------------------------------------------------------ opt ---- */
static char *read_all(const char *path, size_t *len) {
  FILE *f = strcmp(path, "-") ? fopen(path, "rb") : stdin;
  if (!f) return NULL;
  size_t cap = 1 << 16, n = 0;
  char *buf = malloc(cap);
  size_t r;
  while (buf && (r = fread(buf + n, 1, cap - n, f)) > 0) {
    n += r;
    if (n == cap) {
      char *nb = realloc(buf, cap *= 2);
      if (!nb) {
        free(buf);
        buf = NULL;
      } else
        buf = nb;
    }
  }
  bool err = ferror(f);
  if (f != stdin) fclose(f);
  if (err) {
    free(buf);
    return NULL;
  }
  *len = n;
  return buf;
}

static void flush_diags(kl_ctx *ctx) {
  char *d = kl_diag_take(ctx);
  fputs(d, stderr);
  free(d);
}

static void ir_to_stderr(const char *pass, const char *text, void *user) {
  fprintf(stderr, "// -----// IR Dump After %s //----- //\n%s\n", pass, text);
}

typedef struct {
  const char *name;
  int n;
} op_count;
static int cmp_count(const void *a, const void *b) {
  const op_count *x = a, *y = b;
  return x->n != y->n ? y->n - x->n : strcmp(x->name, y->name);
}
static void print_code_stats(kl_op *m, const char *target) {
  kl_block *b = kl_module_body(m);
  for (kl_op *o = b ? b->first : NULL; o; o = o->next) {
    if (!kl_is_kernel(o)) continue;
    char err[1024];
    char *line = kl_kernel_code_stats(o, target, err, sizeof err);
    if (line)
      fprintf(stderr, "// %s\n", line);
    else
      fprintf(stderr, "// %s (%s): %s\n", kl_op_attr_string(o, "sym_name"), target, err);
    free(line);
  }
}
static void print_stats(kl_op *m) {
  int n;
  kl_op **ops = kl_collect_ops(m, &n);
  op_count *c = calloc((size_t)n + 1, sizeof *c);
  int nc = 0;
  for (int i = 0; c && i < n; i++) {
    int k = 0;
    while (k < nc && c[k].name != ops[i]->name) k++; /* names are interned */
    if (k == nc) c[nc++].name = ops[i]->name;
    c[k].n++;
  }
  if (c) qsort(c, (size_t)nc, sizeof *c, cmp_count);
  fprintf(stderr, "// op counts (%d ops)\n", n);
  for (int k = 0; c && k < nc; k++) fprintf(stderr, "%8d  %s\n", c[k].n, c[k].name);
  free(c);
  free(ops);
}

static int opt_main(int argc, char **argv) {
  const char *file = NULL, *out = NULL, *print_after = NULL, *target = NULL;
  const char *loads[64];
  int nloads = 0;
  char *pipeline = NULL;
  size_t plen = 0;
  bool generic = false, locs = false, verify_each = true, timing = false, stats = false, list = false;
  int rc = 1;
  enum {
    O_PRINT_AFTER = 256,
    O_PRINT_AFTER_ALL,
    O_GENERIC,
    O_LOCS,
    O_TIMING,
    O_STATS,
    O_TARGET,
    O_LIST,
    O_VERIFY,
    O_LOAD
  };
  static const struct option longs[] = { { "pipeline", required_argument, NULL, 'p' },
                                         { "pass-pipeline", required_argument, NULL, 'p' },
                                         { "print-ir-after", required_argument, NULL, O_PRINT_AFTER },
                                         { "print-ir-after-all", no_argument, NULL, O_PRINT_AFTER_ALL },
                                         { "generic", no_argument, NULL, O_GENERIC },
                                         { "locs", no_argument, NULL, O_LOCS },
                                         { "timing", no_argument, NULL, O_TIMING },
                                         { "stats", no_argument, NULL, O_STATS },
                                         { "target", required_argument, NULL, O_TARGET },
                                         { "list-passes", no_argument, NULL, O_LIST },
                                         { "verify-each", optional_argument, NULL, O_VERIFY },
                                         { "load", required_argument, NULL, O_LOAD },
                                         { "help", no_argument, NULL, 'h' },
                                         { NULL, 0, NULL, 0 } };
  int c;
  opterr = 0;
  optind = 2; /* argv[1] is "opt" */
  while ((c = getopt_long(argc, argv, ":p:o:h", longs, NULL)) != -1) {
    switch (c) {
      case 'p': {
        size_t n = strlen(optarg);
        char *np = realloc(pipeline, plen + n + 2);
        if (!np) {
          free(pipeline);
          return 1;
        }
        pipeline = np;
        if (plen && n) pipeline[plen++] = ',';
        memcpy(pipeline + plen, optarg, n + 1);
        plen += n;
        break;
      }
      case O_PRINT_AFTER: print_after = optarg; break;
      case O_PRINT_AFTER_ALL: print_after = "all"; break;
      case O_GENERIC: generic = true; break;
      case O_LOCS: locs = true; break;
      case O_TIMING: timing = true; break;
      case O_STATS: stats = true; break;
      case O_TARGET: target = optarg; break;
      case O_LIST: list = true; break;
      case O_VERIFY:
        if (!optarg || !strcmp(optarg, "true"))
          verify_each = true;
        else if (!strcmp(optarg, "false"))
          verify_each = false;
        else {
          fprintf(stderr, "%s opt: --verify-each takes true or false, not '%s'\n", progname, optarg);
          short_usage(stderr);
          free(pipeline);
          return 2;
        }
        break;
      case O_LOAD:
        if (nloads == 64) {
          fprintf(stderr, "%s opt: too many --load\n", progname);
          free(pipeline);
          return 2;
        }
        loads[nloads++] = optarg;
        break;
      case 'o': out = optarg; break;
      case 'h':
        usage(stdout);
        free(pipeline);
        return 0;
      default: free(pipeline); return option_error("opt", c, argv);
    }
  }
  for (int i = optind; i < argc; i++) {
    if (file) {
      fprintf(stderr, "%s opt: one input file only (got '%s' and '%s')\n", progname, file, argv[i]);
      short_usage(stderr);
      free(pipeline);
      return 2;
    }
    file = argv[i];
  }
  if (!file && !list) {
    fprintf(stderr, "%s opt: no input file (use - for stdin)\n", progname);
    free(pipeline);
    return 2;
  }

  /* A Lua state only when scripts are loaded (their passes join the registry). */
  lua_State *L = NULL;
  kl_ctx *ctx = NULL;
  if (nloads) {
    if (!(L = new_state())) {
      free(pipeline);
      return 1;
    }
    create_arg_table(L, 0, argv, 0);
    for (int i = 0; i < nloads; i++) {
      if (report(L, luaL_loadfile(L, loads[i])) != LUA_OK || report(L, docall(L, 0, 0)) != LUA_OK) goto done;
    }
    ctx = kl_lua_default_ctx(L);
  } else {
    ctx = kl_ctx_create();
    kl_register_builtin_passes(ctx); /* kl_ctx_create registers the dialects only */
  }
  if (list) {
    for (int i = 0; i < kl_pass_count(ctx); i++) {
      const kl_pass_info *p = kl_pass_at(ctx, i);
      printf("%-28s %s\n", p->name, p->summary ? p->summary : "");
      for (int k = 0; k < p->noptions; k++)
        printf("    %s=<%s> (default %s) %s\n", p->options[k].name,
               p->options[k].kind == KL_OPT_INT         ? "int"
                   : p->options[k].kind == KL_OPT_FLOAT ? "float"
                   : p->options[k].kind == KL_OPT_BOOL  ? "bool"
                                                        : "string",
               p->options[k].default_value ? p->options[k].default_value : "",
               p->options[k].help ? p->options[k].help : "");
    }
    rc = 0;
    goto done;
  }
  {
    size_t len = 0;
    char *text = read_all(file, &len);
    if (!text) {
      fprintf(stderr, "%s opt: cannot read '%s': %s\n", progname, file, strerror(errno));
      goto done;
    }
    kl_op *m = kl_parse_module(ctx, text, len, strcmp(file, "-") ? file : "<stdin>");
    free(text);
    if (!m) {
      flush_diags(ctx);
      goto done;
    }
    if (kl_verify(m) != KL_OK) {
      flush_diags(ctx);
      goto done;
    }
    if (target) {
      if (!kl_target_lookup(target)) {
        fprintf(stderr, "%s opt: --target: unknown target '%s'\n", progname, target);
        goto done;
      }
      kl_op_set_attr(m, "target", kl_attr_str(ctx, target)); /* the pipeline's passes read it */
    }
    kl_pass_manager *pm = kl_pass_manager_create(ctx);
    const char *pl = (pipeline && *pipeline) ? pipeline : target ? kl_default_pipeline() : NULL;
    kl_status s = pl ? kl_pass_manager_add_pipeline(pm, pl) : KL_OK;
    char *bad_after = (s == KL_OK && print_after && *print_after) ? kl_pass_manager_check_selection(pm, print_after)
                                                                  : NULL;
    if (bad_after) {
      fprintf(stderr, "%s opt: --print-ir-after: %s\n", progname, bad_after);
      free(bad_after);
      s = KL_ERR;
    }
    if (s == KL_OK) {
      if (print_after && *print_after) kl_pass_manager_print_ir_after(pm, print_after, ir_to_stderr, NULL);
      kl_pass_manager_set_verify(pm, verify_each);
      s = kl_pass_manager_run(pm, m);
    }
    if (timing) {
      char *t = kl_pass_manager_timing(pm);
      fprintf(stderr, "// pass timing\n%s", t ? t : "");
      free(t);
    }
    kl_pass_manager_destroy(pm);
    flush_diags(ctx);
    if (s != KL_OK) goto done;
    if (stats) print_stats(m);
    if (stats && target) print_code_stats(m, target);
    char *ir = kl_print_op(m, (generic ? KL_PRINT_GENERIC : 0) | (locs ? KL_PRINT_LOCS : 0));
    FILE *f = out ? fopen(out, "w") : stdout;
    if (!f) {
      fprintf(stderr, "%s opt: cannot write '%s': %s\n", progname, out, strerror(errno));
      free(ir);
      goto done;
    }
    fputs(ir, f);
    free(ir);
    if (f != stdout ? fclose(f) != 0 : fflush(f) != 0) {
      fprintf(stderr, "%s opt: write error\n", progname);
      goto done;
    }
    rc = 0;
  }
done:
  free(pipeline);
  if (L)
    lua_close(L);
  else
    kl_ctx_destroy(ctx);
  return rc;
}

/* ------------------------------------------------- migraphx, conv-config ---- */
/* `kiln migraphx ...` / `kiln conv-config ...`: kiln.migraphx_main / kiln.conv_config_main
 * (lua/kiln/migraphx.lua) with the arguments after the subcommand; their result is the
 * exit status. */
static int lua_subcommand(int argc, char **argv, const char *fn) {
  lua_State *L = new_state();
  if (!L) return 1;
  create_arg_table(L, argc, argv, 1);
  lua_getglobal(L, "kiln");
  lua_getfield(L, -1, fn);
  lua_remove(L, -2);
  lua_createtable(L, argc - 2, 0);
  for (int i = 2; i < argc; i++) {
    lua_pushstring(L, argv[i]);
    lua_rawseti(L, -2, i - 1);
  }
  int st = docall(L, 1, 1);
  int rc = 1;
  if (st == LUA_OK)
    rc = (int)lua_tointeger(L, -1);
  else
    report(L, st);
  lua_close(L);
  return rc;
}

int main(int argc, char **argv) {
  if (argc > 0 && argv[0] && *argv[0]) {
    const char *slash = strrchr(argv[0], '/');
    progname = slash ? slash + 1 : argv[0];
  }
  if (argc > 1 && !strcmp(argv[1], "opt")) return opt_main(argc, argv);
  if (argc > 1 && !strcmp(argv[1], "migraphx")) return lua_subcommand(argc, argv, "migraphx_main");
  if (argc > 1 && !strcmp(argv[1], "conv-config")) return lua_subcommand(argc, argv, "conv_config_main");
  if (argc > 1 && !strcmp(argv[1], "compile")) return lua_subcommand(argc, argv, "compile_main");
  if (argc > 1 && !strcmp(argv[1], "cache")) return lua_subcommand(argc, argv, "cache_main");
  if (argc > 1 && !strcmp(argv[1], "tune")) return lua_subcommand(argc, argv, "tune_main");
  return lua_main(argc, argv);
}

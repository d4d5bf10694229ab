/* pass.h — passes, pipelines and the pass manager.
 * Contract: a pass is registered by name with typed options (int, float, bool,
 * string; each with a default and a help line) and a run function over a module.
 * A pipeline is a string "canonicalize,my-pass{opt=3,flag=true}" or a list of
 * entries built in C (named passes with option strings, or callbacks: this is how
 * Lua functions join a pipeline). The pass manager verifies the input, then the
 * module after every pass (a failure names the pass: "after pass 'X': the IR does not
 * verify (N errors above)", after the verifier's own diagnostics); it snapshots the IR
 * text after all or named passes, before verifying it (to a callback, or stderr; the
 * env KILN_PRINT_IR_AFTER=all or =a,b also prints to stderr), and times each pass
 * (report: kl_pass_manager_timing). A pass or callback returning KL_ERR stops the run
 * with "pass 'X' failed". An after-pass observer (kl_pass_manager_observe) is called
 * after every entry that succeeded and, with verification on, verified: once per entry,
 * with the entry's name; this is how a compile driver keeps snapshots without adding
 * callback entries (so without verifying twice). kl_pass_manager_set_option gives an
 * option to every entry of a pass that did not set it in its pipeline text (a driver's
 * default, e.g. the perf config of rock-gemm-to-gridwise).
 * Pipeline syntax: entries separated by ','; options in braces, separated by ',' or
 * spaces: key=value, or a bare key for a bool option (true); values may be
 * double-quoted (\" and \\ escapes) to hold ',', '}' or spaces; ints are decimal or
 * 0x-hex, bools true/false/1/0. Unknown passes, unknown options and bad values are
 * errors naming them, located "<pipeline>:1:COL" (kl_pass_manager_add_pass: option
 * errors "<options>:1:COL"); a bad string adds no pass. Registrations are per context
 * (no globals); kl_ctx_create registers none: the built-in passes are registered with
 * the context by kl_register_builtin_passes (passes/passes.h, outside core: callers
 * that link kiln_core alone cannot call it). Memory: the registry copies what it
 * is given into the context arena; a pass manager owns its entries and option values. */
#ifndef KL_PASS_H
#define KL_PASS_H
#include "core/ir.h"

typedef enum { KL_OPT_INT, KL_OPT_FLOAT, KL_OPT_BOOL, KL_OPT_STRING } kl_opt_kind;
typedef struct kl_pass_option {
  const char *name;
  kl_opt_kind kind;
  const char *default_value;
  const char *help;
} kl_pass_option;
typedef struct kl_pass_options kl_pass_options; /* parsed values of one pass instance */
int64_t kl_pass_opt_int(const kl_pass_options *o, const char *name);
double kl_pass_opt_float(const kl_pass_options *o, const char *name);
bool kl_pass_opt_bool(const kl_pass_options *o, const char *name);
const char *kl_pass_opt_string(const kl_pass_options *o, const char *name);

typedef struct kl_pass_info {
  const char *name;
  const char *summary;
  const kl_pass_option *options;
  int noptions;
  kl_status (*run)(kl_op *module, const kl_pass_options *opts, void *user);
  void *user;
} kl_pass_info;

void kl_register_pass(kl_ctx *ctx, const kl_pass_info *info); /* replaces same name */
const kl_pass_info *kl_lookup_pass(kl_ctx *ctx, const char *name);
int kl_pass_count(kl_ctx *ctx);
const kl_pass_info *kl_pass_at(kl_ctx *ctx, int i);
/* "name: summary\n  option (kind, default D): help\n..." for every registered pass (malloc'd). */
char *kl_pass_describe(kl_ctx *ctx);
/* The registered pass of each top-level entry of a pipeline string, in order, into
 * out[0..max); returns the number of entries (call with max 0 to count), or -1 when the
 * string does not parse (no diagnostic: the run that uses the pipeline reports it). */
int kl_pipeline_passes(kl_ctx *ctx, const char *pipeline, const kl_pass_info **out, int max);

typedef struct kl_pass_manager kl_pass_manager;
typedef kl_status (*kl_pass_callback)(kl_op *module, void *user);
typedef void (*kl_ir_callback)(const char *pass_name, const char *ir_text, void *user);
typedef void (*kl_pass_observer)(kl_op *module, const char *pass_name, void *user);

kl_pass_manager *kl_pass_manager_create(kl_ctx *ctx);
void kl_pass_manager_destroy(kl_pass_manager *pm);
/* Appends passes parsed from a pipeline string; KL_ERR (+ diagnostic) on a bad string. */
kl_status kl_pass_manager_add_pipeline(kl_pass_manager *pm, const char *pipeline);
kl_status kl_pass_manager_add_pass(kl_pass_manager *pm, const char *name, const char *options /* "a=1,b=x" or NULL */);
void kl_pass_manager_add_callback(kl_pass_manager *pm, const char *name, kl_pass_callback fn, void *user);
/* which: NULL = none, "all", or a comma-separated list of pass names. */
void kl_pass_manager_print_ir_after(kl_pass_manager *pm, const char *which, kl_ir_callback cb, void *user);
void kl_pass_manager_set_verify(kl_pass_manager *pm, bool on);
/* Whether a run dumps the IR after the passes KILN_PRINT_IR_AFTER names to stderr (on by
 * default; off for a run that repeats one already dumped, like the compile driver's lazy
 * IR snapshots). */
void kl_pass_manager_set_env_print(kl_pass_manager *pm, bool on);
/* fn(module, entry name, user) after each entry (see the contract); NULL: none. */
void kl_pass_manager_observe(kl_pass_manager *pm, kl_pass_observer fn, void *user);
/* Sets option `option` of every entry of pass `pass` added so far that did not give it
 * (none there: nothing to do); KL_ERR + diagnostic if the pass has no such option or
 * value is not of its kind. */
kl_status kl_pass_manager_set_option(kl_pass_manager *pm, const char *pass, const char *option, const char *value);
/* Does a print_ir_after selection ("all", or "a,b" with optional blanks) name pass `name`? */
bool kl_pass_selected(const char *which, const char *name);
/* NULL when every name of the selection `which` is "all" or an entry of pm; else the
 * message "unknown pass 'x' (did you mean 'y'?; valid: all, <the entries>)" (malloc'd).
 * (The run itself warns once per process when KILN_PRINT_IR_AFTER names a pass the
 * context does not know: core/env.h.) */
char *kl_pass_manager_check_selection(kl_pass_manager *pm, const char *which);
kl_status kl_pass_manager_run(kl_pass_manager *pm, kl_op *module);
/* "pass-name  12.3 ms\n..." for the last run (malloc'd): one line per pass that ran
 * (in order), then "(verifier)" (all verification, when on) and "(total)". */
char *kl_pass_manager_timing(kl_pass_manager *pm);
#endif

/* pass.h — passes, pipelines and the pass manager.
 * Contract: a pass is registered by name with typed options (int, float, bool,
 * string; each with a default and a help line) and a run function over a module.
 * A pipeline is a string "canonicalize,my-pass{opt=3,flag=true}" or a list of
 * entries built in C (named passes with option strings, or callbacks: this is how
 * Lua functions join a pipeline). The pass manager verifies the module after every
 * pass (a failure names the pass), optionally snapshots the IR text after all or
 * named passes (to a callback; KILN_PRINT_IR_AFTER=all or =a,b prints to stderr),
 * and times each pass (report: kl_pass_manager_timing). Unknown passes, unknown
 * options and bad option values are errors naming them (with the column in the
 * pipeline string). Registrations are per context (no globals); built-in passes are
 * registered with the context by kl_register_builtin_passes (passes/registry.c). */
#ifndef KL_PASS_H
#define KL_PASS_H
#include "core/ir.h"

typedef enum { KL_OPT_INT, KL_OPT_FLOAT, KL_OPT_BOOL, KL_OPT_STRING } kl_opt_kind;
typedef struct kl_pass_option {
  const char *name; kl_opt_kind kind; const char *default_value; const char *help;
} kl_pass_option;
typedef struct kl_pass_options kl_pass_options;   /* parsed values of one pass instance */
int64_t     kl_pass_opt_int(const kl_pass_options *o, const char *name);
double      kl_pass_opt_float(const kl_pass_options *o, const char *name);
bool        kl_pass_opt_bool(const kl_pass_options *o, const char *name);
const char *kl_pass_opt_string(const kl_pass_options *o, const char *name);

typedef struct kl_pass_info {
  const char *name;
  const char *summary;
  const kl_pass_option *options; int noptions;
  kl_status (*run)(kl_op *module, const kl_pass_options *opts, void *user);
  void *user;
} kl_pass_info;

void kl_register_pass(kl_ctx *ctx, const kl_pass_info *info);   /* replaces same name */
const kl_pass_info *kl_lookup_pass(kl_ctx *ctx, const char *name);
int kl_pass_count(kl_ctx *ctx);
const kl_pass_info *kl_pass_at(kl_ctx *ctx, int i);
void kl_register_builtin_passes(kl_ctx *ctx);   /* canonicalize, cse, dce, ... */

typedef struct kl_pass_manager kl_pass_manager;
typedef kl_status (*kl_pass_callback)(kl_op *module, void *user);
typedef void (*kl_ir_callback)(const char *pass_name, const char *ir_text, void *user);

kl_pass_manager *kl_pass_manager_create(kl_ctx *ctx);
void kl_pass_manager_destroy(kl_pass_manager *pm);
/* Appends passes parsed from a pipeline string; KL_ERR (+ diagnostic) on a bad string. */
kl_status kl_pass_manager_add_pipeline(kl_pass_manager *pm, const char *pipeline);
kl_status kl_pass_manager_add_pass(kl_pass_manager *pm, const char *name, const char *options /* "a=1,b=x" or NULL */);
void kl_pass_manager_add_callback(kl_pass_manager *pm, const char *name, kl_pass_callback fn, void *user);
/* which: NULL = none, "all", or a comma-separated list of pass names. */
void kl_pass_manager_print_ir_after(kl_pass_manager *pm, const char *which, kl_ir_callback cb, void *user);
void kl_pass_manager_set_verify(kl_pass_manager *pm, bool on);
kl_status kl_pass_manager_run(kl_pass_manager *pm, kl_op *module);
/* "pass-name  12.3 ms\n..." for the last run (malloc'd). */
char *kl_pass_manager_timing(kl_pass_manager *pm);
#endif

/* pass.c — the per-context pass registry, typed pass options, the pipeline-string
 * parser and the pass manager (verification, IR snapshots, timing). */
#include "core/pass.h"
#include "core/env.h"
#include "core/suggest.h"
#include "core/print.h"
#include "core/verify.h"
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* ---- registry (per context, arena-owned) ---- */
#define REGISTRY_KEY "kiln.pass.registry"
typedef struct {
  const kl_pass_info **items;
  int n, cap;
} pass_registry;

static pass_registry *registry(kl_ctx *ctx, bool create) {
  pass_registry *r = kl_ctx_get_user(ctx, REGISTRY_KEY);
  if (!r && create) {
    r = kl_arena_alloc(kl_ctx_arena(ctx), sizeof *r);
    kl_ctx_set_user(ctx, REGISTRY_KEY, r);
  }
  return r;
}
void kl_register_pass(kl_ctx *ctx, const kl_pass_info *info) {
  if (!info || !info->name || !info->run) return;
  kl_arena *a = kl_ctx_arena(ctx);
  kl_pass_info *c = kl_arena_dup(a, info, sizeof *info);
  c->name = kl_intern(ctx, info->name);
  c->summary = kl_intern(ctx, info->summary);
  if (info->noptions > 0) {
    kl_pass_option *o = kl_arena_alloc(a, info->noptions * sizeof *o);
    for (int i = 0; i < info->noptions; i++) {
      o[i].name = kl_intern(ctx, info->options[i].name);
      o[i].kind = info->options[i].kind;
      o[i].default_value = kl_intern(ctx, info->options[i].default_value);
      o[i].help = kl_intern(ctx, info->options[i].help);
    }
    c->options = o;
  } else {
    c->options = NULL;
    c->noptions = 0;
  }
  pass_registry *r = registry(ctx, true);
  for (int i = 0; i < r->n; i++)
    if (r->items[i]->name == c->name) {
      r->items[i] = c;
      return;
    }
  if (r->n == r->cap) { /* arena arrays: the old one is simply abandoned */
    int cap = r->cap ? r->cap * 2 : 32;
    const kl_pass_info **items = kl_arena_alloc(a, cap * sizeof *items);
    if (r->n) memcpy(items, r->items, r->n * sizeof *items);
    r->items = items;
    r->cap = cap;
  }
  r->items[r->n++] = c;
}
static const kl_pass_info *lookup_n(kl_ctx *ctx, const char *name, size_t n) {
  pass_registry *r = registry(ctx, false);
  for (int i = 0; r && i < r->n; i++)
    if (strlen(r->items[i]->name) == n && !memcmp(r->items[i]->name, name, n)) return r->items[i];
  return NULL;
}
const kl_pass_info *kl_lookup_pass(kl_ctx *ctx, const char *name) {
  return name ? lookup_n(ctx, name, strlen(name)) : NULL;
}
int kl_pass_count(kl_ctx *ctx) {
  pass_registry *r = registry(ctx, false);
  return r ? r->n : 0;
}
const kl_pass_info *kl_pass_at(kl_ctx *ctx, int i) {
  pass_registry *r = registry(ctx, false);
  return (r && i >= 0 && i < r->n) ? r->items[i] : NULL;
}

static const char *kind_name(kl_opt_kind k) {
  return k == KL_OPT_INT ? "int" : k == KL_OPT_FLOAT ? "float" : k == KL_OPT_BOOL ? "bool" : "string";
}
char *kl_pass_describe(kl_ctx *ctx) {
  kl_sb sb = { 0 };
  for (int i = 0; i < kl_pass_count(ctx); i++) {
    const kl_pass_info *p = kl_pass_at(ctx, i);
    kl_sb_printf(&sb, "%s: %s\n", p->name, p->summary ? p->summary : "");
    for (int j = 0; j < p->noptions; j++) {
      const kl_pass_option *o = &p->options[j];
      kl_sb_printf(&sb, "  %s (%s, default %s): %s\n", o->name, kind_name(o->kind),
                   o->default_value ? o->default_value : "none", o->help ? o->help : "");
    }
  }
  return kl_sb_take(&sb);
}

/* ---- option values ---- */
typedef struct {
  const kl_pass_option *def;
  int64_t i;
  double f;
  bool b;
  const char *s;
  bool given;
} opt_val;
struct kl_pass_options {
  const kl_pass_info *info;
  int n;
  opt_val *v;
};

static const opt_val *find_opt(const kl_pass_options *o, const char *name) {
  for (int i = 0; o && name && i < o->n; i++)
    if (!strcmp(o->v[i].def->name, name)) return &o->v[i];
  return NULL;
}
int64_t kl_pass_opt_int(const kl_pass_options *o, const char *name) {
  const opt_val *v = find_opt(o, name);
  if (!v) return 0;
  return v->def->kind == KL_OPT_FLOAT ? (int64_t)v->f : v->def->kind == KL_OPT_BOOL ? v->b : v->i;
}
double kl_pass_opt_float(const kl_pass_options *o, const char *name) {
  const opt_val *v = find_opt(o, name);
  if (!v) return 0;
  return v->def->kind == KL_OPT_FLOAT ? v->f : v->def->kind == KL_OPT_BOOL ? v->b : (double)v->i;
}
bool kl_pass_opt_bool(const kl_pass_options *o, const char *name) {
  const opt_val *v = find_opt(o, name);
  if (!v) return false;
  return v->def->kind == KL_OPT_BOOL ? v->b : v->def->kind == KL_OPT_FLOAT ? v->f != 0 : v->i != 0;
}
const char *kl_pass_opt_string(const kl_pass_options *o, const char *name) {
  const opt_val *v = find_opt(o, name);
  return v ? v->s : NULL; /* the text of any option */
}

/* Parses text (NUL-terminated) as a value of def's kind into v; false if invalid. */
static bool parse_value(const kl_pass_option *def, const char *text, opt_val *v) {
  char *end;
  switch (def->kind) {
    case KL_OPT_INT: {
      const char *p = text + (*text == '-' || *text == '+');
      int base = (p[0] == '0' && (p[1] == 'x' || p[1] == 'X')) ? 16 : 10;
      if (!*p || *p == ' ' || *p == '-' || *p == '+') return false;
      errno = 0;
      long long x = strtoll(text, &end, base);
      if (errno || *end) return false;
      v->i = x;
      return true;
    }
    case KL_OPT_FLOAT:
      if (!*text || *text == ' ') return false;
      errno = 0;
      v->f = strtod(text, &end);
      return !errno && !*end;
    case KL_OPT_BOOL:
      if (!strcmp(text, "true") || !strcmp(text, "1")) {
        v->b = true;
        return true;
      }
      if (!strcmp(text, "false") || !strcmp(text, "0")) {
        v->b = false;
        return true;
      }
      return false;
    case KL_OPT_STRING: return true;
  }
  return false;
}
static const char *expected_text(kl_opt_kind k) {
  return k == KL_OPT_INT  ? "an integer"
      : k == KL_OPT_FLOAT ? "a number"
      : k == KL_OPT_BOOL  ? "true or false"
                          : "a string";
}

/* ---- pipeline and option-string parsing ---- */
typedef struct {
  kl_ctx *ctx;
  kl_arena *arena;
  const char *s;
  size_t len, pos;
  const char *file; /* location file name for errors */
  bool quiet;       /* report nothing (kl_pipeline_passes) */
} cursor;

static kl_status perr(cursor *c, size_t pos, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static kl_status perr(cursor *c, size_t pos, const char *fmt, ...) {
  if (c->quiet) return KL_ERR;
  va_list ap;
  va_start(ap, fmt);
  kl_emit_vdiag(c->ctx, KL_DIAG_ERROR, kl_loc_make(c->ctx, c->file, 1, (int)pos + 1), fmt, ap);
  va_end(ap);
  return KL_ERR;
}
static int peek(const cursor *c) { return c->pos < c->len ? (unsigned char)c->s[c->pos] : -1; }
static bool skip_ws(cursor *c) {
  size_t p0 = c->pos;
  while (c->pos < c->len &&
         (c->s[c->pos] == ' ' || c->s[c->pos] == '\t' || c->s[c->pos] == '\n' || c->s[c->pos] == '\r'))
    c->pos++;
  return c->pos != p0;
}
static bool name_char(int ch) {
  return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') || ch == '_' || ch == '-' ||
      ch == '.';
}
static size_t read_name(cursor *c) {
  size_t p0 = c->pos;
  while (name_char(peek(c))) c->pos++;
  return c->pos - p0;
}
/* Printable rendering of the character at pos (for "found ..." messages). */
static const char *found_text(cursor *c, char buf[16]) {
  int ch = peek(c);
  if (ch < 0) return "the end of the string";
  if (ch >= 32 && ch < 127)
    snprintf(buf, 16, "'%c'", ch);
  else
    snprintf(buf, 16, "byte 0x%02x", ch);
  return buf;
}

static const char *suggest_pass(kl_ctx *ctx, const char *name, size_t n) {
  const char *best = NULL;
  int bd = 1000;
  for (int i = 0; i < kl_pass_count(ctx); i++) {
    int d = kl_edit_distance(name, n, kl_pass_at(ctx, i)->name);
    if (d < bd) {
      bd = d;
      best = kl_pass_at(ctx, i)->name;
    }
  }
  return (best && bd <= 2 && (size_t)bd < n) ? best : NULL;
}

/* Fills o with every option of info at its default value. */
static kl_status init_options(kl_ctx *ctx, kl_arena *arena, const kl_pass_info *info, bool quiet,
                              kl_pass_options **out) {
  kl_pass_options *o = kl_arena_alloc(arena, sizeof *o);
  o->info = info;
  o->n = info->noptions;
  o->v = kl_arena_alloc(arena, (o->n ? o->n : 1) * sizeof *o->v);
  for (int i = 0; i < o->n; i++) {
    const kl_pass_option *d = &info->options[i];
    const char *txt = d->default_value ? d->default_value
        : d->kind == KL_OPT_STRING     ? ""
        : d->kind == KL_OPT_BOOL       ? "false"
                                       : "0";
    o->v[i].def = d;
    o->v[i].s = txt;
    if (!parse_value(d, txt, &o->v[i]))
      return quiet
          ? KL_ERR
          : kl_emit_error(ctx, KL_LOC_UNKNOWN, "pass '%s': invalid default value '%s' for %s option '%s' (expected %s)",
                          info->name, txt, kind_name(d->kind), d->name, expected_text(d->kind));
  }
  *out = o;
  return KL_OK;
}

/* Parses "k=v, flag, s=\"a,b\"" up to `close` ('}' or -1 for the end of the text). */
static kl_status parse_options(cursor *c, const kl_pass_info *info, int close, kl_pass_options *o) {
  for (;;) {
    skip_ws(c);
    if (peek(c) == close) return KL_OK;
    if (peek(c) < 0) return perr(c, c->pos, "missing '}' to close the options of pass '%s'", info->name);
    size_t kpos = c->pos, klen = read_name(c);
    char fb[16];
    if (!klen) return perr(c, c->pos, "expected an option name for pass '%s', found %s", info->name, found_text(c, fb));
    opt_val *v = NULL;
    for (int i = 0; i < o->n; i++)
      if (strlen(o->v[i].def->name) == klen && !memcmp(o->v[i].def->name, c->s + kpos, klen)) v = &o->v[i];
    if (!v) {
      kl_sb known = { 0 };
      for (int i = 0; i < info->noptions; i++) kl_sb_printf(&known, "%s%s", i ? ", " : "", info->options[i].name);
      kl_status st = info->noptions ? perr(c, kpos, "unknown option '%.*s' for pass '%s' (options: %s)", (int)klen,
                                           c->s + kpos, info->name, kl_sb_str(&known))
                                    : perr(c, kpos, "unknown option '%.*s' for pass '%s' (it takes no options)",
                                           (int)klen, c->s + kpos, info->name);
      kl_sb_free(&known);
      return st;
    }
    if (v->given) return perr(c, kpos, "option '%s' of pass '%s' is given twice", v->def->name, info->name);
    v->given = true;
    skip_ws(c);
    if (peek(c) != '=') {
      if (v->def->kind != KL_OPT_BOOL)
        return perr(c, kpos, "option '%s' of pass '%s' needs a value (%s)", v->def->name, info->name,
                    expected_text(v->def->kind));
      v->b = true;
      v->s = "true";
    } else {
      c->pos++;
      skip_ws(c);
      size_t vpos = c->pos;
      kl_sb val = { 0 };
      if (peek(c) == '"') {
        c->pos++;
        for (;;) {
          int ch = peek(c);
          if (ch < 0) {
            kl_sb_free(&val);
            return perr(c, vpos, "unterminated string in the options of pass '%s'", info->name);
          }
          c->pos++;
          if (ch == '"') break;
          if (ch == '\\' && peek(c) >= 0) {
            ch = peek(c);
            c->pos++;
          }
          kl_sb_putc(&val, (char)ch);
        }
      } else {
        while (peek(c) >= 0 && peek(c) != ',' && peek(c) != '}' && peek(c) != '{' && peek(c) != ' ' &&
               peek(c) != '\t' && peek(c) != '\n')
          c->pos++;
        if (c->pos == vpos)
          return perr(c, vpos, "option '%s' of pass '%s' needs a value (%s)", v->def->name, info->name,
                      expected_text(v->def->kind));
        kl_sb_putn(&val, c->s + vpos, c->pos - vpos);
      }
      const char *txt = kl_arena_strdup(c->arena, kl_sb_str(&val));
      kl_sb_free(&val);
      v->s = txt;
      if (!parse_value(v->def, txt, v))
        return perr(c, vpos, "invalid value '%s' for %s option '%s' of pass '%s' (expected %s)", txt,
                    kind_name(v->def->kind), v->def->name, info->name, expected_text(v->def->kind));
    }
    bool ws = skip_ws(c);
    if (peek(c) == ',') {
      c->pos++;
      skip_ws(c);
      if (peek(c) == close) return perr(c, c->pos, "expected an option name after ','");
      continue;
    }
    if (peek(c) == close) return KL_OK;
    if (!ws) {
      if (peek(c) < 0) return perr(c, c->pos, "missing '}' to close the options of pass '%s'", info->name);
      return perr(c, c->pos, "expected ',' or '}' after option '%s' of pass '%s', found %s", v->def->name, info->name,
                  found_text(c, fb));
    }
  }
}

/* ---- pass manager ---- */
typedef struct {
  const char *name;         /* pass name or callback label */
  const kl_pass_info *info; /* NULL for callbacks */
  kl_pass_options *opts;
  kl_pass_callback cb;
  void *user;
} pm_entry;
typedef struct {
  const char *name;
  double ms;
} pm_time;

struct kl_pass_manager {
  kl_ctx *ctx;
  kl_arena arena; /* names, option values */
  pm_entry *entries;
  int n, cap;
  bool verify;
  bool env_print; /* KILN_PRINT_IR_AFTER dumps (kl_pass_manager_set_env_print) */
  const char *print_which;
  kl_ir_callback ir_cb;
  void *ir_user;
  kl_pass_observer observer;
  void *observer_user;
  pm_time *times;
  int ntimes, captimes; /* last run: one entry per pass run */
  double verify_ms;     /* last run: all verification */
};

kl_pass_manager *kl_pass_manager_create(kl_ctx *ctx) {
  kl_pass_manager *pm = kl_xcalloc(1, sizeof *pm);
  pm->ctx = ctx;
  pm->verify = true;
  pm->env_print = true;
  kl_arena_init(&pm->arena);
  return pm;
}
void kl_pass_manager_destroy(kl_pass_manager *pm) {
  if (!pm) return;
  free(pm->entries);
  free(pm->times);
  kl_arena_destroy(&pm->arena);
  free(pm);
}
static void push_entry(kl_pass_manager *pm, pm_entry e) {
  if (pm->n == pm->cap) {
    pm->cap = pm->cap ? pm->cap * 2 : 8;
    pm->entries = kl_xrealloc(pm->entries, pm->cap * sizeof *pm->entries);
  }
  pm->entries[pm->n++] = e;
}

/* Parses a pipeline string into entries (malloc'd array, *n of them); option values
 * live in arena. KL_ERR (+ diagnostic unless quiet) on a bad string, *out then NULL. */
static kl_status parse_pipeline(kl_ctx *ctx, kl_arena *arena, const char *pipeline, bool quiet, pm_entry **out,
                                int *nout) {
  cursor c = { ctx, arena, pipeline ? pipeline : "", pipeline ? strlen(pipeline) : 0, 0, "<pipeline>", quiet };
  pm_entry *tmp = NULL;
  int ntmp = 0;
  kl_status st = KL_OK;
  char fb[16];
  skip_ws(&c);
  while (st == KL_OK && peek(&c) >= 0) {
    size_t npos = c.pos, nlen = read_name(&c);
    if (!nlen) {
      st = perr(&c, c.pos, "expected a pass name, found %s", found_text(&c, fb));
      break;
    }
    const kl_pass_info *info = lookup_n(ctx, c.s + npos, nlen);
    if (!info) {
      const char *sug = suggest_pass(ctx, c.s + npos, nlen);
      if (sug)
        st = perr(&c, npos, "unknown pass '%.*s' (did you mean '%s'?)", (int)nlen, c.s + npos, sug);
      else
        st = perr(&c, npos, "unknown pass '%.*s'", (int)nlen, c.s + npos);
      break;
    }
    pm_entry e = { .name = info->name, .info = info };
    if ((st = init_options(ctx, arena, info, quiet, &e.opts)) != KL_OK) break;
    skip_ws(&c);
    if (peek(&c) == '{') {
      c.pos++;
      if ((st = parse_options(&c, info, '}', e.opts)) != KL_OK) break;
      c.pos++; /* the '}' */
      skip_ws(&c);
    }
    tmp = kl_xrealloc(tmp, (ntmp + 1) * sizeof *tmp);
    tmp[ntmp++] = e;
    if (peek(&c) < 0) break;
    if (peek(&c) != ',') {
      st = perr(&c, c.pos, "expected ',' between passes, found %s", found_text(&c, fb));
      break;
    }
    c.pos++;
    skip_ws(&c);
    if (peek(&c) < 0) {
      st = perr(&c, c.pos, "expected a pass name after ','");
      break;
    }
  }
  if (st != KL_OK) {
    free(tmp);
    tmp = NULL;
    ntmp = 0;
  }
  *out = tmp;
  *nout = ntmp;
  return st;
}

kl_status kl_pass_manager_add_pipeline(kl_pass_manager *pm, const char *pipeline) {
  pm_entry *tmp;
  int ntmp;
  kl_status st = parse_pipeline(pm->ctx, &pm->arena, pipeline, false, &tmp, &ntmp);
  for (int i = 0; i < ntmp; i++) push_entry(pm, tmp[i]);
  free(tmp);
  return st;
}

int kl_pipeline_passes(kl_ctx *ctx, const char *pipeline, const kl_pass_info **out, int max) {
  kl_arena arena;
  kl_arena_init(&arena);
  pm_entry *es;
  int n;
  kl_status st = parse_pipeline(ctx, &arena, pipeline, true, &es, &n);
  for (int i = 0; st == KL_OK && i < n && i < max; i++) out[i] = es[i].info;
  free(es);
  kl_arena_destroy(&arena);
  return st == KL_OK ? n : -1;
}

kl_status kl_pass_manager_add_pass(kl_pass_manager *pm, const char *name, const char *options) {
  const kl_pass_info *info = kl_lookup_pass(pm->ctx, name);
  if (!info) {
    const char *sug = name ? suggest_pass(pm->ctx, name, strlen(name)) : NULL;
    if (sug) return kl_emit_error(pm->ctx, KL_LOC_UNKNOWN, "unknown pass '%s' (did you mean '%s'?)", name, sug);
    return kl_emit_error(pm->ctx, KL_LOC_UNKNOWN, "unknown pass '%s'", name ? name : "(null)");
  }
  pm_entry e = { .name = info->name, .info = info };
  if (init_options(pm->ctx, &pm->arena, info, false, &e.opts) != KL_OK) return KL_ERR;
  if (options) {
    cursor c = { pm->ctx, &pm->arena, options, strlen(options), 0, "<options>", false };
    if (parse_options(&c, info, -1, e.opts) != KL_OK) return KL_ERR;
  }
  push_entry(pm, e);
  return KL_OK;
}

void kl_pass_manager_add_callback(kl_pass_manager *pm, const char *name, kl_pass_callback fn, void *user) {
  pm_entry e = { .name = kl_arena_strdup(&pm->arena, name ? name : "callback"), .cb = fn, .user = user };
  push_entry(pm, e);
}
void kl_pass_manager_print_ir_after(kl_pass_manager *pm, const char *which, kl_ir_callback cb, void *user) {
  pm->print_which = which ? kl_arena_strdup(&pm->arena, which) : NULL;
  pm->ir_cb = cb;
  pm->ir_user = user;
}
void kl_pass_manager_set_verify(kl_pass_manager *pm, bool on) { pm->verify = on; }
void kl_pass_manager_set_env_print(kl_pass_manager *pm, bool on) { pm->env_print = on; }
void kl_pass_manager_observe(kl_pass_manager *pm, kl_pass_observer fn, void *user) {
  pm->observer = fn;
  pm->observer_user = user;
}

kl_status kl_pass_manager_set_option(kl_pass_manager *pm, const char *pass, const char *option, const char *value) {
  for (int i = 0; i < pm->n; i++) {
    pm_entry *e = &pm->entries[i];
    if (!e->info || !pass || strcmp(e->info->name, pass)) continue;
    opt_val *v = NULL;
    for (int j = 0; option && j < e->opts->n; j++)
      if (!strcmp(e->opts->v[j].def->name, option)) v = &e->opts->v[j];
    if (!v)
      return kl_emit_error(pm->ctx, KL_LOC_UNKNOWN, "pass '%s' has no option '%s'", pass, option ? option : "(null)");
    if (v->given) continue;
    opt_val parsed = { .def = v->def };
    if (!value || !parse_value(v->def, value, &parsed))
      return kl_emit_error(pm->ctx, KL_LOC_UNKNOWN, "invalid value '%s' for %s option '%s' of pass '%s' (expected %s)",
                           value ? value : "(null)", kind_name(v->def->kind), v->def->name, pass,
                           expected_text(v->def->kind));
    parsed.s = kl_arena_strdup(&pm->arena, value);
    *v = parsed;
  }
  return KL_OK;
}

/* Does a "all" / "a,b" selection name pass `name`? */
/* Calls fn(name, len, user) on each name of a selection ("a, b"); stops when it returns false. */
static void each_selected(const char *which, bool (*fn)(const char *, size_t, void *), void *user) {
  for (const char *p = which; p && *p;) {
    while (*p == ',' || *p == ' ') p++;
    const char *e = p;
    while (*e && *e != ',') e++;
    const char *t = e;
    while (t > p && t[-1] == ' ') t--;
    if (t > p && !fn(p, (size_t)(t - p), user)) return;
    p = e;
  }
}

typedef struct {
  const char *const *names;
  int n;
  const char *bad;
  size_t badlen;
} sel_check;
static bool sel_known(const char *p, size_t len, void *user) {
  sel_check *c = user;
  if (len == 3 && !memcmp(p, "all", 3)) return true;
  for (int i = 0; i < c->n; i++)
    if (strlen(c->names[i]) == len && !memcmp(c->names[i], p, len)) return true;
  c->bad = p;
  c->badlen = len;
  return false;
}
/* "unknown pass 'x' (did you mean 'y'?; valid: all, a, b)" for the first name of which
 * that is not one of names (malloc'd), or NULL. */
static char *unknown_selected(const char *which, const char *const *names, int n) {
  sel_check c = { names, n, NULL, 0 };
  each_selected(which, sel_known, &c);
  if (!c.bad) return NULL;
  kl_sb sb = { 0 };
  kl_sb_printf(&sb, "unknown pass '%.*s' (", (int)c.badlen, c.bad);
  const char *sug = kl_suggest_name(c.bad, c.badlen, names, n);
  if (sug) kl_sb_printf(&sb, "did you mean '%s'?; ", sug);
  kl_sb_puts(&sb, "valid: all");
  for (int i = 0; i < n; i++) {
    bool dup = false; /* a pipeline may run a pass twice */
    for (int j = 0; j < i && !dup; j++) dup = !strcmp(names[j], names[i]);
    if (!dup) kl_sb_printf(&sb, ", %s", names[i]);
  }
  kl_sb_puts(&sb, ")");
  return kl_sb_take(&sb);
}

char *kl_pass_manager_check_selection(kl_pass_manager *pm, const char *which) {
  const char **names = kl_xcalloc((size_t)pm->n + 1, sizeof *names);
  for (int i = 0; i < pm->n; i++) names[i] = pm->entries[i].name;
  char *msg = unknown_selected(which, names, pm->n);
  free(names);
  return msg;
}

/* KILN_PRINT_IR_AFTER names a pass this context does not know: one warning per process. */
static void check_env_selection(kl_ctx *ctx, const char *env) {
  static atomic_flag warned = ATOMIC_FLAG_INIT;
  int n = kl_pass_count(ctx);
  const char **names = kl_xcalloc((size_t)n + 1, sizeof *names);
  for (int i = 0; i < n; i++) names[i] = kl_pass_at(ctx, i)->name;
  char *msg = unknown_selected(env, names, n);
  if (msg) kl_env_warn_once(&warned, "KILN_PRINT_IR_AFTER", env, "%s", msg);
  free(msg);
  free(names);
}

bool kl_pass_selected(const char *which, const char *name) {
  if (!which) return false;
  size_t n = strlen(name);
  for (const char *p = which; *p;) {
    while (*p == ',' || *p == ' ') p++;
    const char *e = p;
    while (*e && *e != ',') e++;
    const char *t = e;
    while (t > p && t[-1] == ' ') t--;
    if ((size_t)(t - p) == 3 && !memcmp(p, "all", 3)) return true;
    if ((size_t)(t - p) == n && n && !memcmp(p, name, n)) return true;
    p = e;
  }
  return false;
}

static double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}
static void record_time(kl_pass_manager *pm, const char *name, double ms) {
  if (pm->ntimes == pm->captimes) {
    pm->captimes = pm->captimes ? pm->captimes * 2 : 16;
    pm->times = kl_xrealloc(pm->times, pm->captimes * sizeof *pm->times);
  }
  pm->times[pm->ntimes++] = (pm_time){ name, ms };
}

static kl_status verify_module(kl_pass_manager *pm, kl_op *module, const char *after) {
  int before = kl_diag_error_count(pm->ctx);
  double t0 = now_ms();
  kl_status st = kl_verify(module);
  pm->verify_ms += now_ms() - t0;
  if (st == KL_OK) return KL_OK;
  int n = kl_diag_error_count(pm->ctx) - before;
  if (after)
    return kl_emit_error(pm->ctx, module->loc, "after pass '%s': the IR does not verify (%d error%s above)", after, n,
                         n == 1 ? "" : "s");
  return kl_emit_error(pm->ctx, module->loc, "before the pipeline: the input IR does not verify (%d error%s above)", n,
                       n == 1 ? "" : "s");
}

kl_status kl_pass_manager_run(kl_pass_manager *pm, kl_op *module) {
  pm->ntimes = 0;
  pm->verify_ms = 0;
  const char *env = pm->env_print ? getenv("KILN_PRINT_IR_AFTER") : NULL;
  if (env && !*env) env = NULL;
  if (env) check_env_selection(pm->ctx, env);
  if (pm->verify && verify_module(pm, module, NULL) != KL_OK) return KL_ERR;
  for (int i = 0; i < pm->n; i++) {
    pm_entry *e = &pm->entries[i];
    double t0 = now_ms();
    kl_status st = e->info ? e->info->run(module, e->opts, e->info->user) : e->cb ? e->cb(module, e->user) : KL_OK;
    record_time(pm, e->name, now_ms() - t0);
    if (st != KL_OK) return kl_emit_error(pm->ctx, module->loc, "pass '%s' failed", e->name);
    bool to_cb = kl_pass_selected(pm->print_which, e->name), to_env = kl_pass_selected(env, e->name);
    if (to_cb || to_env) {
      char *text = kl_print_op(module, 0);
      if (to_cb && pm->ir_cb) pm->ir_cb(e->name, text, pm->ir_user);
      if ((to_cb && !pm->ir_cb) || to_env)
        fprintf(stderr, "// -----// IR Dump After %s //----- //\n%s\n", e->name, text);
      free(text);
    }
    if (pm->verify && verify_module(pm, module, e->name) != KL_OK) return KL_ERR;
    if (pm->observer) pm->observer(module, e->name, pm->observer_user);
  }
  return KL_OK;
}

char *kl_pass_manager_timing(kl_pass_manager *pm) {
  kl_sb sb = { 0 };
  int w = 10; /* "(verifier)" */
  double total = pm->verify_ms;
  for (int i = 0; i < pm->ntimes; i++) {
    int l = (int)strlen(pm->times[i].name);
    if (l > w) w = l;
    total += pm->times[i].ms;
  }
  for (int i = 0; i < pm->ntimes; i++) kl_sb_printf(&sb, "%-*s  %.3f ms\n", w, pm->times[i].name, pm->times[i].ms);
  if (pm->verify) kl_sb_printf(&sb, "%-*s  %.3f ms\n", w, "(verifier)", pm->verify_ms);
  kl_sb_printf(&sb, "%-*s  %.3f ms\n", w, "(total)", total);
  return kl_sb_take(&sb);
}

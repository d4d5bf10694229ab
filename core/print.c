/* print.c — the .kir printer (generic form and custom-syntax dispatch). */
#include "core/print.h"
#include "core/hashmap.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct kl_printer {
  kl_sb *sb;
  unsigned flags;
  int indent;
  int next_id, next_arg;
  kl_hashmap names; /* value -> name (pointer map) */
  kl_hashmap used;  /* names taken (string map, values unused) */
  kl_arena arena;
};

static bool used_has(kl_printer *pr, const char *s) { return kl_strmap_find(&pr->used, s, strlen(s)) != NULL; }
static void used_add(kl_printer *pr, const char *s) { kl_strmap_put(&pr->used, s, strlen(s), NULL); }

static bool hint_ok(const char *h) {
  if (!h || !*h) return false;
  for (const char *p = h; *p; p++)
    if (!(*p == '_' || (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9'))) return false;
  /* purely numeric or argN-like hints would collide with generated names */
  if (h[0] >= '0' && h[0] <= '9') return false;
  return true;
}

const char *kl_printer_value_name(kl_printer *pr, kl_value *v) {
  kl_hm_entry *e = kl_ptrmap_find(&pr->names, v);
  if (e) return e->val;
  char buf[32];
  if (v->def && v->def->nresults > 1 && v->index > 0) {
    /* results of multi-result ops print as %base#i */
    const char *base = kl_printer_value_name(pr, &v->def->results[0]);
    size_t cap = strlen(base) + 16;
    char *s = kl_arena_alloc(&pr->arena, cap);
    snprintf(s, cap, "%s#%d", base, v->index);
    kl_ptrmap_put(&pr->names, v, s);
    return s;
  }
  char *s;
  if (hint_ok(v->name_hint)) {
    /* sized to the hint (any length): a cut name could never become unique */
    size_t cap = strlen(v->name_hint) + 16;
    s = kl_arena_alloc(&pr->arena, cap);
    snprintf(s, cap, "%%%s", v->name_hint);
    for (int k = 1; used_has(pr, s); k++) snprintf(s, cap, "%%%s_%d", v->name_hint, k);
  } else {
    do {
      if (v->def)
        snprintf(buf, sizeof buf, "%%%d", pr->next_id++);
      else
        snprintf(buf, sizeof buf, "%%arg%d", pr->next_arg++);
    } while (used_has(pr, buf));
    s = kl_arena_strdup(&pr->arena, buf);
  }
  used_add(pr, s);
  kl_ptrmap_put(&pr->names, v, s);
  return s;
}

void kl_printer_puts(kl_printer *pr, const char *s) { kl_sb_puts(pr->sb, s); }
void kl_printer_printf(kl_printer *pr, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  kl_sb_vprintf(pr->sb, fmt, ap);
  va_end(ap);
}
void kl_printer_value(kl_printer *pr, kl_value *v) {
  if (!v) {
    kl_sb_puts(pr->sb, "%<null>");
    return;
  }
  const char *n = kl_printer_value_name(pr, v);
  if (v->def && v->def->nresults > 1 && v->index == 0)
    kl_sb_printf(pr->sb, "%s#0", n);
  else
    kl_sb_puts(pr->sb, n);
}
void kl_printer_type(kl_printer *pr, const kl_type *t) { kl_sb_puts(pr->sb, kl_type_str(t)); }
void kl_printer_attr(kl_printer *pr, const kl_attr *a) { kl_sb_puts(pr->sb, kl_attr_str_of(a)); }
void kl_printer_attr_dict(kl_printer *pr, kl_op *op, const char *const *elided) {
  bool first = true;
  for (int i = 0; i < op->nattrs; i++) {
    bool skip = false;
    for (const char *const *e = elided; e && *e; e++)
      if (!strcmp(*e, op->attrs[i].name)) skip = true;
    if (skip) continue;
    kl_sb_puts(pr->sb, first ? " {" : ", ");
    first = false;
    kl_print_ident_or_string(pr->sb, op->attrs[i].name);
    if (op->attrs[i].value->kind != KL_AT_UNIT) {
      kl_sb_puts(pr->sb, " = ");
      kl_sb_puts(pr->sb, op->attrs[i].value->text);
    }
  }
  if (!first) kl_sb_putc(pr->sb, '}');
}

static void indent(kl_printer *pr) {
  for (int i = 0; i < pr->indent; i++) kl_sb_puts(pr->sb, "  ");
}
static void print_op(kl_printer *pr, kl_op *op);

static void print_loc(kl_printer *pr, kl_loc loc) {
  if (!(pr->flags & KL_PRINT_LOCS) || !loc.file) return;
  kl_sb_puts(pr->sb, " loc(");
  kl_print_string_literal(pr->sb, loc.file, strlen(loc.file));
  kl_sb_printf(pr->sb, ":%d:%d)", loc.line, loc.col);
}

void kl_printer_region(kl_printer *pr, kl_region *r, bool print_entry_args) {
  kl_sb_puts(pr->sb, "{\n");
  /* Name every block's arguments in order first so labels print consistently. */
  int bi = 0;
  for (kl_block *b = r->first; b; b = b->next, bi++) {
    bool label = bi > 0 || r->first != r->last || (print_entry_args && b->nargs > 0);
    if (label) {
      pr->indent--;
      indent(pr);
      pr->indent++;
      kl_sb_printf(pr->sb, "^bb%d", bi);
      if (b->nargs) {
        kl_sb_putc(pr->sb, '(');
        for (int i = 0; i < b->nargs; i++) {
          if (i) kl_sb_puts(pr->sb, ", ");
          kl_printer_value(pr, b->args[i]);
          kl_sb_puts(pr->sb, ": ");
          kl_printer_type(pr, b->args[i]->type);
        }
        kl_sb_putc(pr->sb, ')');
      }
      kl_sb_puts(pr->sb, ":\n");
    }
    for (kl_op *o = b->first; o; o = o->next) {
      indent(pr);
      print_op(pr, o);
      kl_sb_putc(pr->sb, '\n');
    }
  }
  pr->indent--;
  indent(pr);
  pr->indent++;
  kl_sb_putc(pr->sb, '}');
}

static void print_types(kl_printer *pr, int n, const kl_type *const *ts, bool parens) {
  if (parens) kl_sb_putc(pr->sb, '(');
  for (int i = 0; i < n; i++) {
    if (i) kl_sb_puts(pr->sb, ", ");
    kl_printer_type(pr, ts[i]);
  }
  if (parens) kl_sb_putc(pr->sb, ')');
}

static void print_op(kl_printer *pr, kl_op *op) {
  if (op->nresults) {
    kl_sb_puts(pr->sb, kl_printer_value_name(pr, &op->results[0]));
    if (op->nresults > 1) kl_sb_printf(pr->sb, ":%d", op->nresults);
    kl_sb_puts(pr->sb, " = ");
  }
  if (op->def && op->def->print && !(pr->flags & KL_PRINT_GENERIC)) {
    kl_sb_puts(pr->sb, op->name);
    pr->indent++;
    op->def->print(pr, op);
    pr->indent--;
    print_loc(pr, op->loc);
    return;
  }
  kl_print_string_literal(pr->sb, op->name, strlen(op->name));
  kl_sb_putc(pr->sb, '(');
  for (int i = 0; i < op->nopnds; i++) {
    if (i) kl_sb_puts(pr->sb, ", ");
    kl_printer_value(pr, op->opnds[i].value);
  }
  kl_sb_putc(pr->sb, ')');
  if (op->nregions) {
    kl_sb_puts(pr->sb, " (");
    pr->indent++;
    for (int i = 0; i < op->nregions; i++) {
      if (i) kl_sb_puts(pr->sb, ", ");
      kl_printer_region(pr, &op->regions[i], true);
    }
    pr->indent--;
    kl_sb_putc(pr->sb, ')');
  }
  kl_printer_attr_dict(pr, op, NULL);
  kl_sb_puts(pr->sb, " : ");
  const kl_type **ts = kl_xmalloc((op->nopnds + op->nresults + 1) * sizeof *ts);
  for (int i = 0; i < op->nopnds; i++) ts[i] = op->opnds[i].value ? op->opnds[i].value->type : NULL;
  print_types(pr, op->nopnds, ts, true);
  kl_sb_puts(pr->sb, " -> ");
  for (int i = 0; i < op->nresults; i++) ts[i] = op->results[i].type;
  print_types(pr, op->nresults, ts, op->nresults != 1);
  free(ts);
  print_loc(pr, op->loc);
}

void kl_print_op_to(kl_sb *sb, kl_op *op, unsigned flags) {
  kl_printer pr = { .sb = sb, .flags = flags, .names = KL_PTRMAP_INIT, .used = KL_STRMAP_INIT };
  kl_arena_init(&pr.arena);
  print_op(&pr, op);
  kl_sb_putc(sb, '\n');
  kl_hashmap_free(&pr.names);
  kl_hashmap_free(&pr.used);
  kl_arena_destroy(&pr.arena);
}
char *kl_print_op(kl_op *op, unsigned flags) {
  kl_sb sb = { 0 };
  kl_print_op_to(&sb, op, flags);
  return kl_sb_take(&sb);
}

/* problem_key.c — kl_gemm_problem_key (problem_key.h): a normalized print of the kernel
 * func, hashed. */
#include "passes/problem_key.h"
#include "core/print.h"
#include "core/type.h"
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Drops `name = "..."` (a string attribute, with a following ", " or preceding ", ")
 * from text, in place. */
static void drop_str_attr(char *text, const char *name) {
  size_t nl = strlen(name);
  char *p = text;
  while ((p = strstr(p, name))) {
    bool word = (p == text || p[-1] == ' ' || p[-1] == '{') && !strncmp(p + nl, " = \"", 4);
    if (!word) {
      p += nl;
      continue;
    }
    char *q = p + nl + 4;
    while (*q && *q != '"') q += (*q == '\\' && q[1]) ? 2 : 1;
    if (*q) q++;
    if (!strncmp(q, ", ", 2))
      q += 2;
    else if (p - text >= 2 && !strncmp(p - 2, ", ", 2))
      p -= 2;
    memmove(p, q, strlen(q) + 1);
  }
}

static int count_ops(kl_op *op) {
  int n = 0;
  for (int r = 0; r < op->nregions; r++)
    for (kl_block *b = op->regions[r].first; b; b = b->next)
      for (kl_op *o = b->first; o; o = o->next) {
        if (strcmp(o->name, "rock.gemm") && strcmp(o->name, "rock.transform") && strcmp(o->name, "rock.alloc") &&
            strcmp(o->name, "func.return") && strcmp(o->name, "rock.yield"))
          n++;
        n += count_ops(o);
      }
  return n;
}

void kl_gemm_problem_key(kl_op *fn, kl_op *gemm, char key[KL_PROBLEM_KEY_LEN], char *desc, size_t desclen) {
  char *text = kl_print_op(fn, KL_PRINT_GENERIC);
  const char *name = kl_op_attr_string(fn, "sym_name");
  if (name) { /* "@name(" -> "@k(" wherever the func names itself */
    char pat[512];
    snprintf(pat, sizeof pat, "@%s", name);
    size_t pl = strlen(pat);
    char *p = text;
    while ((p = strstr(p, pat))) {
      char after = p[pl];
      if (after == '_' || (after >= '0' && after <= '9') || (after >= 'a' && after <= 'z') ||
          (after >= 'A' && after <= 'Z')) {
        p += pl;
        continue;
      }
      p[1] = 'k';
      memmove(p + 2, p + pl, strlen(p + pl) + 1);
      p += 2;
    }
  }
  drop_str_attr(text, "sym_name");
  drop_str_attr(text, "perf_config_source");
  drop_str_attr(text, "perf_config");
  drop_str_attr(text, "problem_key");
  drop_str_attr(text, "problem");
  uint64_t h = 14695981039346656037ull;
  for (const unsigned char *s = (const unsigned char *)text; *s; s++) h = (h ^ *s) * 1099511628211ull;
  free(text);
  snprintf(key, KL_PROBLEM_KEY_LEN, "%016" PRIx64, h);
  if (!desc || !desclen) return;
  const kl_type *ta = gemm->opnds[0].value->type, *tb = gemm->opnds[1].value->type, *tc = gemm->opnds[2].value->type;
  int extra = count_ops(fn);
  snprintf(desc, desclen, "gemm G=%lld M=%lld N=%lld K=%lld %s,%s->%s%s", (long long)ta->shape[0],
           (long long)ta->shape[2], (long long)tb->shape[2], (long long)ta->shape[1], kl_type_str(ta->elem),
           kl_type_str(tb->elem), kl_type_str(tc->elem), "");
  if (extra) {
    size_t l = strlen(desc);
    snprintf(desc + l, desclen - l, " +%d ops", extra);
  }
}

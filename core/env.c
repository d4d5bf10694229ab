/* env.c — one warning per environment variable with an unknown value (env.h). */
#include "core/env.h"
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "core/suggest.h"

void kl_env_warn_once(atomic_flag *once, const char *var, const char *value, const char *fmt, ...) {
  if (atomic_flag_test_and_set(once)) return;
  char msg[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  fprintf(stderr, "kiln: warning: %s=%s: %s\n", var, value ? value : "", msg);
}

bool kl_env_debug(const char *topic) {
  static const char *const topics[] = { "0", "1", "all", "rewrite", "swizzle", "fusion" };
  const char *e = getenv("KILN_DEBUG");
  if (!e || !*e) return false;
  bool named = false;
  for (const char *p = e; *p;) {
    size_t n = strcspn(p, ", ");
    if (n) {
      bool known = false;
      for (size_t i = 0; i < sizeof topics / sizeof *topics; i++)
        known |= strlen(topics[i]) == n && !strncmp(topics[i], p, n);
      if (!known) {
        static atomic_flag warned = ATOMIC_FLAG_INIT;
        const char *near = kl_suggest_name(p, n, topics, (int)(sizeof topics / sizeof *topics));
        kl_env_warn_once(&warned, "KILN_DEBUG", e,
                         "unknown topic '%.*s'%s%s%s (topics: 1, all, rewrite, swizzle, fusion; 0: off)", (int)n, p,
                         near ? " (did you mean '" : "", near ? near : "", near ? "'?)" : "");
      }
      named |= (strlen(topic) == n && !strncmp(topic, p, n)) || (n == 3 && !strncmp(p, "all", 3));
    }
    p += n + (p[n] != 0);
  }
  if (!strcmp(topic, "swizzle") || !strcmp(topic, "fusion")) return strcmp(e, "0") != 0; /* any value: the remarks */
  return named;
}

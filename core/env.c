/* env.c — one warning per environment variable with an unknown value (env.h). */
#include "core/env.h"
#include <stdarg.h>
#include <stdio.h>

void kl_env_warn_once(atomic_flag *once, const char *var, const char *value, const char *fmt, ...) {
  if (atomic_flag_test_and_set(once)) return;
  char msg[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  fprintf(stderr, "kiln: warning: %s=%s: %s\n", var, value ? value : "", msg);
}

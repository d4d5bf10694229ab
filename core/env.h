/* env.h — environment variables kiln reads, and the one way to complain about them.
 * Contract: kl_env_warn_once prints "kiln: warning: <var>=<value>: <message>\n" to
 * stderr the first time it is called with a given flag (one static atomic_flag per
 * variable, at the place that reads it) and does nothing afterwards, so a variable with
 * an unknown value warns once per process, never fails a call and never exits. Safe
 * from any thread. */
#ifndef KL_CORE_ENV_H
#define KL_CORE_ENV_H
#include <stdatomic.h>

void kl_env_warn_once(atomic_flag *once, const char *var, const char *value, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

#endif

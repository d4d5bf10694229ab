/* env.h — environment variables kiln reads, and the one way to complain about them.
 * Contract: kl_env_warn_once prints "kiln: warning: <var>=<value>: <message>\n" to
 * stderr the first time it is called with a given flag (one static atomic_flag per
 * variable, at the place that reads it) and does nothing afterwards, so a variable with
 * an unknown value warns once per process, never fails a call and never exits. Safe
 * from any thread. */
#ifndef KL_CORE_ENV_H
#define KL_CORE_ENV_H
#include <stdatomic.h>
#include <stdbool.h>

void kl_env_warn_once(atomic_flag *once, const char *var, const char *value, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* KILN_DEBUG, a list of topics (comma- or space-separated): kl_env_debug("rewrite") is
 * true when the list names rewrite (or all); kl_env_debug("swizzle") and
 * kl_env_debug("fusion") when KILN_DEBUG has any value but "" and "0" (rock-output-swizzle's
 * and graph-partition's input-fusion cost remarks). A topic kiln does not know (known: 0,
 * 1, all, rewrite, swizzle, fusion) warns once with the closest one. */
bool kl_env_debug(const char *topic);

#endif

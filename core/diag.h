/* diag.h — the one diagnostic value of every layer (kl_diag: severity, location,
 * message), where diagnostics go without an IR context (kl_diag_sink: a caller's fixed
 * buffer or a callback), its one text form, and the one printf-style formatting helper
 * behind every error path (kl_errf / kl_verrf).
 * Contract: no allocation, no global state, never aborts. kl_errf writes the formatted
 * message into err[errlen] (truncated, always NUL-terminated; nothing when err is NULL
 * or errlen 0) and returns 1, an error status, so that callers can `return
 * kl_errf(err, errlen, ...)`; the `char *err, size_t errlen` helpers of every layer
 * call this function (kl_perf_errf wraps it to return false). A diagnostic's
 * text form is "file:line:col: error: message" (kl_loc_format's location, "<unknown>"
 * without a file), the form kl_emit_error (core/context.h) writes to a context. */
#ifndef KL_DIAG_H
#define KL_DIAG_H
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>

/* A source location: file:line:col for text input, or a Lua chunk and line
 * ("script.lua", line, 0). file is interned by a context (kl_loc_make) or a string
 * that outlives the location (NULL for "unknown"). */
typedef struct kl_loc {
  const char *file;
  int line, col;
} kl_loc;
#define KL_LOC_UNKNOWN ((kl_loc){ 0, 0, 0 })
/* Writes "file:line:col" (or "file:line", or "file", or "<unknown>") into buf. */
void kl_loc_format(kl_loc loc, char *buf, size_t n);

typedef enum { KL_DIAG_ERROR, KL_DIAG_WARNING, KL_DIAG_NOTE } kl_diag_kind;
const char *kl_diag_kind_name(kl_diag_kind kind); /* "error", "warning", "note" */

/* One diagnostic; message is owned by whoever made the value (valid during a callback). */
typedef struct kl_diag {
  kl_diag_kind severity;
  kl_loc loc;
  const char *message;
} kl_diag;
/* "file:line:col: error: message" into buf[n] (truncated, NUL-terminated); returns buf. */
char *kl_diag_format(const kl_diag *d, char *buf, size_t n);

/* A receiver of diagnostics: a sink's callback, a context's handler (core/context.h). */
typedef void (*kl_diag_handler)(void *user, const kl_diag *d);

/* Where diagnostics go when there is no context: fn (if set) is called with each one;
 * otherwise the first error's message (without location or severity, as the
 * `char *err` convention has it) is kept in buf[len] (buf may be NULL: dropped).
 * nerrors counts the errors reported. */
typedef struct kl_diag_sink {
  char *buf;
  size_t len;
  kl_diag_handler fn;
  void *user;
  int nerrors;
} kl_diag_sink;
kl_diag_sink kl_diag_sink_buffer(char *buf, size_t len);
kl_diag_sink kl_diag_sink_callback(kl_diag_handler fn, void *user);
/* Formats and reports one diagnostic to sink (may be NULL: dropped); returns 1 for an
 * error, 0 otherwise. */
int kl_report(kl_diag_sink *sink, kl_diag_kind kind, kl_loc loc, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* The formatting helper (see the contract). */
int kl_errf(char *err, size_t errlen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
int kl_verrf(char *err, size_t errlen, const char *fmt, va_list ap);
#endif

/* diag.c — diagnostic values, sinks and the one formatting helper (see diag.h). */
#include "core/diag.h"
#include <stdio.h>
#include <string.h>

int kl_verrf(char *err, size_t errlen, const char *fmt, va_list ap) {
  if (err && errlen) vsnprintf(err, errlen, fmt, ap);
  return 1;
}
int kl_errf(char *err, size_t errlen, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  kl_verrf(err, errlen, fmt, ap);
  va_end(ap);
  return 1;
}

void kl_loc_format(kl_loc loc, char *buf, size_t n) {
  if (!loc.file)
    snprintf(buf, n, "<unknown>");
  else if (loc.col > 0)
    snprintf(buf, n, "%s:%d:%d", loc.file, loc.line, loc.col);
  else if (loc.line > 0)
    snprintf(buf, n, "%s:%d", loc.file, loc.line);
  else
    snprintf(buf, n, "%s", loc.file);
}

const char *kl_diag_kind_name(kl_diag_kind kind) {
  static const char *const names[] = { "error", "warning", "note" };
  return (unsigned)kind <= KL_DIAG_NOTE ? names[kind] : "?";
}

char *kl_diag_format(const kl_diag *d, char *buf, size_t n) {
  char where[512];
  kl_loc_format(d->loc, where, sizeof where);
  if (n) snprintf(buf, n, "%s: %s: %s", where, kl_diag_kind_name(d->severity), d->message ? d->message : "");
  return buf;
}

kl_diag_sink kl_diag_sink_buffer(char *buf, size_t len) {
  if (buf && len) buf[0] = 0;
  return (kl_diag_sink){ .buf = buf, .len = len };
}
kl_diag_sink kl_diag_sink_callback(kl_diag_handler fn, void *user) { return (kl_diag_sink){ .fn = fn, .user = user }; }

int kl_report(kl_diag_sink *sink, kl_diag_kind kind, kl_loc loc, const char *fmt, ...) {
  int is_error = kind == KL_DIAG_ERROR;
  if (!sink) return is_error;
  char msg[2048];
  va_list ap;
  va_start(ap, fmt);
  kl_verrf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  if (sink->fn)
    sink->fn(sink->user, &(kl_diag){ kind, loc, msg });
  else if (is_error && !sink->nerrors && sink->buf && sink->len)
    snprintf(sink->buf, sink->len, "%s", msg);
  sink->nerrors += is_error;
  return is_error;
}

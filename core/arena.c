#include "core/arena.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct kl_arena_chunk {
  kl_arena_chunk *next;
  size_t used, cap;
  _Alignas(16) unsigned char data[];
};

static void oom(void) {
  fputs("kiln: out of memory\n", stderr);
  abort();
}
void *kl_xmalloc(size_t n) {
  void *p = malloc(n ? n : 1);
  if (!p) oom();
  return p;
}
void *kl_xcalloc(size_t n, size_t m) {
  void *p = calloc(n ? n : 1, m ? m : 1);
  if (!p) oom();
  return p;
}
void *kl_xrealloc(void *p, size_t n) {
  p = realloc(p, n ? n : 1);
  if (!p) oom();
  return p;
}
char *kl_xstrdup(const char *s) {
  size_t n = strlen(s) + 1;
  return memcpy(kl_xmalloc(n), s, n);
}

void kl_arena_init(kl_arena *a) {
  a->head = NULL;
  a->total = 0;
}
void kl_arena_destroy(kl_arena *a) {
  for (kl_arena_chunk *c = a->head, *n; c; c = n) {
    n = c->next;
    free(c);
  }
  a->head = NULL;
  a->total = 0;
}
void *kl_arena_alloc(kl_arena *a, size_t n) {
  n = (n + 15) & ~(size_t)15;
  kl_arena_chunk *c = a->head;
  if (!c || c->cap - c->used < n) {
    size_t cap = n > 32768 ? n : 32768;
    c = kl_xmalloc(sizeof(*c) + cap);
    c->used = 0;
    c->cap = cap;
    c->next = a->head;
    a->head = c;
    a->total += cap;
  }
  void *p = c->data + c->used;
  c->used += n;
  memset(p, 0, n);
  return p;
}
void *kl_arena_dup(kl_arena *a, const void *p, size_t n) {
  void *q = kl_arena_alloc(a, n);
  if (n) memcpy(q, p, n);
  return q;
}
char *kl_arena_strndup(kl_arena *a, const char *s, size_t n) {
  char *q = kl_arena_alloc(a, n + 1);
  memcpy(q, s, n);
  q[n] = 0;
  return q;
}
char *kl_arena_strdup(kl_arena *a, const char *s) { return kl_arena_strndup(a, s, strlen(s)); }

static void sb_reserve(kl_sb *sb, size_t extra) {
  if (sb->len + extra + 1 <= sb->cap) return;
  size_t cap = sb->cap ? sb->cap : 64;
  while (cap < sb->len + extra + 1) cap *= 2;
  sb->buf = kl_xrealloc(sb->buf, cap);
  sb->cap = cap;
}
void kl_sb_putn(kl_sb *sb, const char *s, size_t n) {
  sb_reserve(sb, n);
  memcpy(sb->buf + sb->len, s, n);
  sb->len += n;
  sb->buf[sb->len] = 0;
}
void kl_sb_puts(kl_sb *sb, const char *s) { kl_sb_putn(sb, s, strlen(s)); }
void kl_sb_putc(kl_sb *sb, char c) { kl_sb_putn(sb, &c, 1); }
void kl_sb_vprintf(kl_sb *sb, const char *fmt, va_list ap) {
  va_list ap2;
  va_copy(ap2, ap);
  int n = vsnprintf(NULL, 0, fmt, ap2);
  va_end(ap2);
  if (n <= 0) return;
  sb_reserve(sb, (size_t)n);
  vsnprintf(sb->buf + sb->len, (size_t)n + 1, fmt, ap);
  sb->len += (size_t)n;
}
void kl_sb_printf(kl_sb *sb, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  kl_sb_vprintf(sb, fmt, ap);
  va_end(ap);
}
char *kl_sb_take(kl_sb *sb) {
  char *s = sb->buf ? sb->buf : kl_xstrdup("");
  sb->buf = NULL;
  sb->len = sb->cap = 0;
  return s;
}
void kl_sb_free(kl_sb *sb) {
  free(sb->buf);
  sb->buf = NULL;
  sb->len = sb->cap = 0;
}
const char *kl_sb_str(kl_sb *sb) { return sb->buf ? sb->buf : ""; }

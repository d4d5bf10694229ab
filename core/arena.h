/* arena.h — bump allocation and growable strings.
 * Contract: kl_arena hands out zeroed, 16-byte aligned memory that lives until
 * kl_arena_destroy; nothing is freed one by one. kl_sb is a heap string builder
 * (malloc'd, freed by kl_sb_free) used by printers and diagnostics. Allocation failure
 * is the only fatal condition in kiln (out of memory) and aborts with a message. */
#ifndef KL_ARENA_H
#define KL_ARENA_H
#include <stddef.h>
#include <stdarg.h>

typedef struct kl_arena_chunk kl_arena_chunk;
typedef struct kl_arena {
  kl_arena_chunk *head;
  size_t total;
} kl_arena;

void kl_arena_init(kl_arena *a);
void kl_arena_destroy(kl_arena *a);
void *kl_arena_alloc(kl_arena *a, size_t n); /* zeroed */
void *kl_arena_dup(kl_arena *a, const void *p, size_t n);
char *kl_arena_strdup(kl_arena *a, const char *s);
char *kl_arena_strndup(kl_arena *a, const char *s, size_t n);

/* Heap helpers that abort on out-of-memory (the only abort in kiln). */
void *kl_xmalloc(size_t n);
void *kl_xcalloc(size_t n, size_t m);
void *kl_xrealloc(void *p, size_t n);
char *kl_xstrdup(const char *s);

typedef struct kl_sb {
  char *buf;
  size_t len, cap;
} kl_sb;
void kl_sb_putc(kl_sb *sb, char c);
void kl_sb_puts(kl_sb *sb, const char *s);
void kl_sb_putn(kl_sb *sb, const char *s, size_t n);
void kl_sb_printf(kl_sb *sb, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void kl_sb_vprintf(kl_sb *sb, const char *fmt, va_list ap);
char *kl_sb_take(kl_sb *sb); /* returns the malloc'd string (never NULL), resets sb */
void kl_sb_free(kl_sb *sb);
const char *kl_sb_str(kl_sb *sb); /* NUL-terminated view, never NULL */
#endif

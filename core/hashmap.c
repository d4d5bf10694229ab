/* hashmap.c — open-addressing hash map with string or pointer keys (see hashmap.h). */
#include "core/hashmap.h"
#include "core/arena.h"
#include <stdlib.h>
#include <string.h>

static const char tomb_key = 0; /* its address marks a removed entry */
#define TOMB ((const void *)&tomb_key)

uint64_t kl_hash_bytes(const void *s, size_t n) {
  const unsigned char *b = s;
  uint64_t h = 1469598103934665603ull;
  for (size_t i = 0; i < n; i++) {
    h ^= b[i];
    h *= 1099511628211ull;
  }
  return h;
}
uint64_t kl_hash_ptr(const void *p) {
  uint64_t x = (uintptr_t)p;
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdull;
  x ^= x >> 33;
  return x;
}

bool kl_hashmap_live(const kl_hm_entry *e) { return e->key && e->key != TOMB; }
size_t kl_hashmap_count(const kl_hashmap *m) { return m->live; }
void kl_hashmap_free(kl_hashmap *m) {
  free(m->slots);
  *m = (kl_hashmap){ .strkeys = m->strkeys };
}

static bool same(const kl_hashmap *m, const kl_hm_entry *e, const void *key, size_t n, uint64_t h) {
  if (m->strkeys) return e->hash == h && e->len == n && memcmp(e->key, key, n) == 0;
  return e->key == key;
}

/* The live entry of key, or NULL. */
static kl_hm_entry *find(const kl_hashmap *m, const void *key, size_t n, uint64_t h) {
  if (!m->cap) return NULL;
  for (size_t i = h & (m->cap - 1);; i = (i + 1) & (m->cap - 1)) {
    kl_hm_entry *e = &m->slots[i];
    if (!e->key) return NULL;
    if (e->key != TOMB && same(m, e, key, n, h)) return e;
  }
}

static void rehash(kl_hashmap *m) {
  size_t ncap = !m->cap ? 64 : (m->live * 4 > m->cap ? m->cap * 2 : m->cap); /* same size: drops tombstones */
  kl_hm_entry *old = m->slots;
  size_t ocap = m->cap;
  m->slots = kl_xcalloc(ncap, sizeof *m->slots);
  m->cap = ncap;
  m->used = m->live = 0;
  for (size_t i = 0; i < ocap; i++)
    if (kl_hashmap_live(&old[i])) {
      size_t j = old[i].hash & (ncap - 1);
      while (m->slots[j].key) j = (j + 1) & (ncap - 1);
      m->slots[j] = old[i];
      m->used++;
      m->live++;
    }
  free(old);
}

static kl_hm_entry *put(kl_hashmap *m, const void *key, size_t n, uint64_t h, void *val) {
  kl_hm_entry *e = find(m, key, n, h);
  if (e) {
    e->val = val;
    return e;
  }
  if ((m->used + 1) * 2 > m->cap) rehash(m);
  size_t i = h & (m->cap - 1);
  while (m->slots[i].key && m->slots[i].key != TOMB) i = (i + 1) & (m->cap - 1);
  if (!m->slots[i].key) m->used++;
  m->slots[i] = (kl_hm_entry){ key, n, h, val };
  m->live++;
  return &m->slots[i];
}

static bool remove_entry(kl_hashmap *m, kl_hm_entry *e) {
  if (!e) return false;
  e->key = TOMB;
  e->val = NULL;
  m->live--;
  return true;
}

kl_hm_entry *kl_strmap_find(const kl_hashmap *m, const char *key, size_t n) {
  return find(m, key, n, kl_hash_bytes(key, n));
}
kl_hm_entry *kl_strmap_put(kl_hashmap *m, const char *key, size_t n, void *val) {
  return put(m, key, n, kl_hash_bytes(key, n), val);
}
bool kl_strmap_remove(kl_hashmap *m, const char *key, size_t n) { return remove_entry(m, kl_strmap_find(m, key, n)); }

kl_hm_entry *kl_ptrmap_find(const kl_hashmap *m, const void *key) {
  return key ? find(m, key, 0, kl_hash_ptr(key)) : NULL;
}
kl_hm_entry *kl_ptrmap_put(kl_hashmap *m, const void *key, void *val) {
  return key ? put(m, key, 0, kl_hash_ptr(key), val) : NULL;
}
bool kl_ptrmap_remove(kl_hashmap *m, const void *key) { return remove_entry(m, kl_ptrmap_find(m, key)); }

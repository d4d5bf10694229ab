/* hashmap.h — the one hash map of the core: open addressing (linear probing, power-of-
 * two capacity, at most half full) with tombstones, keyed by strings (bytes + length)
 * or by pointers, holding a void * value per key.
 * Contract: a kl_hashmap starts empty as KL_STRMAP_INIT or KL_PTRMAP_INIT (a zeroed
 * kl_hashmap is an empty pointer map); the kind of key is fixed then (kl_strmap_* on
 * string maps, kl_ptrmap_* on pointer maps; string keys are never NULL) and it is
 * released with kl_hashmap_free, which frees only the table. The map does not copy keys:
 * a string key's bytes (and a pointer key) must stay valid while its entry is in the map
 * (contexts store arena copies). An entry pointer returned by find/put is valid until the
 * next put or remove on the map. Allocation goes through kl_xcalloc (core/arena.h); there
 * is no other failure. Iteration: for each i < m->cap, kl_hashmap_live(&m->slots[i]). */
#ifndef KL_HASHMAP_H
#define KL_HASHMAP_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct kl_hm_entry {
  const void *key;
  size_t len;
  uint64_t hash;
  void *val;
} kl_hm_entry;
typedef struct kl_hashmap {
  kl_hm_entry *slots;
  size_t cap, live, used; /* used: live entries + tombstones */
  bool strkeys;
} kl_hashmap;
#define KL_STRMAP_INIT ((kl_hashmap){ .strkeys = true })
#define KL_PTRMAP_INIT ((kl_hashmap){ .strkeys = false })

void kl_hashmap_free(kl_hashmap *m); /* leaves an empty map of the same kind */
size_t kl_hashmap_count(const kl_hashmap *m);
bool kl_hashmap_live(const kl_hm_entry *e);

uint64_t kl_hash_bytes(const void *s, size_t n); /* FNV-1a */
uint64_t kl_hash_ptr(const void *p);             /* a 64-bit mix of the address */

/* String keys: n bytes at key (no NUL needed). find returns NULL if absent; put inserts
 * key (or replaces the value of an equal key, keeping the stored key) and returns the entry. */
kl_hm_entry *kl_strmap_find(const kl_hashmap *m, const char *key, size_t n);
kl_hm_entry *kl_strmap_put(kl_hashmap *m, const char *key, size_t n, void *val);
bool kl_strmap_remove(kl_hashmap *m, const char *key, size_t n);

/* Pointer keys (NULL is not a key). */
kl_hm_entry *kl_ptrmap_find(const kl_hashmap *m, const void *key);
kl_hm_entry *kl_ptrmap_put(kl_hashmap *m, const void *key, void *val);
bool kl_ptrmap_remove(kl_hashmap *m, const void *key); /* true if it was there */
#endif

/* test_hashmap.c — core/hashmap.h: string and pointer keys, replacement, removal with
 * tombstones (re-insertion, probing past removed entries), growth, and a random run
 * against a reference array. */
#include "core/hashmap.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"

static void test_strings(void) {
  group_begin();
  kl_hashmap m = KL_STRMAP_INIT;
  CHECK(!kl_strmap_find(&m, "a", 1) && kl_hashmap_count(&m) == 0 && !kl_strmap_remove(&m, "a", 1));
  int one = 1, two = 2;
  const char *k1 = "alpha";
  kl_hm_entry *e = kl_strmap_put(&m, k1, 5, &one);
  CHECK(e && e->val == &one && kl_hashmap_count(&m) == 1);
  /* keys are bytes + length: a prefix is another key, no NUL needed */
  CHECK(kl_strmap_find(&m, "alphabet", 5) && kl_strmap_find(&m, "alphabet", 5)->val == &one);
  CHECK(!kl_strmap_find(&m, "alp", 3) && !kl_strmap_find(&m, "alphabet", 8));
  char copy[] = "alpha";
  e = kl_strmap_put(&m, copy, 5, &two); /* replaces the value, keeps the stored key */
  CHECK(e->val == &two && e->key == k1 && kl_hashmap_count(&m) == 1);
  CHECK(kl_strmap_put(&m, "", 0, &one) && kl_strmap_find(&m, "x", 0) && kl_hashmap_count(&m) == 2, "the empty key");
  CHECK(kl_strmap_remove(&m, "alpha", 5) && !kl_strmap_find(&m, "alpha", 5) && kl_hashmap_count(&m) == 1);
  CHECK(!kl_strmap_remove(&m, "alpha", 5));
  kl_hashmap_free(&m);
  CHECK(m.strkeys && !m.cap && !kl_strmap_find(&m, "", 0), "free leaves an empty string map");
  group_end("string keys");
}

static void test_pointers(void) {
  group_begin();
  kl_hashmap m = { 0 }; /* zeroed: a pointer map */
  static int objs[5000];
  for (int i = 0; i < 5000; i++) kl_ptrmap_put(&m, &objs[i], (void *)(intptr_t)(i + 1));
  CHECK(kl_hashmap_count(&m) == 5000 && m.cap >= 10000, "grows to stay at most half full (cap %zu)", m.cap);
  int bad = 0;
  for (int i = 0; i < 5000; i++) {
    kl_hm_entry *e = kl_ptrmap_find(&m, &objs[i]);
    bad += !e || e->val != (void *)(intptr_t)(i + 1);
  }
  CHECK(bad == 0, "%d lookups wrong", bad);
  for (int i = 0; i < 5000; i += 2) CHECK(kl_ptrmap_remove(&m, &objs[i]));
  bad = 0;
  for (int i = 0; i < 5000; i++) bad += (kl_ptrmap_find(&m, &objs[i]) != NULL) != (i % 2 == 1);
  CHECK(bad == 0 && kl_hashmap_count(&m) == 2500, "%d wrong after removals", bad);
  size_t live = 0;
  for (size_t i = 0; i < m.cap; i++) live += kl_hashmap_live(&m.slots[i]);
  CHECK(live == 2500, "iteration sees %zu live entries", live);
  CHECK(!kl_ptrmap_put(&m, NULL, NULL) && !kl_ptrmap_find(&m, NULL), "NULL is not a key");
  kl_hashmap_free(&m);
  group_end("pointer keys");
}

/* Random puts and removes over a small key space (many tombstones, reuse of removed
 * slots, same-size rehashes) agree with a plain array. */
static void test_random(void) {
  group_begin();
  enum { K = 300 };
  static char names[K][8];
  void *ref[K] = { 0 };
  kl_hashmap m = KL_STRMAP_INIT;
  uint64_t st = 12345;
  for (int i = 0; i < K; i++) snprintf(names[i], sizeof names[i], "k%d", i);
  int bad = 0;
  for (int step = 0; step < 200000; step++) {
    int k = (int)(xorshift64(&st) % K);
    if (xorshift64(&st) % 3) {
      ref[k] = (void *)(intptr_t)(step + 1);
      kl_strmap_put(&m, names[k], strlen(names[k]), ref[k]);
    } else {
      bad += kl_strmap_remove(&m, names[k], strlen(names[k])) != (ref[k] != NULL);
      ref[k] = NULL;
    }
  }
  size_t n = 0;
  for (int k = 0; k < K; k++) {
    kl_hm_entry *e = kl_strmap_find(&m, names[k], strlen(names[k]));
    bad += ref[k] ? !e || e->val != ref[k] : e != NULL;
    n += ref[k] != NULL;
  }
  CHECK(bad == 0 && kl_hashmap_count(&m) == n && m.cap <= 4 * 1024, "%d mismatches, cap %zu", bad, m.cap);
  kl_hashmap_free(&m);
  group_end("random against a reference");
}

int main(void) {
  test_strings();
  test_pointers();
  test_random();
  return check_summary("test_hashmap");
}

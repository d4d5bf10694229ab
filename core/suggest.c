/* suggest.c — the closest valid name to a misspelled one (suggest.h). */
#include "core/suggest.h"
#include <string.h>

int kl_edit_distance(const char *a, size_t na, const char *b) {
  size_t nb = strlen(b);
  if (na > 64 || nb > 64) return 1000;
  int row[65];
  for (size_t j = 0; j <= nb; j++) row[j] = (int)j;
  for (size_t i = 1; i <= na; i++) {
    int prev = row[0];
    row[0] = (int)i;
    for (size_t j = 1; j <= nb; j++) {
      int cur = row[j];
      int best = prev + (a[i - 1] != b[j - 1]);
      if (row[j] + 1 < best) best = row[j] + 1;
      if (row[j - 1] + 1 < best) best = row[j - 1] + 1;
      row[j] = best;
      prev = cur;
    }
  }
  return row[nb];
}

const char *kl_suggest_name(const char *name, size_t len, const char *const *names, int n) {
  const char *best = NULL;
  int bd = 1000;
  for (int i = 0; i < n; i++) {
    if (!names[i]) continue;
    int d = kl_edit_distance(name, len, names[i]);
    if (d < bd) {
      bd = d;
      best = names[i];
    }
  }
  return (best && bd <= 2 && (size_t)bd < len) ? best : NULL;
}

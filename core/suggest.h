/* suggest.h — "did you mean": the closest of a set of valid names to a misspelled one.
 * Contract: kl_edit_distance is the Levenshtein distance of a[0..na) and the string b
 * (1000 when either is longer than 64 bytes). kl_suggest_name returns the entry of
 * names (n entries, NULL entries skipped) nearest to name[0..len), or NULL when the
 * nearest is more than 2 edits away or not nearer than the name is long (so "x" does
 * not suggest "y"). Both are pure; they allocate nothing. */
#ifndef KL_CORE_SUGGEST_H
#define KL_CORE_SUGGEST_H
#include <stddef.h>

int kl_edit_distance(const char *a, size_t na, const char *b);
const char *kl_suggest_name(const char *name, size_t len, const char *const *names, int n);

#endif

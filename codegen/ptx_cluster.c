/* ptx_cluster.c — .reqnctapercluster for clustered kernels (contract in ptx_cluster.h). */
#include "codegen/ptx_cluster.h"
#include "core/arena.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* inserts `ins` at offset at of *ptx (length *n) */
static void insert_at(char **ptx, size_t *n, size_t at, const char *ins) {
  size_t k = strlen(ins);
  char *o = kl_xmalloc(*n + k + 1);
  memcpy(o, *ptx, at);
  memcpy(o + at, ins, k);
  memcpy(o + at + k, *ptx + at, *n - at);
  o[*n + k] = '\0';
  free(*ptx);
  *ptx = o;
  *n += k;
}

bool kl_ptx_add_cluster_dims(LLVMModuleRef m, char **ptx, size_t *n) {
  bool ok = true;
  for (LLVMValueRef f = LLVMGetFirstFunction(m); f; f = LLVMGetNextFunction(f)) {
    LLVMAttributeRef a = LLVMGetStringAttributeAtIndex(f, LLVMAttributeFunctionIndex, "kiln-cluster", 12);
    if (!a) continue;
    unsigned vl = 0;
    const char *v = LLVMGetStringAttributeValue(a, &vl);
    int c = atoi(v);
    size_t nl = 0;
    const char *name = LLVMGetValueName2(f, &nl);
    char pat[512];
    snprintf(pat, sizeof pat, ".entry %.*s(", (int)nl, name);
    char *e = strstr(*ptx, pat);
    char *body = e ? strchr(e, '{') : NULL;
    if (c < 2 || !body) {
      ok = false;
      continue;
    }
    char *mx = strstr(e, ".maxntid");
    size_t at = (size_t)(body - *ptx);
    if (mx && mx < body) at = (size_t)(strchr(mx, '\n') - *ptx) + 1;
    char ins[64];
    snprintf(ins, sizeof ins, ".reqnctapercluster %d, 1, 1\n", c);
    insert_at(ptx, n, at, ins);
  }
  return ok;
}

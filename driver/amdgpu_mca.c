/* amdgpu_mca.c — llvm-mca on an AMDGPU kernel's main loop (amdgpu_mca.h). */
#define _POSIX_C_SOURCE 200809L
#include "driver/amdgpu_mca.h"
#include "driver/amdgpu_stats.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* dir/name of the first executable `name` on PATH into out; 0 when none */
static int on_path(const char *name, char *out, size_t n) {
  const char *path = getenv("PATH");
  if (!path) return 0;
  for (const char *p = path; *p;) {
    const char *e = strchr(p, ':');
    size_t len = e ? (size_t)(e - p) : strlen(p);
    if (len && (size_t)snprintf(out, n, "%.*s/%s", (int)len, p, name) < n && !strchr(out, '\'') &&
        access(out, X_OK) == 0)
      return 1;
    p += len + (e ? 1 : 0);
  }
  return 0;
}

int kl_amdgpu_mca_loop(const char *asm_text, const char *target, double *cycles, char *why, size_t whylen) {
  char tool[1024];
  if (!on_path("llvm-mca-19", tool, sizeof tool) && !on_path("llvm-mca", tool, sizeof tool)) {
    snprintf(why, whylen, "llvm-mca-19 / llvm-mca not found on PATH");
    return 0;
  }
  for (const char *c = target; c && *c; c++)
    if (!((*c >= 'a' && *c <= 'z') || (*c >= '0' && *c <= '9'))) target = NULL;
  if (!target || strncmp(target, "gfx", 3)) {
    snprintf(why, whylen, "not an AMDGPU target name");
    return 0;
  }
  char *loop = kl_amdgpu_main_loop_text(asm_text);
  if (!loop) {
    snprintf(why, whylen, "no loop");
    return 0;
  }
  const char *tmp = getenv("TMPDIR");
  char file[1024];
  snprintf(file, sizeof file, "%s/kiln-mca-XXXXXX", tmp && *tmp && !strchr(tmp, '\'') ? tmp : "/tmp");
  int fd = mkstemp(file);
  FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL;
  if (!f) {
    if (fd >= 0) close(fd), unlink(file);
    free(loop);
    snprintf(why, whylen, "cannot write a temporary file");
    return 0;
  }
  fputs(loop, f);
  free(loop);
  fclose(f);
  char cmd[3200];
  snprintf(cmd, sizeof cmd, "'%s' -mtriple=amdgcn-amd-amdhsa -mcpu=%s -iterations=100 '%s' 2>/dev/null", tool, target,
           file);
  FILE *p = popen(cmd, "r");
  double iters = 0, total = 0;
  char line[512];
  while (p && fgets(line, sizeof line, p)) {
    if (!strncmp(line, "Iterations:", 11)) iters = atof(line + 11);
    if (!strncmp(line, "Total Cycles:", 13)) total = atof(line + 13);
  }
  int rc = p ? pclose(p) : -1;
  unlink(file);
  if (rc != 0 || iters <= 0 || total <= 0) {
    snprintf(why, whylen, "%s failed (exit %d) or printed no cycles", tool, rc);
    return 0;
  }
  *cycles = total / iters;
  return 1;
}

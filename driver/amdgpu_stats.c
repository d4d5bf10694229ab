/* amdgpu_stats.c — registers, occupancy and the main loop's instruction mix of an AMDGPU
 * kernel, from its code object (see amdgpu_stats.h for the limits used). */
#include "driver/amdgpu_stats.h"
#include "codegen/disasm.h"
#include "codegen/hsaco.h"
#include "core/target.h"
#include "core/arena.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
  int total_vgprs, vgpr_granule, max_waves;
  int sgprs_per_simd, sgpr_granule; /* 0: SGPRs do not limit */
  int lds_pool, simds_per_pool;
} limits;

static int limits_of(const char *target, limits *l) {
  if (!strcmp(target, "gfx90a") || !strcmp(target, "gfx942") || !strcmp(target, "gfx940") ||
      !strcmp(target, "gfx941")) {
    *l = (limits){ 512, 8, 8, 800, 16, 65536, 4 };
    return 1;
  }
  if (!strcmp(target, "gfx908")) {
    *l = (limits){ 256, 4, 10, 800, 16, 65536, 4 };
    return 1;
  }
  if (!strcmp(target, "gfx1100") || !strcmp(target, "gfx1101") || !strcmp(target, "gfx1151")) {
    *l = (limits){ 1536, 24, 16, 0, 0, 131072, 4 };
    return 1;
  }
  if (!strncmp(target, "gfx10", 5) || !strncmp(target, "gfx11", 5)) {
    *l = (limits){ 1024, 8, 16, 0, 0, 131072, 4 };
    return 1;
  }
  if (!strncmp(target, "gfx9", 4)) {
    *l = (limits){ 256, 4, 10, 800, 16, 65536, 4 };
    return 1;
  }
  return 0;
}

static int64_t align_up(int64_t v, int64_t a) { return (v + a - 1) / a * a; }
static int imin(int a, int b) { return a < b ? a : b; }

static int starts(const char *s, const char *p) { return !strncmp(s, p, strlen(p)); }

/* One line: its mnemonic into m (empty when none), the label it defines / the branch
 * target it names (".L<hex>") into lab / to. */
static void scan_line(const char *l, size_t n, char *m, size_t mn, char *lab, char *to) {
  m[0] = lab[0] = to[0] = 0;
  size_t i = 0;
  while (i < n && (l[i] == ' ' || l[i] == '\t')) i++;
  if (i < n && l[i] == '.' && n > 0 && l[n - 1] == ':') {
    size_t k = n - 1 - i;
    if (k < 63) {
      memcpy(lab, l + i, k);
      lab[k] = 0;
    }
    return;
  }
  size_t k = 0;
  while (i < n && k + 1 < mn && (l[i] == '_' || (l[i] >= 'a' && l[i] <= 'z') || (l[i] >= '0' && l[i] <= '9')))
    m[k++] = l[i++];
  m[k] = 0;
  const char *sc = NULL;
  for (size_t j = 0; j + 2 < n; j++)
    if (l[j] == ';') sc = l + j;
  if (sc) {
    const char *p = sc + 1;
    while (*p == ' ') p++;
    size_t r = (size_t)(l + n - p);
    if (r > 2 && p[0] == '.' && p[1] == 'L' && r < 63) {
      memcpy(to, p, r);
      to[r] = 0;
      while (r && (to[r - 1] == ' ')) to[--r] = 0;
    }
  }
}

typedef struct {
  const char *start; /* line start */
  size_t len;
} line;

static void count(kl_amdgpu_loop_mix *x, const char *m) {
  x->instrs++;
  if (starts(m, "v_mfma"))
    x->mfma++;
  else if (starts(m, "v_wmma"))
    x->wmma++;
  else if (starts(m, "global_load") || starts(m, "buffer_load"))
    x->gload++;
  else if (starts(m, "global_store") || starts(m, "buffer_store"))
    x->gstore++;
  else if (starts(m, "ds_read") || starts(m, "ds_load") || starts(m, "ds_bpermute") || starts(m, "ds_swizzle"))
    x->ds_read++;
  else if (starts(m, "ds_write") || starts(m, "ds_store")) {
    x->ds_write++;
    if (!strcmp(m, "ds_write_b8") || !strcmp(m, "ds_write_b16") || !strcmp(m, "ds_store_b8") ||
        !strcmp(m, "ds_store_b16") || !strcmp(m, "ds_write_b8_d16_hi") || !strcmp(m, "ds_write_b16_d16_hi") ||
        !strcmp(m, "ds_store_b8_d16_hi") || !strcmp(m, "ds_store_b16_d16_hi"))
      x->ds_narrow++;
  } else if (starts(m, "s_waitcnt"))
    x->waitcnt++;
  else if (!strcmp(m, "s_barrier"))
    x->barrier++;
  else if (starts(m, "v_fma") || starts(m, "v_dot2") || starts(m, "v_pk_fma"))
    x->valu_fma++;
}

/* The main loop of text: its mix and (when range is non-NULL) its first and last line
 * numbers; best.found = 0 without one. */
static kl_amdgpu_loop_mix main_loop(const char *text, int range[2]) {
  kl_amdgpu_loop_mix best = { 0 };
  if (!text) return best;
  int n = 0, cap = 256;
  line *ls = kl_xmalloc(sizeof *ls * (size_t)cap);
  for (const char *s = text; *s;) {
    const char *e = strchr(s, '\n');
    size_t len = e ? (size_t)(e - s) : strlen(s);
    if (n == cap) ls = kl_xrealloc(ls, sizeof *ls * (size_t)(cap *= 2));
    ls[n++] = (line){ s, len };
    s += len + (e ? 1 : 0);
  }
  /* loops: a branch to a label defined above it */
  int nl = 0, lcap = 16;
  int(*loops)[2] = kl_xmalloc(sizeof *loops * (size_t)lcap);
  char m[64], lab[64], to[64];
  for (int i = 0; i < n; i++) {
    scan_line(ls[i].start, ls[i].len, m, sizeof m, lab, to);
    if (!to[0]) continue;
    for (int j = i - 1; j >= 0; j--) {
      char m2[64], lab2[64], to2[64];
      scan_line(ls[j].start, ls[j].len, m2, sizeof m2, lab2, to2);
      if (lab2[0] && !strcmp(lab2, to)) {
        if (nl == lcap) loops = kl_xrealloc(loops, sizeof *loops * (size_t)(lcap *= 2));
        loops[nl][0] = j;
        loops[nl][1] = i;
        nl++;
        break;
      }
    }
  }
  for (int a = 0; a < nl; a++) {
    int inner = 1;
    for (int b = 0; b < nl && inner; b++)
      if (b != a && loops[b][0] >= loops[a][0] && loops[b][1] <= loops[a][1] &&
          (loops[b][0] != loops[a][0] || loops[b][1] != loops[a][1]))
        inner = 0;
    if (!inner) continue;
    kl_amdgpu_loop_mix x = { 0 };
    x.found = 1;
    for (int i = loops[a][0]; i <= loops[a][1]; i++) {
      scan_line(ls[i].start, ls[i].len, m, sizeof m, lab, to);
      if (m[0]) count(&x, m);
    }
    int xm = x.mfma + x.wmma, bm = best.mfma + best.wmma;
    if (!best.found || xm > bm || (xm == bm && x.instrs > best.instrs)) {
      best = x;
      if (range) range[0] = loops[a][0], range[1] = loops[a][1];
    }
  }
  free(loops);
  free(ls);
  return best;
}

kl_amdgpu_loop_mix kl_amdgpu_loop_mix_of(const char *text) { return main_loop(text, NULL); }

char *kl_amdgpu_main_loop_text(const char *text) {
  int range[2] = { 0, -1 };
  if (!main_loop(text, range).found) return NULL;
  kl_sb sb = { 0 };
  int i = 0;
  for (const char *s = text; *s && i <= range[1]; i++) {
    const char *e = strchr(s, '\n');
    size_t len = e ? (size_t)(e - s) : strlen(s);
    if (i >= range[0]) {
      size_t k = 0;
      while (k < len && s[k] != ';') k++;
      while (k && (s[k - 1] == ' ' || s[k - 1] == '\t')) k--;
      size_t b = 0;
      while (b < k && (s[b] == ' ' || s[b] == '\t')) b++;
      if (k > b && s[k - 1] != ':') kl_sb_printf(&sb, "\t%.*s\n", (int)(k - b), s + b);
    }
    s += len + (e ? 1 : 0);
  }
  return kl_sb_take(&sb);
}

kl_status kl_amdgpu_stats_read(const void *hsaco, size_t size, const char *kernel, const char *target, int64_t block,
                               kl_amdgpu_stats *out, char *err, size_t errlen) {
  memset(out, 0, sizeof *out);
  limits L;
  if (!target || !limits_of(target, &L)) {
    snprintf(err, errlen, "target '%s' is not an AMDGPU target with known limits", target ? target : "(none)");
    return KL_ERR;
  }
  kl_hsaco_info info;
  if (kl_hsaco_parse(hsaco, size, &info, err, errlen) != KL_OK) return KL_ERR;
  const kl_hsaco_kernel *k = kl_hsaco_find_kernel(&info, kernel);
  if (!k) {
    snprintf(err, errlen, "kernel '%s' not found in the code object", kernel);
    kl_hsaco_info_free(&info);
    return KL_ERR;
  }
  out->vgpr = k->vgpr_count < 0 ? 0 : k->vgpr_count;
  out->agpr = k->agpr_count < 0 ? 0 : k->agpr_count;
  out->sgpr = k->sgpr_count < 0 ? 0 : k->sgpr_count;
  out->lds = k->lds_bytes < 0 ? 0 : k->lds_bytes;
  out->scratch = k->scratch_bytes < 0 ? 0 : k->scratch_bytes;
  out->vgpr_spills = k->vgpr_spill_count < 0 ? 0 : k->vgpr_spill_count;
  out->sgpr_spills = k->sgpr_spill_count < 0 ? 0 : k->sgpr_spill_count;
  out->wave_size = k->wavefront_size > 0 ? (int)k->wavefront_size : 64;
  kl_hsaco_info_free(&info);

  /* VGPRs: on gfx90a/gfx942 .vgpr_count is already the unified arch + acc total */
  int64_t v = align_up(out->vgpr > 0 ? out->vgpr : 1, L.vgpr_granule);
  out->occ_max = L.max_waves;
  out->occ_vgpr = imin(L.max_waves, (int)(L.total_vgprs / v));
  out->occ_sgpr = L.max_waves;
  if (L.sgprs_per_simd) {
    int64_t s = align_up(out->sgpr > 0 ? out->sgpr : 1, L.sgpr_granule);
    out->occ_sgpr = imin(L.max_waves, (int)(L.sgprs_per_simd / s));
  }
  int64_t wpg = block > 0 ? (block + out->wave_size - 1) / out->wave_size : 1;
  out->occ_lds = L.max_waves;
  if (out->lds > 0) {
    int64_t wgs = L.lds_pool / out->lds;
    int64_t w = (wgs * wpg + L.simds_per_pool - 1) / L.simds_per_pool; /* the fullest SIMD */
    out->occ_lds = w < L.max_waves ? (int)w : L.max_waves;
  }
  out->occupancy = out->occ_max;
  out->limited = "waves";
  if (out->occ_vgpr < out->occupancy) out->occupancy = out->occ_vgpr, out->limited = "vgpr";
  if (out->occ_sgpr < out->occupancy) out->occupancy = out->occ_sgpr, out->limited = "sgpr";
  if (out->occ_lds < out->occupancy) out->occupancy = out->occ_lds, out->limited = "lds";

  char *text = kl_disasm_hsaco(hsaco, size, target, err, errlen);
  if (!text) return KL_ERR;
  out->loop = kl_amdgpu_loop_mix_of(text);
  free(text);
  return KL_OK;
}

char *kl_amdgpu_stats_line(const kl_amdgpu_stats *s) {
  kl_sb sb = { 0 };
  kl_sb_printf(&sb, "vgpr=%lld agpr=%lld sgpr=%lld lds=%lld scratch=%lld spills=%lld/%lld occupancy=%d (%s)",
               (long long)s->vgpr, (long long)s->agpr, (long long)s->sgpr, (long long)s->lds, (long long)s->scratch,
               (long long)s->vgpr_spills, (long long)s->sgpr_spills, s->occupancy, s->limited);
  const kl_amdgpu_loop_mix *x = &s->loop;
  if (x->found)
    kl_sb_printf(&sb,
                 " loop: instrs=%d mfma=%d wmma=%d global_load=%d global_store=%d ds_read=%d ds_write=%d "
                 "ds_write_narrow=%d s_waitcnt=%d s_barrier=%d valu_fma=%d",
                 x->instrs, x->mfma, x->wmma, x->gload, x->gstore, x->ds_read, x->ds_write, x->ds_narrow, x->waitcnt,
                 x->barrier, x->valu_fma);
  else
    kl_sb_printf(&sb, " loop: none");
  return kl_sb_take(&sb);
}

/* bundle_repair.h — for the bundle fuzz targets (header-only, static, plain C).
 * Contract: fuzz_bundle_repair(data, size, &n) returns a malloc'd copy of a would-be
 * bundle with its framing made consistent (driver/bundle.h, this format): magic, its version,
 * header size 48, flags 0; the section count cut to what fits; each section's reserved
 * field 0, its offset the next multiple of 8, its size cut to the bytes left, padding
 * zero, its checksum recomputed; the copy ends after the last section; file size, table
 * and header checksums recomputed. The section contents (meta, plan, IR, binaries,
 * constants) are left as they are, so mutations reach the decoder behind the checksums.
 * NULL when size < 48 (nothing to repair). Uses kl_bundle_fnv1a64 (kiln_client.h).
 * fuzz_bundle_input(check, data, size): both targets' LLVMFuzzerTestOneInput body: check
 * the bytes as they come, then their repaired copy (if any); returns 0. */
#ifndef KL_FUZZ_BUNDLE_REPAIR_H
#define KL_FUZZ_BUNDLE_REPAIR_H
#include "client/kiln_client.h"
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static uint32_t fr_u32(const unsigned char *p) {
  return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}
static uint64_t fr_u64(const unsigned char *p) { return (uint64_t)fr_u32(p) | (uint64_t)fr_u32(p + 4) << 32; }
static void fr_put32(unsigned char *p, uint32_t v) {
  for (int i = 0; i < 4; i++) p[i] = (unsigned char)(v >> (8 * i));
}
static void fr_put64(unsigned char *p, uint64_t v) {
  fr_put32(p, (uint32_t)v);
  fr_put32(p + 4, (uint32_t)(v >> 32));
}

static unsigned char *fuzz_bundle_repair(const uint8_t *data, size_t size, size_t *out_size) {
  if (size < 48) return NULL;
  unsigned char *d = malloc(size);
  memcpy(d, data, size);
  memcpy(d, "KILNBNDL", 8);
  fr_put32(d + 8, KL_BUNDLE_FORMAT_VERSION);
  fr_put32(d + 12, 48);
  fr_put32(d + 20, 0);
  uint32_t nsec = fr_u32(d + 16);
  if (nsec > (size - 48) / 40) nsec = (uint32_t)((size - 48) / 40);
  fr_put32(d + 16, nsec);
  size_t pos = 48 + (size_t)nsec * 40;
  for (uint32_t i = 0; i < nsec; i++) {
    unsigned char *e = d + 48 + (size_t)i * 40;
    size_t start = (pos + 7) & ~(size_t)7;
    if (start > size) start = size;
    memset(d + pos, 0, start - pos);
    uint64_t n = fr_u64(e + 24);
    if (n > size - start) n = size - start;
    fr_put32(e + 12, 0);
    fr_put64(e + 16, start);
    fr_put64(e + 24, n);
    fr_put64(e + 32, kl_bundle_fnv1a64(d + start, (size_t)n));
    pos = start + (size_t)n;
  }
  fr_put64(d + 24, pos);
  fr_put64(d + 32, kl_bundle_fnv1a64(d + 48, (size_t)nsec * 40));
  fr_put64(d + 40, kl_bundle_fnv1a64(d, 40));
  *out_size = pos;
  return d;
}

static int fuzz_bundle_input(void (*check)(const void *data, size_t size), const uint8_t *data, size_t size) {
  check(data, size);
  size_t n = 0;
  unsigned char *fixed = fuzz_bundle_repair(data, size, &n);
  if (fixed) {
    check(fixed, n);
    free(fixed);
  }
  return 0;
}
#endif

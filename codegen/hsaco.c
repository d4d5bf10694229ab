/* hsaco.c — AMDGPU code object reader: ELF64 headers, symbols, kernel descriptors and
 * the msgpack metadata note. See hsaco.h for the contract. */
#include "codegen/hsaco.h"
#include "core/diag.h"

#include <elf.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/arena.h"

#ifndef EM_AMDGPU
#define EM_AMDGPU 224
#endif
#define KL_NT_AMDGPU_METADATA 32

/* ---- chip table (EF_AMDGPU_MACH values from llvm/BinaryFormat/ELF.h) ---- */

static const struct {
  uint32_t mach;
  const char *chip;
} kl_amdgpu_machs[] = {
  { 0x02c, "gfx900" },  { 0x02d, "gfx902" },  { 0x02e, "gfx904" },  { 0x02f, "gfx906" },  { 0x030, "gfx908" },
  { 0x031, "gfx909" },  { 0x032, "gfx90c" },  { 0x033, "gfx1010" }, { 0x034, "gfx1011" }, { 0x035, "gfx1012" },
  { 0x036, "gfx1030" }, { 0x037, "gfx1031" }, { 0x038, "gfx1032" }, { 0x039, "gfx1033" }, { 0x03d, "gfx1035" },
  { 0x03e, "gfx1034" }, { 0x03f, "gfx90a" },  { 0x040, "gfx940" },  { 0x041, "gfx1100" }, { 0x042, "gfx1013" },
  { 0x043, "gfx1150" }, { 0x044, "gfx1103" }, { 0x045, "gfx1036" }, { 0x046, "gfx1101" }, { 0x047, "gfx1102" },
  { 0x048, "gfx1200" }, { 0x04a, "gfx1151" }, { 0x04b, "gfx941" },  { 0x04c, "gfx942" },  { 0x04e, "gfx1201" },
};

const char *kl_hsaco_chip_from_flags(uint32_t e_flags) {
  uint32_t mach = e_flags & 0xffu;
  for (size_t i = 0; i < sizeof kl_amdgpu_machs / sizeof kl_amdgpu_machs[0]; i++)
    if (kl_amdgpu_machs[i].mach == mach) return kl_amdgpu_machs[i].chip;
  return NULL;
}

/* ---- bounds-checked ELF access ---- */

typedef struct elf_view {
  const uint8_t *data;
  size_t size;
  Elf64_Ehdr eh;
  const uint8_t *sh; /* section header table (validated) */
} elf_view;

static bool in_range(size_t size, uint64_t off, uint64_t len) { return off <= size && len <= size - off; }

static bool get_shdr(const elf_view *e, unsigned i, Elf64_Shdr *out) {
  if (i >= e->eh.e_shnum) return false;
  memcpy(out, e->sh + (size_t)i * sizeof(Elf64_Shdr), sizeof *out);
  return true;
}

static kl_status elf_open(elf_view *e, const void *data, size_t size, char *err, size_t errlen) {
  memset(e, 0, sizeof *e);
  e->data = data;
  e->size = size;
  if (!data || size < sizeof(Elf64_Ehdr)) {
    kl_errf(err, errlen, "hsaco: %zu bytes is too short for an ELF header", size);
    return KL_ERR;
  }
  memcpy(&e->eh, data, sizeof e->eh);
  const unsigned char *id = e->eh.e_ident;
  if (memcmp(id, ELFMAG, SELFMAG) != 0) {
    kl_errf(err, errlen, "hsaco: not an ELF file (bad magic)");
    return KL_ERR;
  }
  if (id[EI_CLASS] != ELFCLASS64 || id[EI_DATA] != ELFDATA2LSB) {
    kl_errf(err, errlen, "hsaco: not a 64-bit little-endian ELF file");
    return KL_ERR;
  }
  if (e->eh.e_shnum) {
    if (e->eh.e_shentsize != sizeof(Elf64_Shdr) ||
        !in_range(size, e->eh.e_shoff, (uint64_t)e->eh.e_shnum * sizeof(Elf64_Shdr))) {
      kl_errf(err, errlen, "hsaco: section header table out of bounds (truncated file?)");
      return KL_ERR;
    }
    e->sh = e->data + e->eh.e_shoff;
  }
  return KL_OK;
}

/* Pointer to a section's bytes, or NULL if it lies outside the file. */
static const uint8_t *sec_data(const elf_view *e, const Elf64_Shdr *s) {
  if (s->sh_type == SHT_NOBITS || !in_range(e->size, s->sh_offset, s->sh_size)) return NULL;
  return e->data + s->sh_offset;
}

static const char *sec_name(const elf_view *e, const Elf64_Shdr *s) {
  Elf64_Shdr strs;
  if (!get_shdr(e, e->eh.e_shstrndx, &strs)) return NULL;
  const uint8_t *d = sec_data(e, &strs);
  if (!d || s->sh_name >= strs.sh_size) return NULL;
  const char *n = (const char *)d + s->sh_name;
  if (!memchr(n, 0, strs.sh_size - s->sh_name)) return NULL;
  return n;
}

/* File offset of virtual address a (an allocated section must contain [a, a+len)). */
static bool vaddr_to_off(const elf_view *e, uint64_t a, uint64_t len, uint64_t *off) {
  for (unsigned i = 0; i < e->eh.e_shnum; i++) {
    Elf64_Shdr s;
    get_shdr(e, i, &s);
    if (!(s.sh_flags & SHF_ALLOC) || s.sh_type == SHT_NOBITS) continue;
    if (a >= s.sh_addr && a - s.sh_addr <= s.sh_size && len <= s.sh_size - (a - s.sh_addr)) {
      uint64_t o = s.sh_offset + (a - s.sh_addr);
      if (!in_range(e->size, o, len)) return false;
      *off = o;
      return true;
    }
  }
  return false;
}

static kl_status walk_symbols(const elf_view *e, kl_hsaco_symbol_fn fn, void *user, char *err, size_t errlen) {
  for (unsigned i = 0; i < e->eh.e_shnum; i++) {
    Elf64_Shdr s, strs;
    get_shdr(e, i, &s);
    if (s.sh_type != SHT_SYMTAB && s.sh_type != SHT_DYNSYM) continue;
    const uint8_t *d = sec_data(e, &s);
    if (!d || !get_shdr(e, s.sh_link, &strs)) {
      kl_errf(err, errlen, "hsaco: symbol table out of bounds");
      return KL_ERR;
    }
    const uint8_t *sd = sec_data(e, &strs);
    if (!sd) {
      kl_errf(err, errlen, "hsaco: symbol string table out of bounds");
      return KL_ERR;
    }
    uint64_t n = s.sh_size / sizeof(Elf64_Sym);
    for (uint64_t k = 0; k < n; k++) {
      Elf64_Sym sym;
      memcpy(&sym, d + k * sizeof(Elf64_Sym), sizeof sym);
      if (sym.st_name == 0 || sym.st_name >= strs.sh_size) continue;
      const char *name = (const char *)sd + sym.st_name;
      if (!memchr(name, 0, strs.sh_size - sym.st_name)) continue;
      fn(user, name, sym.st_value, sym.st_size, ELF64_ST_TYPE(sym.st_info));
    }
  }
  return KL_OK;
}

kl_status kl_hsaco_symbols(const void *data, size_t size, kl_hsaco_symbol_fn fn, void *user, char *err, size_t errlen) {
  elf_view e;
  if (elf_open(&e, data, size, err, errlen) != KL_OK) return KL_ERR;
  return walk_symbols(&e, fn, user, err, errlen);
}

/* ---- notes ---- */

/* Finds the NT_AMDGPU_METADATA descriptor ("AMDGPU" owner). */
static bool scan_notes(const uint8_t *p, uint64_t n, const uint8_t **desc, uint32_t *desc_size) {
  uint64_t off = 0;
  while (n - off >= 12) {
    uint32_t namesz, descsz, type;
    memcpy(&namesz, p + off, 4);
    memcpy(&descsz, p + off + 4, 4);
    memcpy(&type, p + off + 8, 4);
    uint64_t name_off = off + 12;
    uint64_t desc_off = name_off + (((uint64_t)namesz + 3) & ~(uint64_t)3);
    uint64_t next = desc_off + (((uint64_t)descsz + 3) & ~(uint64_t)3);
    if (desc_off > n || descsz > n - desc_off) return false;
    if (type == KL_NT_AMDGPU_METADATA && namesz == 7 && memcmp(p + name_off, "AMDGPU", 7) == 0) {
      *desc = p + desc_off;
      *desc_size = descsz;
      return true;
    }
    if (next > n) return false;
    off = next;
  }
  return false;
}

static bool find_metadata(const elf_view *e, const uint8_t **desc, uint32_t *desc_size) {
  for (unsigned i = 0; i < e->eh.e_shnum; i++) {
    Elf64_Shdr s;
    get_shdr(e, i, &s);
    if (s.sh_type != SHT_NOTE) continue;
    const uint8_t *d = sec_data(e, &s);
    if (d && scan_notes(d, s.sh_size, desc, desc_size)) return true;
  }
  /* No section headers (or no note section): try PT_NOTE segments. */
  if (e->eh.e_phnum && e->eh.e_phentsize == sizeof(Elf64_Phdr) &&
      in_range(e->size, e->eh.e_phoff, (uint64_t)e->eh.e_phnum * sizeof(Elf64_Phdr))) {
    for (unsigned i = 0; i < e->eh.e_phnum; i++) {
      Elf64_Phdr ph;
      memcpy(&ph, e->data + e->eh.e_phoff + (size_t)i * sizeof ph, sizeof ph);
      if (ph.p_type != PT_NOTE || !in_range(e->size, ph.p_offset, ph.p_filesz)) continue;
      if (scan_notes(e->data + ph.p_offset, ph.p_filesz, desc, desc_size)) return true;
    }
  }
  return false;
}

/* ---- a small msgpack reader ---- */

typedef enum { MP_NIL, MP_BOOL, MP_INT, MP_FLOAT, MP_STR, MP_BIN, MP_ARRAY, MP_MAP, MP_EXT } mp_type;
typedef struct mp_rd {
  const uint8_t *p, *end;
} mp_rd;
typedef struct mp_val {
  mp_type t;
  bool b;
  int64_t i;     /* MP_INT (unsigned values above INT64_MAX are clamped) */
  double f;      /* MP_FLOAT */
  const char *s; /* MP_STR, MP_BIN, MP_EXT payload */
  uint32_t n;    /* payload length, or element count of MP_ARRAY / MP_MAP */
} mp_val;

#define MP_MAX_DEPTH 64

static bool mp_take(mp_rd *r, size_t n, const uint8_t **out) {
  if ((size_t)(r->end - r->p) < n) return false;
  *out = r->p;
  r->p += n;
  return true;
}

static bool mp_be(mp_rd *r, int bytes, uint64_t *v) {
  const uint8_t *b;
  if (!mp_take(r, (size_t)bytes, &b)) return false;
  uint64_t x = 0;
  for (int k = 0; k < bytes; k++) x = (x << 8) | b[k];
  *v = x;
  return true;
}

static bool mp_payload(mp_rd *r, mp_val *v, mp_type t, int len_bytes) {
  uint64_t n;
  if (!mp_be(r, len_bytes, &n)) return false;
  const uint8_t *b;
  if (!mp_take(r, (size_t)n, &b)) return false;
  v->t = t;
  v->s = (const char *)b;
  v->n = (uint32_t)n;
  return true;
}

/* Reads one value header (and the payload of strings / binaries / extensions). */
static bool mp_next(mp_rd *r, mp_val *v) {
  memset(v, 0, sizeof *v);
  const uint8_t *b;
  if (!mp_take(r, 1, &b)) return false;
  uint8_t c = *b;
  uint64_t x;
  if (c <= 0x7f) {
    v->t = MP_INT;
    v->i = c;
    return true;
  }
  if (c >= 0xe0) {
    v->t = MP_INT;
    v->i = (int8_t)c;
    return true;
  }
  if ((c & 0xf0) == 0x80) {
    v->t = MP_MAP;
    v->n = c & 0x0f;
    return true;
  }
  if ((c & 0xf0) == 0x90) {
    v->t = MP_ARRAY;
    v->n = c & 0x0f;
    return true;
  }
  if ((c & 0xe0) == 0xa0) {
    const uint8_t *s;
    if (!mp_take(r, c & 0x1f, &s)) return false;
    v->t = MP_STR;
    v->s = (const char *)s;
    v->n = c & 0x1f;
    return true;
  }
  switch (c) {
    case 0xc0: v->t = MP_NIL; return true;
    case 0xc2:
      v->t = MP_BOOL;
      v->b = false;
      return true;
    case 0xc3:
      v->t = MP_BOOL;
      v->b = true;
      return true;
    case 0xc4: return mp_payload(r, v, MP_BIN, 1);
    case 0xc5: return mp_payload(r, v, MP_BIN, 2);
    case 0xc6: return mp_payload(r, v, MP_BIN, 4);
    case 0xc7:
    case 0xc8:
    case 0xc9: { /* ext 8/16/32: length, type byte, data */
      int lb = c == 0xc7 ? 1 : c == 0xc8 ? 2 : 4;
      if (!mp_be(r, lb, &x)) return false;
      const uint8_t *t, *d;
      if (!mp_take(r, 1, &t) || !mp_take(r, (size_t)x, &d)) return false;
      v->t = MP_EXT;
      v->s = (const char *)d;
      v->n = (uint32_t)x;
      return true;
    }
    case 0xca: {
      if (!mp_be(r, 4, &x)) return false;
      uint32_t u = (uint32_t)x;
      float f;
      memcpy(&f, &u, 4);
      v->t = MP_FLOAT;
      v->f = f;
      return true;
    }
    case 0xcb: {
      if (!mp_be(r, 8, &x)) return false;
      double d;
      memcpy(&d, &x, 8);
      v->t = MP_FLOAT;
      v->f = d;
      return true;
    }
    case 0xcc:
    case 0xcd:
    case 0xce:
    case 0xcf: {
      int nb = 1 << (c - 0xcc);
      if (!mp_be(r, nb, &x)) return false;
      v->t = MP_INT;
      v->i = x > (uint64_t)INT64_MAX ? INT64_MAX : (int64_t)x;
      return true;
    }
    case 0xd0:
      if (!mp_be(r, 1, &x)) return false;
      v->t = MP_INT;
      v->i = (int8_t)x;
      return true;
    case 0xd1:
      if (!mp_be(r, 2, &x)) return false;
      v->t = MP_INT;
      v->i = (int16_t)x;
      return true;
    case 0xd2:
      if (!mp_be(r, 4, &x)) return false;
      v->t = MP_INT;
      v->i = (int32_t)x;
      return true;
    case 0xd3:
      if (!mp_be(r, 8, &x)) return false;
      v->t = MP_INT;
      v->i = (int64_t)x;
      return true;
    case 0xd4:
    case 0xd5:
    case 0xd6:
    case 0xd7:
    case 0xd8: { /* fixext 1..16 */
      size_t n = (size_t)1 << (c - 0xd4);
      const uint8_t *t, *d;
      if (!mp_take(r, 1, &t) || !mp_take(r, n, &d)) return false;
      v->t = MP_EXT;
      v->s = (const char *)d;
      v->n = (uint32_t)n;
      return true;
    }
    case 0xd9: return mp_payload(r, v, MP_STR, 1);
    case 0xda: return mp_payload(r, v, MP_STR, 2);
    case 0xdb: return mp_payload(r, v, MP_STR, 4);
    case 0xdc:
      if (!mp_be(r, 2, &x)) return false;
      v->t = MP_ARRAY;
      v->n = (uint32_t)x;
      return true;
    case 0xdd:
      if (!mp_be(r, 4, &x)) return false;
      v->t = MP_ARRAY;
      v->n = (uint32_t)x;
      return true;
    case 0xde:
      if (!mp_be(r, 2, &x)) return false;
      v->t = MP_MAP;
      v->n = (uint32_t)x;
      return true;
    case 0xdf:
      if (!mp_be(r, 4, &x)) return false;
      v->t = MP_MAP;
      v->n = (uint32_t)x;
      return true;
    default: return false; /* 0xc1 is never used */
  }
}

/* Skips the elements of a container whose header v was just read. */
static bool mp_skip_body(mp_rd *r, const mp_val *v, int depth);

static bool mp_skip(mp_rd *r, int depth) {
  mp_val v;
  if (!mp_next(r, &v)) return false;
  return mp_skip_body(r, &v, depth);
}

static bool mp_skip_body(mp_rd *r, const mp_val *v, int depth) {
  if (v->t != MP_ARRAY && v->t != MP_MAP) return true;
  if (depth >= MP_MAX_DEPTH) return false;
  uint64_t n = (uint64_t)v->n * (v->t == MP_MAP ? 2 : 1);
  for (uint64_t k = 0; k < n; k++)
    if (!mp_skip(r, depth + 1)) return false;
  return true;
}

static bool mp_key_is(const mp_val *k, const char *s) {
  size_t n = strlen(s);
  return k->t == MP_STR && k->n == n && memcmp(k->s, s, n) == 0;
}

static char *mp_strdup(const mp_val *v) {
  char *s = kl_xmalloc((size_t)v->n + 1);
  memcpy(s, v->s, v->n);
  s[v->n] = '\0';
  return s;
}

/* ---- metadata -> kernels ---- */

static void kernel_init(kl_hsaco_kernel *k) {
  memset(k, 0, sizeof *k);
  k->vgpr_count = k->sgpr_count = k->agpr_count = -1;
  k->lds_bytes = k->scratch_bytes = k->kernarg_size = k->kernarg_align = -1;
  k->max_flat_workgroup_size = k->wavefront_size = -1;
  k->vgpr_spill_count = k->sgpr_spill_count = k->uses_dynamic_stack = -1;
  k->nargs = -1;
  k->kd_group_segment_size = k->kd_private_segment_size = k->kd_kernarg_size = -1;
}

static bool parse_kernel(mp_rd *r, kl_hsaco_kernel *k) {
  mp_val m;
  if (!mp_next(r, &m) || m.t != MP_MAP) return false;
  static const struct {
    const char *key;
    size_t off;
  } ints[] = {
    { ".vgpr_count", offsetof(kl_hsaco_kernel, vgpr_count) },
    { ".sgpr_count", offsetof(kl_hsaco_kernel, sgpr_count) },
    { ".agpr_count", offsetof(kl_hsaco_kernel, agpr_count) },
    { ".group_segment_fixed_size", offsetof(kl_hsaco_kernel, lds_bytes) },
    { ".private_segment_fixed_size", offsetof(kl_hsaco_kernel, scratch_bytes) },
    { ".kernarg_segment_size", offsetof(kl_hsaco_kernel, kernarg_size) },
    { ".kernarg_segment_align", offsetof(kl_hsaco_kernel, kernarg_align) },
    { ".max_flat_workgroup_size", offsetof(kl_hsaco_kernel, max_flat_workgroup_size) },
    { ".wavefront_size", offsetof(kl_hsaco_kernel, wavefront_size) },
    { ".vgpr_spill_count", offsetof(kl_hsaco_kernel, vgpr_spill_count) },
    { ".sgpr_spill_count", offsetof(kl_hsaco_kernel, sgpr_spill_count) },
  };
  for (uint32_t e = 0; e < m.n; e++) {
    mp_val key, v;
    if (!mp_next(r, &key) || key.t != MP_STR) return false;
    if (!mp_next(r, &v)) return false;
    bool used = false;
    if (mp_key_is(&key, ".name") && v.t == MP_STR) {
      free(k->name);
      k->name = mp_strdup(&v);
      used = true;
    } else if (mp_key_is(&key, ".symbol") && v.t == MP_STR) {
      free(k->symbol);
      k->symbol = mp_strdup(&v);
      used = true;
    } else if (mp_key_is(&key, ".uses_dynamic_stack") && v.t == MP_BOOL) {
      k->uses_dynamic_stack = v.b;
      used = true;
    } else if (mp_key_is(&key, ".args") && v.t == MP_ARRAY) {
      k->nargs = (int)v.n;
    } else if (v.t == MP_INT) {
      for (size_t q = 0; q < sizeof ints / sizeof ints[0]; q++)
        if (mp_key_is(&key, ints[q].key)) {
          *(int64_t *)((char *)k + ints[q].off) = v.i;
          used = true;
        }
    }
    if (!used && !mp_skip_body(r, &v, 1)) return false;
  }
  return true;
}

static bool parse_metadata(const uint8_t *d, uint32_t n, kl_hsaco_info *info) {
  mp_rd r = { d, d + n };
  mp_val top;
  if (!mp_next(&r, &top) || top.t != MP_MAP) return false;
  for (uint32_t e = 0; e < top.n; e++) {
    mp_val key, v;
    if (!mp_next(&r, &key) || key.t != MP_STR) return false;
    if (!mp_next(&r, &v)) return false;
    if (mp_key_is(&key, "amdhsa.target") && v.t == MP_STR) {
      free(info->target);
      info->target = mp_strdup(&v);
    } else if (mp_key_is(&key, "amdhsa.version") && v.t == MP_ARRAY) {
      for (uint32_t q = 0; q < v.n; q++) {
        mp_val x;
        if (!mp_next(&r, &x)) return false;
        if (x.t == MP_INT && q == 0) info->version_major = (int)x.i;
        if (x.t == MP_INT && q == 1) info->version_minor = (int)x.i;
        if (!mp_skip_body(&r, &x, 1)) return false;
      }
    } else if (mp_key_is(&key, "amdhsa.kernels") && v.t == MP_ARRAY) {
      if (info->kernels) return false;                 /* duplicate key */
      if (v.n > (uint32_t)(r.end - r.p)) return false; /* each kernel needs >= 1 byte */
      info->kernels = kl_xcalloc(v.n ? v.n : 1, sizeof(kl_hsaco_kernel));
      for (uint32_t q = 0; q < v.n; q++) {
        kernel_init(&info->kernels[q]);
        info->nkernels = (int)q + 1;
        if (!parse_kernel(&r, &info->kernels[q])) return false;
        if (!info->kernels[q].name) return false;
      }
    } else if (!mp_skip_body(&r, &v, 1)) {
      return false;
    }
  }
  return true;
}

/* ---- symbols -> kernels ---- */

typedef struct sym_ctx {
  kl_hsaco_info *info;
} sym_ctx;

static void on_symbol(void *user, const char *name, uint64_t value, uint64_t size, int type) {
  kl_hsaco_info *info = ((sym_ctx *)user)->info;
  for (int i = 0; i < info->nkernels; i++) {
    kl_hsaco_kernel *k = &info->kernels[i];
    if (type == STT_FUNC && strcmp(name, k->name) == 0) k->has_function_symbol = true;
    if (type == STT_OBJECT && k->symbol && strcmp(name, k->symbol) == 0 && size == 64) {
      k->has_kd_symbol = true;
      k->kd_addr = value;
    }
  }
}

kl_status kl_hsaco_parse(const void *data, size_t size, kl_hsaco_info *out, char *err, size_t errlen) {
  memset(out, 0, sizeof *out);
  out->version_major = out->version_minor = -1;
  out->chip = "unknown";
  elf_view e;
  if (elf_open(&e, data, size, err, errlen) != KL_OK) return KL_ERR;
  out->elf_type = e.eh.e_type;
  out->machine = e.eh.e_machine;
  out->e_flags = e.eh.e_flags;
  if (e.eh.e_machine != EM_AMDGPU) {
    kl_errf(err, errlen, "hsaco: ELF machine is %u, not EM_AMDGPU (224)", e.eh.e_machine);
    return KL_ERR;
  }
  if (e.eh.e_type != ET_DYN) {
    kl_errf(err, errlen, "hsaco: ELF type is %u, not ET_DYN (a linked code object is a shared object)", e.eh.e_type);
    return KL_ERR;
  }
  const char *chip = kl_hsaco_chip_from_flags(e.eh.e_flags);
  if (chip) out->chip = chip;
  for (unsigned i = 0; i < e.eh.e_shnum; i++) {
    Elf64_Shdr s;
    get_shdr(&e, i, &s);
    const char *n = sec_name(&e, &s);
    if (n && strcmp(n, ".text") == 0) {
      if (!sec_data(&e, &s)) {
        kl_errf(err, errlen, "hsaco: .text section out of bounds (truncated file?)");
        return KL_ERR;
      }
      out->text_offset = s.sh_offset;
      out->text_size = s.sh_size;
      out->text_addr = s.sh_addr;
    }
  }
  const uint8_t *md;
  uint32_t mdn;
  if (!find_metadata(&e, &md, &mdn)) {
    kl_errf(err, errlen, "hsaco: no AMDGPU metadata note (NT_AMDGPU_METADATA)");
    return KL_ERR;
  }
  if (!parse_metadata(md, mdn, out)) {
    kl_errf(err, errlen, "hsaco: malformed AMDGPU metadata (msgpack)");
    kl_hsaco_info_free(out);
    return KL_ERR;
  }
  sym_ctx sc = { out };
  if (walk_symbols(&e, on_symbol, &sc, err, errlen) != KL_OK) {
    kl_hsaco_info_free(out);
    return KL_ERR;
  }
  for (int i = 0; i < out->nkernels; i++) {
    kl_hsaco_kernel *k = &out->kernels[i];
    uint64_t off;
    if (k->has_kd_symbol && vaddr_to_off(&e, k->kd_addr, 64, &off)) {
      uint32_t f[3];
      memcpy(f, e.data + off, sizeof f);
      k->kd_group_segment_size = f[0];
      k->kd_private_segment_size = f[1];
      k->kd_kernarg_size = f[2];
    }
  }
  return KL_OK;
}

void kl_hsaco_info_free(kl_hsaco_info *info) {
  if (!info) return;
  for (int i = 0; i < info->nkernels; i++) {
    free(info->kernels[i].name);
    free(info->kernels[i].symbol);
  }
  free(info->kernels);
  free(info->target);
  info->kernels = NULL;
  info->target = NULL;
  info->nkernels = 0;
}

const kl_hsaco_kernel *kl_hsaco_find_kernel(const kl_hsaco_info *info, const char *name) {
  for (int i = 0; i < info->nkernels; i++)
    if (strcmp(info->kernels[i].name, name) == 0) return &info->kernels[i];
  return NULL;
}

/* ---- metadata as text ---- */

static void put_quoted(kl_sb *sb, const char *s, uint32_t n) {
  kl_sb_putc(sb, '"');
  for (uint32_t i = 0; i < n; i++) {
    unsigned char c = (unsigned char)s[i];
    if (c == '"' || c == '\\') {
      kl_sb_putc(sb, '\\');
      kl_sb_putc(sb, (char)c);
    } else if (c < 0x20 || c >= 0x7f) {
      kl_sb_printf(sb, "\\u%04x", c);
    } else {
      kl_sb_putc(sb, (char)c);
    }
  }
  kl_sb_putc(sb, '"');
}

static bool dump_value(mp_rd *r, kl_sb *sb, int depth) {
  if (depth > MP_MAX_DEPTH) return false;
  mp_val v;
  if (!mp_next(r, &v)) return false;
  switch (v.t) {
    case MP_NIL: kl_sb_puts(sb, "null"); return true;
    case MP_BOOL: kl_sb_puts(sb, v.b ? "true" : "false"); return true;
    case MP_INT: kl_sb_printf(sb, "%lld", (long long)v.i); return true;
    case MP_FLOAT: kl_sb_printf(sb, "%.17g", v.f); return true;
    case MP_STR: put_quoted(sb, v.s, v.n); return true;
    case MP_BIN: kl_sb_printf(sb, "\"<%u bytes>\"", v.n); return true;
    case MP_EXT: kl_sb_printf(sb, "\"<ext %u bytes>\"", v.n); return true;
    case MP_ARRAY:
      kl_sb_putc(sb, '[');
      for (uint32_t i = 0; i < v.n; i++) {
        if (i) kl_sb_puts(sb, ", ");
        if (!dump_value(r, sb, depth + 1)) return false;
      }
      kl_sb_putc(sb, ']');
      return true;
    case MP_MAP:
      kl_sb_putc(sb, '{');
      for (uint32_t i = 0; i < v.n; i++) {
        if (i) kl_sb_puts(sb, ", ");
        if (!dump_value(r, sb, depth + 1)) return false;
        kl_sb_puts(sb, ": ");
        if (!dump_value(r, sb, depth + 1)) return false;
      }
      kl_sb_putc(sb, '}');
      return true;
  }
  return false;
}

char *kl_hsaco_metadata_text(const void *data, size_t size, char *err, size_t errlen) {
  elf_view e;
  if (elf_open(&e, data, size, err, errlen) != KL_OK) return NULL;
  const uint8_t *md;
  uint32_t mdn;
  if (!find_metadata(&e, &md, &mdn)) {
    kl_errf(err, errlen, "hsaco: no AMDGPU metadata note (NT_AMDGPU_METADATA)");
    return NULL;
  }
  mp_rd r = { md, md + mdn };
  kl_sb sb = { 0 };
  if (!dump_value(&r, &sb, 0)) {
    kl_sb_free(&sb);
    kl_errf(err, errlen, "hsaco: malformed AMDGPU metadata (msgpack)");
    return NULL;
  }
  return kl_sb_take(&sb);
}

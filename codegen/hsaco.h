/* hsaco.h — read an AMDGPU code object (HSACO, an ELF64 shared object).
 * Contract: kl_hsaco_parse checks the ELF header (64-bit little-endian, type ET_DYN,
 * machine EM_AMDGPU = 224), decodes the target chip from e_flags, finds the kernel
 * symbols and their kernel descriptors (".kd" symbols, whose first fields are read) and
 * parses the AMDGPU metadata note (NT_AMDGPU_METADATA = 32, msgpack) for every kernel.
 * The input bytes are only read, never kept. All strings and arrays in kl_hsaco_info
 * are malloc'd and released by kl_hsaco_info_free. Malformed or truncated input returns
 * KL_ERR with a message in err (never reads out of bounds, never aborts). Integer fields
 * that the metadata does not contain are -1. */
#ifndef KL_HSACO_H
#define KL_HSACO_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "core/context.h" /* kl_status */

typedef struct kl_hsaco_kernel {
  char *name;               /* ".name" */
  char *symbol;             /* ".symbol" (the descriptor symbol, "name.kd") */
  bool has_function_symbol; /* an STT_FUNC symbol named `name` exists */
  bool has_kd_symbol;       /* an STT_OBJECT symbol named `symbol` exists (64 bytes) */
  uint64_t kd_addr;         /* virtual address of the kernel descriptor */
  /* From the metadata (-1 when absent). */
  int64_t vgpr_count, sgpr_count, agpr_count;
  int64_t lds_bytes;     /* .group_segment_fixed_size */
  int64_t scratch_bytes; /* .private_segment_fixed_size */
  int64_t kernarg_size, kernarg_align;
  int64_t max_flat_workgroup_size, wavefront_size;
  int64_t vgpr_spill_count, sgpr_spill_count;
  int64_t uses_dynamic_stack; /* 0/1, -1 when absent */
  int nargs;                  /* entries of ".args" (-1 when absent) */
  /* From the kernel descriptor (-1 when there is no descriptor). */
  int64_t kd_group_segment_size, kd_private_segment_size, kd_kernarg_size;
} kl_hsaco_kernel;

typedef struct kl_hsaco_info {
  uint16_t elf_type, machine;
  uint32_t e_flags;
  const char *chip;                 /* from e_flags: "gfx942", …; "unknown" if not in kiln's table (static) */
  char *target;                     /* "amdhsa.target", e.g. "amdgcn-amd-amdhsa--gfx942" (NULL if absent) */
  int version_major, version_minor; /* "amdhsa.version" (-1 if absent) */
  int nkernels;
  kl_hsaco_kernel *kernels;
  uint64_t text_offset, text_size, text_addr; /* the .text section (0 if absent) */
} kl_hsaco_info;

kl_status kl_hsaco_parse(const void *data, size_t size, kl_hsaco_info *out, char *err, size_t errlen);
void kl_hsaco_info_free(kl_hsaco_info *info);
const kl_hsaco_kernel *kl_hsaco_find_kernel(const kl_hsaco_info *info, const char *name);
/* The chip name for an EF_AMDGPU_MACH value (e_flags & 0xff), or NULL. */
const char *kl_hsaco_chip_from_flags(uint32_t e_flags);

/* The metadata note as JSON-like text (maps {k: v}, arrays [..], strings quoted),
 * malloc'd; NULL with err set when there is no note or it is malformed. */
char *kl_hsaco_metadata_text(const void *data, size_t size, char *err, size_t errlen);

/* Symbols (name, value, size, ELF type) of .symtab and .dynsym, for the disassembler.
 * Calls fn for each named symbol; returns KL_ERR on malformed input. */
typedef void (*kl_hsaco_symbol_fn)(void *user, const char *name, uint64_t value, uint64_t size, int type);
kl_status kl_hsaco_symbols(const void *data, size_t size, kl_hsaco_symbol_fn fn, void *user, char *err, size_t errlen);
#endif

/* disasm.c — LLVM C API disassembly of raw code and of HSACO .text. See disasm.h. */
#include "codegen/disasm.h"
#include "core/diag.h"

#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <llvm-c/Disassembler.h>

#include "core/arena.h"
#include "codegen/codegen_target.h"
#include "codegen/hsaco.h"

typedef struct ds_label {
  uint64_t addr;
  char *name;
} ds_label;

static int label_cmp(const void *a, const void *b) {
  const ds_label *x = a, *y = b;
  if (x->addr != y->addr) return x->addr < y->addr ? -1 : 1;
  return strcmp(x->name, y->name);
}

/* AMDGPU direct branches (s_branch, s_cbranch_*): their simm16 operand counts words from
 * the next instruction; the target address, or false for any other instruction. */
static bool amdgpu_branch_target(const char *text, uint64_t addr, uint64_t *target) {
  if (strncmp(text, "s_branch", 8) && strncmp(text, "s_cbranch_", 10)) return false;
  const char *sp = strrchr(text, ' ');
  if (!sp) return false;
  char *end;
  long v = strtol(sp + 1, &end, 0);
  if (end == sp + 1 || *end || v < 0 || v > 0xffff) return false;
  *target = addr + 4 + (uint64_t)(int64_t)(int16_t)(uint16_t)v * 4;
  return true;
}

typedef struct {
  uint64_t *v;
  int n, cap;
} ds_addrs;
static void addrs_push(ds_addrs *a, uint64_t x) {
  for (int i = 0; i < a->n; i++)
    if (a->v[i] == x) return;
  if (a->n == a->cap) {
    a->cap = a->cap ? 2 * a->cap : 16;
    a->v = kl_xrealloc(a->v, (size_t)a->cap * sizeof *a->v);
  }
  a->v[a->n++] = x;
}
static bool addrs_has(const ds_addrs *a, uint64_t x) {
  for (int i = 0; i < a->n; i++)
    if (a->v[i] == x) return true;
  return false;
}

/* One pass over the code: with out == NULL it only collects the AMDGPU branch targets,
 * else it prints, a ".L<hex address>:" line before every collected target and
 * " ; .L<hex>" after each branch. */
static void disasm_pass(LLVMDisasmContextRef dc, bool amdgpu, const uint8_t *code, size_t size, uint64_t pc,
                        const ds_label *labels, int nlabels, ds_addrs *targets, kl_sb *out) {
  char line[512];
  size_t off = 0;
  int li = 0;
  while (off < size) {
    uint64_t addr = pc + off, to;
    if (out) {
      while (li < nlabels && labels[li].addr < addr) li++;
      while (li < nlabels && labels[li].addr == addr) kl_sb_printf(out, "%s:\n", labels[li++].name);
      if (addrs_has(targets, addr)) kl_sb_printf(out, ".L%llx:\n", (unsigned long long)addr);
    }
    line[0] = '\0';
    size_t n = LLVMDisasmInstruction(dc, (uint8_t *)code + off, size - off, addr, line, sizeof line);
    if (n == 0) {
      uint32_t w = 0;
      size_t k = size - off < 4 ? size - off : 4;
      memcpy(&w, code + off, k);
      if (out) kl_sb_printf(out, "\t.long 0x%08x ; invalid\n", w);
      off += k;
      continue;
    }
    const char *s = line;
    while (*s && isspace((unsigned char)*s)) s++;
    bool br = amdgpu && amdgpu_branch_target(s, addr, &to);
    if (!out) {
      if (br) addrs_push(targets, to);
    } else if (br)
      kl_sb_printf(out, "\t%s ; .L%llx\n", s, (unsigned long long)to);
    else
      kl_sb_printf(out, "\t%s\n", s);
    off += n;
  }
}

static char *disasm_range(const char *triple, const char *cpu, const char *features, const uint8_t *code, size_t size,
                          uint64_t pc, const ds_label *labels, int nlabels, char *err, size_t errlen) {
  kl_llvm_init_targets();
  LLVMDisasmContextRef dc = LLVMCreateDisasmCPUFeatures(triple, cpu ? cpu : "", features ? features : "", NULL, 0, NULL,
                                                        NULL);
  if (!dc) {
    kl_errf(err, errlen, "disasm: no LLVM disassembler for %s (cpu '%s')", triple, cpu ? cpu : "");
    return NULL;
  }
  bool amdgpu = !strncmp(triple, "amdgcn", 6);
  ds_addrs targets = { 0 };
  if (amdgpu) disasm_pass(dc, amdgpu, code, size, pc, labels, nlabels, &targets, NULL);
  kl_sb sb = { 0 };
  disasm_pass(dc, amdgpu, code, size, pc, labels, nlabels, &targets, &sb);
  free(targets.v);
  LLVMDisasmDispose(dc);
  return kl_sb_take(&sb);
}

char *kl_disasm_bytes(const char *triple, const char *cpu, const char *features, const void *code, size_t size,
                      uint64_t pc, char *err, size_t errlen) {
  if (!triple || (!code && size)) {
    kl_errf(err, errlen, "disasm: missing triple or code");
    return NULL;
  }
  return disasm_range(triple, cpu, features, code, size, pc, NULL, 0, err, errlen);
}

typedef struct ds_syms {
  uint64_t lo, hi;
  ds_label *v;
  int n, cap;
} ds_syms;

static void collect_symbol(void *user, const char *name, uint64_t value, uint64_t size, int type) {
  ds_syms *s = user;
  if (type != 2 /* STT_FUNC */ || value < s->lo || value >= s->hi) return;
  for (int i = 0; i < s->n; i++)
    if (s->v[i].addr == value && strcmp(s->v[i].name, name) == 0) return; /* .symtab and .dynsym */
  if (s->n == s->cap) {
    s->cap = s->cap ? 2 * s->cap : 16;
    s->v = kl_xrealloc(s->v, (size_t)s->cap * sizeof *s->v);
  }
  s->v[s->n].addr = value;
  s->v[s->n].name = kl_xstrdup(name);
  s->n++;
}

char *kl_disasm_hsaco(const void *hsaco, size_t size, const char *cpu, char *err, size_t errlen) {
  kl_hsaco_info info;
  if (kl_hsaco_parse(hsaco, size, &info, err, errlen) != KL_OK) return NULL;
  if (!cpu) {
    if (strcmp(info.chip, "unknown") == 0) {
      kl_errf(err, errlen, "disasm: unknown AMDGPU chip in ELF flags 0x%x; pass the cpu", (unsigned)info.e_flags);
      kl_hsaco_info_free(&info);
      return NULL;
    }
    cpu = info.chip;
  }
  if (info.text_size == 0) {
    kl_errf(err, errlen, "disasm: the code object has no .text section");
    kl_hsaco_info_free(&info);
    return NULL;
  }
  ds_syms syms = { info.text_addr, info.text_addr + info.text_size, NULL, 0, 0 };
  char *out = NULL;
  if (kl_hsaco_symbols(hsaco, size, collect_symbol, &syms, err, errlen) == KL_OK) {
    if (syms.n) qsort(syms.v, (size_t)syms.n, sizeof *syms.v, label_cmp);
    out = disasm_range("amdgcn-amd-amdhsa", cpu, "", (const uint8_t *)hsaco + info.text_offset, info.text_size,
                       info.text_addr, syms.v, syms.n, err, errlen);
  }
  for (int i = 0; i < syms.n; i++) free(syms.v[i].name);
  free(syms.v);
  kl_hsaco_info_free(&info);
  return out;
}

/* jit_host.c — ORC LLJIT (LLVM C API) for host kernels. See jit_host.h. */
#include "codegen/jit_host.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <llvm-c/Analysis.h>
#include <llvm-c/BitReader.h>
#include <llvm-c/BitWriter.h>
#include <llvm-c/Error.h>
#include <llvm-c/IRReader.h>
#include <llvm-c/LLJIT.h>
#include <llvm-c/Orc.h>
#include <llvm-c/TargetMachine.h>

#include "core/arena.h"
#include "codegen/codegen_target.h"

struct kl_jit_module {
  LLVMOrcJITDylibRef jd;
  LLVMOrcResourceTrackerRef rt;
  kl_jit_module *next;
};

struct kl_jit {
  pthread_mutex_t mu;
  LLVMOrcLLJITRef lljit;
  LLVMTargetMachineRef tm; /* for the IR pipeline (same CPU/features as the JIT's) */
  int opt_level;
  char *triple, *dl, *cpu;
  unsigned next_id;
  kl_jit_module *modules;
  char session_err[512]; /* last message from the execution session's error reporter */
  kl_llvm_diag diag;      /* LLVM error diagnostics of every module context (under mu) */
};

static void jt_err(char *err, size_t errlen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void jt_err(char *err, size_t errlen, const char *fmt, ...) {
  if (!err || errlen == 0) return;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(err, errlen, fmt, ap);
  va_end(ap);
}

/* Consumes e and formats "what: message". */
static void jt_llvm_err(char *err, size_t errlen, const char *what, LLVMErrorRef e) {
  char *msg = LLVMGetErrorMessage(e);
  jt_err(err, errlen, "%s: %s", what, msg);
  LLVMDisposeErrorMessage(msg);
}

static void session_error(void *ctx, LLVMErrorRef e) {
  kl_jit *jit = ctx;
  char *msg = LLVMGetErrorMessage(e);
  snprintf(jit->session_err, sizeof jit->session_err, "%s", msg);
  LLVMDisposeErrorMessage(msg);
}

/* ---- half / bfloat conversion helpers ----
 * LLVM lowers some f16 / bf16 conversions on x86-64 to compiler-rt / libgcc calls
 * (__truncsfhf2, __truncdfhf2, __extendhfsf2, __truncsfbf2, __truncdfbf2). A static
 * kiln binary, or an old libgcc, may not provide them, so every module's JITDylib gets
 * kiln's own definitions. The x86-64 ABI passes half and bfloat in XMM registers, as it
 * does _Float16, so these C functions are call-compatible (bits are moved with memcpy,
 * no _Float16 arithmetic is done). */
#if defined(__x86_64__) && defined(__FLT16_MAX__)
#define KL_HAVE_HALF_HELPERS 1

/* Rounds the magnitude (biased exponent `e` of the target format, mantissa `m` with
 * `extra` more bits than the target's `mbits`, implicit bit not included) to nearest
 * even. Handles overflow (inf) and the subnormal range. */
static uint32_t round_to_format(int32_t e, uint64_t m, int extra, int mbits, int emax, int srcbits) {
  if (e >= emax) return (uint32_t)emax << mbits; /* overflow -> inf */
  uint64_t q, rem, halfway;
  int shift;
  if (e <= 0) {
    /* subnormal: value = (1.m) * 2^(e-1-bias) -> q = (implicit|m) >> (extra + 1 - e) */
    m |= (uint64_t)1 << srcbits;
    shift = extra + 1 - e;
    if (shift > srcbits + 1) return 0;
    q = m >> shift;
    rem = m & (((uint64_t)1 << shift) - 1);
    halfway = (uint64_t)1 << (shift - 1);
    if (rem > halfway || (rem == halfway && (q & 1))) q++;
    return (uint32_t)q;
  }
  q = ((uint64_t)e << mbits) | (m >> extra);
  rem = m & (((uint64_t)1 << extra) - 1);
  halfway = (uint64_t)1 << (extra - 1);
  if (rem > halfway || (rem == halfway && (q & 1))) q++; /* a carry into the exponent is correct */
  return (uint32_t)q;
}

static uint16_t f32_to_f16_bits(float f) {
  uint32_t x;
  memcpy(&x, &f, 4);
  uint16_t sign = (uint16_t)((x >> 16) & 0x8000);
  uint32_t exp = (x >> 23) & 0xff, mant = x & 0x7fffff;
  if (exp == 0xff) return (uint16_t)(sign | 0x7c00 | (mant ? 0x200 | (mant >> 13) : 0));
  if (exp == 0) return sign; /* zero or float subnormal: far below half's range */
  return (uint16_t)(sign | round_to_format((int32_t)exp - 127 + 15, mant, 13, 10, 31, 23));
}

static uint16_t f64_to_f16_bits(double d) {
  uint64_t x;
  memcpy(&x, &d, 8);
  uint16_t sign = (uint16_t)((x >> 48) & 0x8000);
  uint32_t exp = (uint32_t)((x >> 52) & 0x7ff);
  uint64_t mant = x & 0xfffffffffffffULL;
  if (exp == 0x7ff) return (uint16_t)(sign | 0x7c00 | (mant ? 0x200 | (uint32_t)(mant >> 42) : 0));
  if (exp == 0) return sign;
  return (uint16_t)(sign | round_to_format((int32_t)exp - 1023 + 15, mant, 42, 10, 31, 52));
}

static uint16_t f32_to_bf16_bits(float f) {
  uint32_t x;
  memcpy(&x, &f, 4);
  if ((x & 0x7fffffff) > 0x7f800000) return (uint16_t)((x >> 16) | 0x40); /* quiet NaN */
  return (uint16_t)((x + 0x7fff + ((x >> 16) & 1)) >> 16);
}

static uint16_t f64_to_bf16_bits(double d) {
  uint64_t x;
  memcpy(&x, &d, 8);
  uint16_t sign = (uint16_t)((x >> 48) & 0x8000);
  uint32_t exp = (uint32_t)((x >> 52) & 0x7ff);
  uint64_t mant = x & 0xfffffffffffffULL;
  if (exp == 0x7ff) return (uint16_t)(sign | 0x7f80 | (mant ? 0x40 | (uint32_t)(mant >> 45) : 0));
  if (exp == 0) return sign;
  return (uint16_t)(sign | round_to_format((int32_t)exp - 1023 + 127, mant, 45, 7, 255, 52));
}

static float f16_bits_to_f32(uint16_t h) {
  uint32_t sign = (uint32_t)(h & 0x8000) << 16, exp = (h >> 10) & 0x1f, mant = h & 0x3ff, x;
  if (exp == 0x1f) {
    x = sign | 0x7f800000 | (mant << 13);
  } else if (exp == 0) {
    if (mant == 0) {
      x = sign;
    } else {
      int e = -14;
      while (!(mant & 0x400)) {
        mant <<= 1;
        e--;
      }
      x = sign | ((uint32_t)(e + 127) << 23) | ((mant & 0x3ff) << 13);
    }
  } else {
    x = sign | ((exp - 15 + 127) << 23) | (mant << 13);
  }
  float f;
  memcpy(&f, &x, 4);
  return f;
}

static _Float16 bits_h(uint16_t b) {
  _Float16 h;
  memcpy(&h, &b, 2);
  return h;
}

static _Float16 kl_rt_truncsfhf2(float f) { return bits_h(f32_to_f16_bits(f)); }
static _Float16 kl_rt_truncdfhf2(double d) { return bits_h(f64_to_f16_bits(d)); }
static _Float16 kl_rt_truncsfbf2(float f) { return bits_h(f32_to_bf16_bits(f)); }
static _Float16 kl_rt_truncdfbf2(double d) { return bits_h(f64_to_bf16_bits(d)); }
static float kl_rt_extendhfsf2(_Float16 h) {
  uint16_t b;
  memcpy(&b, &h, 2);
  return f16_bits_to_f32(b);
}
#endif

static LLVMErrorRef define_helpers(kl_jit *jit, LLVMOrcJITDylibRef jd) {
#ifdef KL_HAVE_HALF_HELPERS
  static const struct { const char *name; void *fn; } helpers[] = {
    {"__truncsfhf2", (void *)kl_rt_truncsfhf2}, {"__truncdfhf2", (void *)kl_rt_truncdfhf2},
    {"__truncsfbf2", (void *)kl_rt_truncsfbf2}, {"__truncdfbf2", (void *)kl_rt_truncdfbf2},
    {"__extendhfsf2", (void *)kl_rt_extendhfsf2},
  };
  enum { N = sizeof helpers / sizeof helpers[0] };
  LLVMOrcCSymbolMapPair pairs[N];
  for (int i = 0; i < N; i++) {
    pairs[i].Name = LLVMOrcLLJITMangleAndIntern(jit->lljit, helpers[i].name);
    pairs[i].Sym.Address = (LLVMOrcExecutorAddress)(uintptr_t)helpers[i].fn;
    pairs[i].Sym.Flags.GenericFlags = LLVMJITSymbolGenericFlagsExported | LLVMJITSymbolGenericFlagsCallable;
    pairs[i].Sym.Flags.TargetFlags = 0;
  }
  LLVMOrcMaterializationUnitRef mu = LLVMOrcAbsoluteSymbols(pairs, N);
  LLVMErrorRef e = LLVMOrcJITDylibDefine(jd, mu);
  if (e) LLVMOrcDisposeMaterializationUnit(mu);
  return e;
#else
  (void)jit;
  (void)jd;
  return NULL;
#endif
}

/* Test entry points (jit_host.h). */
#ifdef KL_HAVE_HALF_HELPERS
uint16_t kl_jit_test_f32_to_f16(float f) { return f32_to_f16_bits(f); }
uint16_t kl_jit_test_f64_to_f16(double d) { return f64_to_f16_bits(d); }
uint16_t kl_jit_test_f32_to_bf16(float f) { return f32_to_bf16_bits(f); }
uint16_t kl_jit_test_f64_to_bf16(double d) { return f64_to_bf16_bits(d); }
float kl_jit_test_f16_to_f32(uint16_t h) { return f16_bits_to_f32(h); }
#else
uint16_t kl_jit_test_f32_to_f16(float f) { (void)f; return 0; }
uint16_t kl_jit_test_f64_to_f16(double d) { (void)d; return 0; }
uint16_t kl_jit_test_f32_to_bf16(float f) { (void)f; return 0; }
uint16_t kl_jit_test_f64_to_bf16(double d) { (void)d; return 0; }
float kl_jit_test_f16_to_f32(uint16_t h) { (void)h; return 0; }
#endif

/* ---- the JIT ---- */

kl_jit *kl_jit_create(int opt_level, char *err, size_t errlen) {
  kl_llvm_init_targets();
  if (opt_level < 0 || opt_level > 3) opt_level = 3;
  kl_codegen_target t;
  if (kl_codegen_target_parse("host", &t, err, errlen) != KL_OK) return NULL;
  LLVMTargetRef target;
  char *msg = NULL;
  if (LLVMGetTargetFromTriple(t.triple, &target, &msg)) {
    jt_err(err, errlen, "host JIT: no LLVM target for %s: %s", t.triple, msg ? msg : "?");
    LLVMDisposeMessage(msg);
    return NULL;
  }
  LLVMCodeGenOptLevel level = opt_level == 0   ? LLVMCodeGenLevelNone
                              : opt_level == 1 ? LLVMCodeGenLevelLess
                              : opt_level == 2 ? LLVMCodeGenLevelDefault
                                               : LLVMCodeGenLevelAggressive;
  LLVMTargetMachineRef tm_jit = LLVMCreateTargetMachine(target, t.triple, t.cpu, t.features, level, LLVMRelocPIC,
                                                        LLVMCodeModelJITDefault);
  LLVMTargetMachineRef tm_opt = LLVMCreateTargetMachine(target, t.triple, t.cpu, t.features, level, LLVMRelocPIC,
                                                        LLVMCodeModelJITDefault);
  if (!tm_jit || !tm_opt) {
    if (tm_jit) LLVMDisposeTargetMachine(tm_jit);
    if (tm_opt) LLVMDisposeTargetMachine(tm_opt);
    jt_err(err, errlen, "host JIT: cannot create a target machine for %s (%s)", t.triple, t.cpu);
    return NULL;
  }
  /* Both take ownership: the builder of the JTMB, the JTMB of tm_jit. */
  LLVMOrcJITTargetMachineBuilderRef jtmb = LLVMOrcJITTargetMachineBuilderCreateFromTargetMachine(tm_jit);
  LLVMOrcLLJITBuilderRef builder = LLVMOrcCreateLLJITBuilder();
  LLVMOrcLLJITBuilderSetJITTargetMachineBuilder(builder, jtmb);
  LLVMOrcLLJITRef lljit = NULL;
  LLVMErrorRef e = LLVMOrcCreateLLJIT(&lljit, builder);
  if (e) {
    jt_llvm_err(err, errlen, "host JIT: cannot create LLJIT", e);
    LLVMDisposeTargetMachine(tm_opt);
    return NULL;
  }
  kl_jit *jit = kl_xcalloc(1, sizeof *jit);
  pthread_mutex_init(&jit->mu, NULL);
  jit->lljit = lljit;
  jit->tm = tm_opt;
  jit->opt_level = opt_level;
  jit->triple = kl_xstrdup(LLVMOrcLLJITGetTripleString(lljit));
  jit->dl = kl_xstrdup(LLVMOrcLLJITGetDataLayoutStr(lljit));
  jit->cpu = kl_xstrdup(t.cpu);
  LLVMOrcExecutionSessionSetErrorReporter(LLVMOrcLLJITGetExecutionSession(lljit), session_error, jit);
  return jit;
}

void kl_jit_destroy(kl_jit *jit) {
  if (!jit) return;
  for (kl_jit_module *m = jit->modules, *n; m; m = n) {
    n = m->next;
    LLVMOrcReleaseResourceTracker(m->rt);
    free(m);
  }
  LLVMErrorRef e = LLVMOrcDisposeLLJIT(jit->lljit);
  if (e) LLVMConsumeError(e);
  LLVMDisposeTargetMachine(jit->tm);
  free(jit->triple);
  free(jit->dl);
  free(jit->cpu);
  pthread_mutex_destroy(&jit->mu);
  free(jit);
}

const char *kl_jit_triple(const kl_jit *jit) { return jit->triple; }
const char *kl_jit_data_layout(const kl_jit *jit) { return jit->dl; }
const char *kl_jit_cpu(const kl_jit *jit) { return jit->cpu; }

static size_t arch_len(const char *t) {
  const char *d = strchr(t, '-');
  return d ? (size_t)(d - t) : strlen(t);
}

/* Parses bitcode or IR text into ctx. */
static LLVMModuleRef parse_module(LLVMContextRef ctx, const void *data, size_t size, char *err, size_t errlen) {
  const unsigned char *p = data;
  bool bitcode = size >= 4 && ((p[0] == 'B' && p[1] == 'C' && p[2] == 0xC0 && p[3] == 0xDE) ||
                               (p[0] == 0xDE && p[1] == 0xC0 && p[2] == 0x17 && p[3] == 0x0B));
  LLVMMemoryBufferRef buf = LLVMCreateMemoryBufferWithMemoryRangeCopy(data, size, "kiln-host-module");
  LLVMModuleRef m = NULL;
  if (bitcode) {
    if (LLVMParseBitcodeInContext2(ctx, buf, &m)) {
      jt_err(err, errlen, "host JIT: invalid LLVM bitcode (%zu bytes)", size);
      m = NULL;
    }
    LLVMDisposeMemoryBuffer(buf);
  } else {
    char *msg = NULL;
    if (LLVMParseIRInContext(ctx, buf, &m, &msg)) { /* takes buf */
      jt_err(err, errlen, "host JIT: cannot parse LLVM IR: %s", msg ? msg : "?");
      LLVMDisposeMessage(msg);
      m = NULL;
    }
  }
  return m;
}

/* ---- bytes from outside kiln: read by LLVM in a child process first ----
 * LLVM's bitcode reader is not safe on malformed input: on some inputs it calls
 * report_bad_alloc_error (a declared count makes it ask for tens of GB: "LLVM ERROR: out
 * of memory", abort), on others report_fatal_error (exit) or it segfaults. A bad-alloc
 * handler must not return (unwinding through LLVM frames built without exceptions is
 * undefined) and nothing turns a segfault into an error, so the only way not to take
 * the host program down is to let a forked child read the bytes first: it parses and
 * verifies them with its address space bounded (RLIMIT_AS: its current size + 4 GiB)
 * and stderr silenced, and exits with a code; a child that dies, exits otherwise, or
 * runs past 30 s refuses the module. Only then does this process parse the same bytes
 * (the reader is deterministic). Bytes that passed, and bytes kiln vouches for
 * (kl_jit_trust_bytes: its own code generation, a bundle's bitcode equal to the one
 * regenerated from its IR), are remembered as exact copies (up to 64 MiB), so they never
 * fork; modules kiln builds itself (kl_jit_add_module) skip the check too. */
enum { CHILD_OK = 0, CHILD_BAD_BITCODE = 41, CHILD_BAD_MODULE = 42, CHILD_LLVM_ERROR = 43 };

static void child_diag(LLVMDiagnosticInfoRef di, void *user) {
  (void)user;
  if (LLVMGetDiagInfoSeverity(di) == LLVMDSError) _exit(CHILD_LLVM_ERROR);
}

static void child_read(const void *data, size_t size, bool bitcode) {
  struct rlimit rl;
  long page = sysconf(_SC_PAGESIZE);
  unsigned long long pages = 0;
  FILE *f = fopen("/proc/self/statm", "r");
  if (f) { if (fscanf(f, "%llu", &pages) != 1) pages = 0; fclose(f); }
  if (pages && page > 0) {
    rl.rlim_cur = rl.rlim_max = (rlim_t)(pages * (unsigned long long)page + (4ull << 30));
    setrlimit(RLIMIT_AS, &rl);
  }
  int fd = open("/dev/null", O_WRONLY);
  if (fd >= 0) { dup2(fd, 2); dup2(fd, 1); }
  LLVMContextRef ctx = LLVMContextCreate();
  LLVMContextSetDiagnosticHandler(ctx, child_diag, NULL);
  LLVMModuleRef m = NULL;
  if (bitcode) {
    LLVMMemoryBufferRef buf = LLVMCreateMemoryBufferWithMemoryRange(data, size, "kiln-host-module", 0);
    if (LLVMParseBitcodeInContext2(ctx, buf, &m)) _exit(CHILD_BAD_BITCODE);
  } else {
    LLVMMemoryBufferRef buf = LLVMCreateMemoryBufferWithMemoryRangeCopy(data, size, "kiln-host-module");
    char *msg = NULL;
    if (LLVMParseIRInContext(ctx, buf, &m, &msg)) _exit(CHILD_BAD_BITCODE);
  }
  char *msg = NULL;
  if (LLVMVerifyModule(m, LLVMReturnStatusAction, &msg)) _exit(CHILD_BAD_MODULE);
  _exit(CHILD_OK);
}

typedef struct checked { size_t size; unsigned char *data; struct checked *next; } checked;
static pthread_mutex_t checked_mu = PTHREAD_MUTEX_INITIALIZER;
static checked *checked_list;
static size_t checked_bytes;

static bool was_checked(const void *data, size_t size) {
  pthread_mutex_lock(&checked_mu);
  bool hit = false;
  for (checked *c = checked_list; c && !hit; c = c->next) hit = c->size == size && !memcmp(c->data, data, size);
  pthread_mutex_unlock(&checked_mu);
  return hit;
}
void kl_jit_trust_bytes(const void *data, size_t size) {
  if (!data || !size || was_checked(data, size)) return;
  pthread_mutex_lock(&checked_mu);
  if (checked_bytes + size <= (64u << 20)) {
    checked *c = kl_xmalloc(sizeof *c);
    c->data = kl_xmalloc(size);
    memcpy(c->data, data, size);
    c->size = size;
    c->next = checked_list;
    checked_list = c;
    checked_bytes += size;
  }
  pthread_mutex_unlock(&checked_mu);
}

static kl_status check_in_child(const void *data, size_t size, bool bitcode, char *err, size_t errlen) {
  if (was_checked(data, size)) return KL_OK;
  fflush(NULL);
  pid_t pid = fork();
  if (pid < 0) {
    jt_err(err, errlen, "host JIT: cannot start the process that checks the module (%s); it is not loaded", strerror(errno));
    return KL_ERR;
  }
  if (pid == 0) child_read(data, size, bitcode);   /* does not return */
  int st = 0;
  struct timespec nap = {0, 1000000};
  pid_t r = 0;
  for (long waited = 0; (r = waitpid(pid, &st, WNOHANG)) == 0 && waited < 30000; waited++) nanosleep(&nap, NULL);
  while (r < 0 && errno == EINTR) r = waitpid(pid, &st, WNOHANG);
  if (r == 0) {
    kill(pid, SIGKILL);
    waitpid(pid, &st, 0);
    jt_err(err, errlen, "host JIT: reading the module took LLVM more than 30 s; it is not loaded");
    return KL_ERR;
  }
  if (r < 0) { jt_err(err, errlen, "host JIT: lost the process that checks the module (%s)", strerror(errno)); return KL_ERR; }
  if (WIFSIGNALED(st)) {
    int sig = WTERMSIG(st);
    jt_err(err, errlen, "host JIT: invalid LLVM %s (%zu bytes): LLVM's reader %s on it (signal %d, %s), so it is not loaded",
           bitcode ? "bitcode" : "IR", size, sig == SIGABRT ? "aborts (out of memory or a fatal error)" : "crashes", sig, strsignal(sig));
    return KL_ERR;
  }
  int code = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  if (code == CHILD_OK) { kl_jit_trust_bytes(data, size); return KL_OK; }
  if (code == CHILD_BAD_BITCODE || code == CHILD_BAD_MODULE || code == CHILD_LLVM_ERROR) return KL_OK;   /* read again here: a clean error */
  jt_err(err, errlen, "host JIT: invalid LLVM %s (%zu bytes): LLVM's reader stops the process on it (exit status %d), so it is not loaded",
         bitcode ? "bitcode" : "IR", size, code);
  return KL_ERR;
}

static kl_status prepare(kl_jit *jit, LLVMModuleRef m, char *err, size_t errlen) {
  const char *mt = LLVMGetTarget(m);
  if (mt && mt[0]) {
    size_t a = arch_len(mt);
    if (a != arch_len(jit->triple) || strncmp(mt, jit->triple, a) != 0) {
      jt_err(err, errlen, "host JIT: module triple '%s' is not the host's (%s)", mt, jit->triple);
      return KL_ERR;
    }
  }
  LLVMSetTarget(m, jit->triple);
  const char *dl = LLVMGetDataLayoutStr(m);
  if (dl && dl[0] && strcmp(dl, jit->dl) != 0) {
    jt_err(err, errlen, "host JIT: module data layout '%s' is not the host's ('%s')", dl, jit->dl);
    return KL_ERR;
  }
  LLVMSetDataLayout(m, jit->dl);
  char *msg = NULL;
  if (LLVMVerifyModule(m, LLVMReturnStatusAction, &msg)) {
    jt_err(err, errlen, "host JIT: invalid LLVM module: %s", msg ? msg : "?");
    LLVMDisposeMessage(msg);
    return KL_ERR;
  }
  LLVMDisposeMessage(msg);
  return kl_codegen_optimize(m, jit->tm, jit->opt_level, err, errlen);
}

static kl_jit_module *add_bytes(kl_jit *jit, const void *data, size_t size, bool trusted, char *err, size_t errlen) {
  if (!data || size == 0) {
    jt_err(err, errlen, "host JIT: empty module");
    return NULL;
  }
  if (!trusted) {
    const unsigned char *p = data;
    bool bitcode = size >= 4 && ((p[0] == 'B' && p[1] == 'C' && p[2] == 0xC0 && p[3] == 0xDE) ||
                                 (p[0] == 0xDE && p[1] == 0xC0 && p[2] == 0x17 && p[3] == 0x0B));
    if (check_in_child(data, size, bitcode, err, errlen) != KL_OK) return NULL;
  }
  pthread_mutex_lock(&jit->mu);
  kl_jit_module *mod = NULL;
  LLVMOrcThreadSafeContextRef tsc = LLVMOrcCreateNewThreadSafeContext();
  /* LLVM's default handler would exit(1) on an error diagnostic (bad bitcode, …); the
   * handler stays installed for the JIT compilation that happens at lookup time. */
  kl_llvm_diag_install(LLVMOrcThreadSafeContextGetContext(tsc), &jit->diag);
  LLVMModuleRef m = parse_module(LLVMOrcThreadSafeContextGetContext(tsc), data, size, err, errlen);
  if (!m) {
    if (jit->diag.errors) jt_err(err, errlen, "host JIT: invalid LLVM bitcode: %s", jit->diag.msg);
    goto out;
  }
  if (prepare(jit, m, err, errlen) != KL_OK) {
    LLVMDisposeModule(m);
    goto out;
  }
  if (jit->diag.errors) {
    jt_err(err, errlen, "host JIT: %s", jit->diag.msg);
    LLVMDisposeModule(m);
    goto out;
  }
  char name[64];
  snprintf(name, sizeof name, "kiln.module.%u", jit->next_id++);
  LLVMOrcExecutionSessionRef es = LLVMOrcLLJITGetExecutionSession(jit->lljit);
  LLVMOrcJITDylibRef jd = LLVMOrcExecutionSessionCreateBareJITDylib(es, name);
  LLVMErrorRef e = define_helpers(jit, jd);
  if (e) {
    jt_llvm_err(err, errlen, "host JIT: cannot define runtime helpers", e);
    LLVMDisposeModule(m);
    goto out;
  }
  LLVMOrcDefinitionGeneratorRef gen = NULL;
  e = LLVMOrcCreateDynamicLibrarySearchGeneratorForProcess(&gen, LLVMOrcLLJITGetGlobalPrefix(jit->lljit), NULL, NULL);
  if (e) {
    jt_llvm_err(err, errlen, "host JIT: cannot search process symbols", e);
    LLVMDisposeModule(m);
    goto out;
  }
  LLVMOrcJITDylibAddGenerator(jd, gen);
  LLVMOrcResourceTrackerRef rt = LLVMOrcJITDylibCreateResourceTracker(jd);
  LLVMOrcThreadSafeModuleRef tsm = LLVMOrcCreateNewThreadSafeModule(m, tsc);
  e = LLVMOrcLLJITAddLLVMIRModuleWithRT(jit->lljit, rt, tsm); /* takes tsm */
  if (e) {
    jt_llvm_err(err, errlen, "host JIT: cannot add module", e);
    LLVMOrcReleaseResourceTracker(rt);
    goto out;
  }
  mod = kl_xcalloc(1, sizeof *mod);
  mod->jd = jd;
  mod->rt = rt;
  mod->next = jit->modules;
  jit->modules = mod;
out:
  LLVMOrcDisposeThreadSafeContext(tsc); /* the module (if added) keeps its own reference */
  pthread_mutex_unlock(&jit->mu);
  return mod;
}

kl_jit_module *kl_jit_add_bytes(kl_jit *jit, const void *data, size_t size, char *err, size_t errlen) {
  return add_bytes(jit, data, size, false, err, errlen);
}

kl_jit_module *kl_jit_add_module(kl_jit *jit, LLVMModuleRef m, char *err, size_t errlen) {
  if (!m) {
    jt_err(err, errlen, "host JIT: no module");
    return NULL;
  }
  char *msg = NULL;
  if (LLVMVerifyModule(m, LLVMReturnStatusAction, &msg)) { /* before writing bitcode */
    jt_err(err, errlen, "host JIT: invalid LLVM module: %s", msg ? msg : "?");
    LLVMDisposeMessage(msg);
    return NULL;
  }
  LLVMDisposeMessage(msg);
  LLVMMemoryBufferRef buf = LLVMWriteBitcodeToMemoryBuffer(m);
  kl_jit_module *mod = add_bytes(jit, LLVMGetBufferStart(buf), LLVMGetBufferSize(buf), true, err, errlen);
  LLVMDisposeMemoryBuffer(buf);
  return mod;
}

typedef struct lookup_wait {
  pthread_mutex_t mu;
  pthread_cond_t cv;
  bool done;
  uint64_t addr;
  char msg[512];
} lookup_wait;

static void lookup_done(LLVMErrorRef e, LLVMOrcCSymbolMapPairs result, size_t n, void *ctx) {
  lookup_wait *w = ctx;
  pthread_mutex_lock(&w->mu);
  if (e) {
    char *m = LLVMGetErrorMessage(e);
    snprintf(w->msg, sizeof w->msg, "%s", m);
    LLVMDisposeErrorMessage(m);
  } else if (n >= 1) {
    w->addr = result[0].Sym.Address;
  }
  w->done = true;
  pthread_cond_signal(&w->cv);
  pthread_mutex_unlock(&w->mu);
}

void *kl_jit_lookup(kl_jit *jit, kl_jit_module *mod, const char *name, char *err, size_t errlen) {
  if (!mod || !name) {
    jt_err(err, errlen, "host JIT: lookup without module or name");
    return NULL;
  }
  pthread_mutex_lock(&jit->mu);
  jit->session_err[0] = '\0';
  jit->diag.errors = 0;
  jit->diag.msg[0] = '\0';
  lookup_wait w = {.done = false, .addr = 0};
  pthread_mutex_init(&w.mu, NULL);
  pthread_cond_init(&w.cv, NULL);
  LLVMOrcCJITDylibSearchOrderElement order = {mod->jd, LLVMOrcJITDylibLookupFlagsMatchAllSymbols};
  LLVMOrcCLookupSetElement sym = {LLVMOrcLLJITMangleAndIntern(jit->lljit, name),
                                  LLVMOrcSymbolLookupFlagsRequiredSymbol};
  LLVMOrcExecutionSessionLookup(LLVMOrcLLJITGetExecutionSession(jit->lljit), LLVMOrcLookupKindStatic, &order, 1,
                                &sym, 1, lookup_done, &w);
  pthread_mutex_lock(&w.mu);
  while (!w.done) pthread_cond_wait(&w.cv, &w.mu);
  pthread_mutex_unlock(&w.mu);
  pthread_cond_destroy(&w.cv);
  pthread_mutex_destroy(&w.mu);
  void *addr = (void *)(uintptr_t)w.addr;
  if (addr && jit->diag.errors) {
    addr = NULL; /* code generation reported an error: do not run what it produced */
    jt_err(err, errlen, "host JIT: cannot compile '%s': %s", name, jit->diag.msg);
  } else if (!addr) {
    if (jit->diag.errors)
      jt_err(err, errlen, "host JIT: cannot compile '%s': %s", name, jit->diag.msg);
    else if (jit->session_err[0])
      jt_err(err, errlen, "host JIT: cannot compile '%s': %s", name, jit->session_err);
    else if (w.msg[0])
      jt_err(err, errlen, "host JIT: symbol '%s': %s", name, w.msg);
    else
      jt_err(err, errlen, "host JIT: symbol '%s' has address 0", name);
  }
  pthread_mutex_unlock(&jit->mu);
  return addr;
}

kl_status kl_jit_remove_module(kl_jit *jit, kl_jit_module *mod, char *err, size_t errlen) {
  if (!mod) return KL_OK;
  pthread_mutex_lock(&jit->mu);
  kl_jit_module **pp = &jit->modules;
  while (*pp && *pp != mod) pp = &(*pp)->next;
  if (!*pp) {
    pthread_mutex_unlock(&jit->mu);
    jt_err(err, errlen, "host JIT: module does not belong to this JIT");
    return KL_ERR;
  }
  *pp = mod->next;
  LLVMErrorRef e = LLVMOrcResourceTrackerRemove(mod->rt);
  kl_status st = KL_OK;
  if (e) {
    jt_llvm_err(err, errlen, "host JIT: cannot remove module", e);
    st = KL_ERR;
  }
  LLVMOrcReleaseResourceTracker(mod->rt);
  free(mod);
  pthread_mutex_unlock(&jit->mu);
  return st;
}

/* device_host_loader.c — the host device's loader: ORC LLJIT's object layer links host
 * objects (ELF relocatable, made by codegen at compile time) into the process. See
 * device_host_loader.h. Nothing here compiles code. */
#include "runtime/device_host_loader.h"
#include "core/diag.h"
#include "core/dtype.h"

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

#include <llvm-c/Core.h>
#include <llvm-c/Error.h>
#include <llvm-c/LLJIT.h>
#include <llvm-c/Object.h>
#include <llvm-c/Orc.h>
#include <llvm-c/Target.h>

#include "core/arena.h"

struct kl_jit_module {
  LLVMOrcJITDylibRef jd;
  LLVMOrcResourceTrackerRef rt;
  kl_jit_module *next;
};

struct kl_jit {
  pthread_mutex_t mu;
  LLVMOrcLLJITRef lljit;
  unsigned next_id;
  kl_jit_module *modules;
  char session_err[512]; /* last message from the execution session's error reporter */
};

/* Consumes e and formats "what: message". */
static void jt_llvm_err(char *err, size_t errlen, const char *what, LLVMErrorRef e) {
  char *msg = LLVMGetErrorMessage(e);
  kl_errf(err, errlen, "%s: %s", what, msg);
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
 * kiln's own definitions. The x86-64 ABI passes and returns half and bfloat in the low 16
 * bits of an XMM register, as it does float in the low 32: these C functions carry the 16
 * bits in a float's low half (bits moved with memcpy, no arithmetic on the carrier), so they
 * are call-compatible whatever the C compiler knows of _Float16 (clang 14 has none on
 * x86-64, GCC 12 has it); the rounding is core/dtype.h's, the same as the reference
 * evaluator's. */
#if defined(__x86_64__)
#define KL_HAVE_HALF_HELPERS 1

static float carry16(uint16_t b) {
  uint32_t w = b;
  float f;
  memcpy(&f, &w, 4);
  return f;
}

static float kl_rt_truncsfhf2(float f) { return carry16(kl_f32_to_f16(f)); }
static float kl_rt_truncdfhf2(double d) { return carry16(kl_f64_to_f16(d)); }
static float kl_rt_truncsfbf2(float f) { return carry16(kl_f32_to_bf16(f)); }
static float kl_rt_truncdfbf2(double d) { return carry16(kl_f64_to_bf16(d)); }
static float kl_rt_extendhfsf2(float h) {
  uint32_t w;
  memcpy(&w, &h, 4);
  return kl_f16_to_f32((uint16_t)w);
}
#endif

static LLVMErrorRef define_helpers(kl_jit *jit, LLVMOrcJITDylibRef jd) {
#ifdef KL_HAVE_HALF_HELPERS
  static const struct {
    const char *name;
    void *fn;
  } helpers[] = {
    { "__truncsfhf2", (void *)kl_rt_truncsfhf2 },   { "__truncdfhf2", (void *)kl_rt_truncdfhf2 },
    { "__truncsfbf2", (void *)kl_rt_truncsfbf2 },   { "__truncdfbf2", (void *)kl_rt_truncdfbf2 },
    { "__extendhfsf2", (void *)kl_rt_extendhfsf2 },
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


/* ---- the loader ---- */

static pthread_once_t native_once = PTHREAD_ONCE_INIT;
static void init_native(void) {
  LLVMInitializeNativeTarget();
  LLVMInitializeNativeAsmPrinter();
}

kl_jit *kl_jit_create(char *err, size_t errlen) {
  pthread_once(&native_once, init_native);
  LLVMOrcJITTargetMachineBuilderRef jtmb = NULL;
  LLVMErrorRef e = LLVMOrcJITTargetMachineBuilderDetectHost(&jtmb);
  if (e) {
    jt_llvm_err(err, errlen, "host loader: cannot describe the host", e);
    return NULL;
  }
  LLVMOrcLLJITBuilderRef builder = LLVMOrcCreateLLJITBuilder();
  LLVMOrcLLJITBuilderSetJITTargetMachineBuilder(builder, jtmb); /* takes jtmb */
  LLVMOrcLLJITRef lljit = NULL;
  e = LLVMOrcCreateLLJIT(&lljit, builder); /* takes builder */
  if (e) {
    jt_llvm_err(err, errlen, "host loader: cannot create LLJIT", e);
    return NULL;
  }
  kl_jit *jit = kl_xcalloc(1, sizeof *jit);
  pthread_mutex_init(&jit->mu, NULL);
  jit->lljit = lljit;
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
  pthread_mutex_destroy(&jit->mu);
  free(jit);
}

const char *kl_jit_triple(const kl_jit *jit) { return LLVMOrcLLJITGetTripleString(jit->lljit); }

/* An x86-64 (or the host's) ELF relocatable object: magic, 64-bit, ET_REL. */
static bool is_relocatable_elf(const unsigned char *p, size_t size) {
  return size >= 64 && p[0] == 0x7f && p[1] == 'E' && p[2] == 'L' && p[3] == 'F' && p[4] == 2 && p[16] == 1 &&
      p[17] == 0;
}

static kl_status check_format(const void *data, size_t size, char *err, size_t errlen) {
  const unsigned char *p = data;
  if (!data || size == 0) {
    kl_errf(err, errlen, "host loader: empty binary");
    return KL_ERR;
  }
#if defined(__x86_64__)
  enum { HOST_MACHINE = 62 }; /* EM_X86_64 */
#elif defined(__aarch64__)
  enum { HOST_MACHINE = 183 }; /* EM_AARCH64 */
#else
  enum { HOST_MACHINE = -1 };
#endif
  if (is_relocatable_elf(p, size)) {
    int machine = p[5] == 1 ? p[18] | p[19] << 8 : p[19] | p[18] << 8;
    if (HOST_MACHINE < 0 || machine == HOST_MACHINE) return KL_OK;
    kl_errf(err, errlen, "host loader: the object is for another architecture (ELF machine %d, the host's is %d)",
            machine, HOST_MACHINE);
    return KL_ERR;
  }
  bool bitcode = size >= 4 &&
      ((p[0] == 'B' && p[1] == 'C' && p[2] == 0xC0 && p[3] == 0xDE) ||
       (p[0] == 0xDE && p[1] == 0xC0 && p[2] == 0x17 && p[3] == 0x0B));
  kl_errf(err, errlen,
          "host loader: the binary (%zu bytes) is %s, not a host object (an ELF relocatable object from kiln's code "
          "generation: kl_codegen_emit for \"host\")",
          size, bitcode ? "LLVM bitcode" : "not an ELF relocatable object");
  return KL_ERR;
}

/* Adds the object to a fresh JITDylib (helpers, process symbols) under mu; NULL + err. */
static kl_jit_module *add_object(kl_jit *jit, const void *data, size_t size, char *err, size_t errlen) {
  char name[64];
  snprintf(name, sizeof name, "kiln.module.%u", jit->next_id++);
  LLVMOrcExecutionSessionRef es = LLVMOrcLLJITGetExecutionSession(jit->lljit);
  LLVMOrcJITDylibRef jd = LLVMOrcExecutionSessionCreateBareJITDylib(es, name);
  LLVMErrorRef e = define_helpers(jit, jd);
  if (e) {
    jt_llvm_err(err, errlen, "host loader: cannot define runtime helpers", e);
    return NULL;
  }
  LLVMOrcDefinitionGeneratorRef gen = NULL;
  e = LLVMOrcCreateDynamicLibrarySearchGeneratorForProcess(&gen, LLVMOrcLLJITGetGlobalPrefix(jit->lljit), NULL, NULL);
  if (e) {
    jt_llvm_err(err, errlen, "host loader: cannot search process symbols", e);
    return NULL;
  }
  LLVMOrcJITDylibAddGenerator(jd, gen);
  LLVMOrcResourceTrackerRef rt = LLVMOrcJITDylibCreateResourceTracker(jd);
  LLVMMemoryBufferRef buf = LLVMCreateMemoryBufferWithMemoryRangeCopy(data, size, name);
  e = LLVMOrcLLJITAddObjectFileWithRT(jit->lljit, rt, buf); /* takes buf */
  if (e) {
    jt_llvm_err(err, errlen, "host loader: invalid host object", e);
    LLVMOrcReleaseResourceTracker(rt);
    return NULL;
  }
  kl_jit_module *mod = kl_xcalloc(1, sizeof *mod);
  mod->jd = jd;
  mod->rt = rt;
  mod->next = jit->modules;
  jit->modules = mod;
  return mod;
}

/* ---- objects from outside this process: linked in a child process first ----
 * A damaged or crafted object may make LLVM's object reader or JITLink crash or abort
 * (nothing turns a segfault into an error), so an untrusted object is first added and
 * linked by a forked child: it loads it into a loader of its own, looks up every symbol
 * the object names (linking it), with its address space bounded (RLIMIT_AS: its current
 * size + 4 GiB) and stderr silenced, and exits with a code; a child that dies, exits
 * otherwise or runs past 30 s refuses the object. Only then does this process add the
 * same bytes. Objects this process made (KL_LOAD_TRUSTED) are added directly. */
enum { CHILD_OK = 0, CHILD_REFUSED = 41 };

static void child_link(const void *data, size_t size) {
  struct rlimit rl;
  long page = sysconf(_SC_PAGESIZE);
  unsigned long long pages = 0;
  FILE *f = fopen("/proc/self/statm", "r");
  if (f) {
    if (fscanf(f, "%llu", &pages) != 1) pages = 0;
    fclose(f);
  }
  if (pages && page > 0) {
    rl.rlim_cur = rl.rlim_max = (rlim_t)(pages * (unsigned long long)page + (4ull << 30));
    setrlimit(RLIMIT_AS, &rl);
  }
  int fd = open("/dev/null", O_WRONLY);
  if (fd >= 0) {
    dup2(fd, 2);
    dup2(fd, 1);
  }
  char err[512];
  kl_jit *jit = kl_jit_create(err, sizeof err);
  if (!jit) _exit(CHILD_REFUSED);
  kl_jit_module *m = add_object(jit, data, size, err, sizeof err);
  if (!m) _exit(CHILD_REFUSED);
  char *msg = NULL;
  LLVMMemoryBufferRef buf = LLVMCreateMemoryBufferWithMemoryRange(data, size, "kiln-host-object", 0);
  LLVMBinaryRef bin = LLVMCreateBinary(buf, NULL, &msg);
  if (!bin) _exit(CHILD_REFUSED);
  LLVMSymbolIteratorRef it = LLVMObjectFileCopySymbolIterator(bin);
  for (; it && !LLVMObjectFileIsSymbolIteratorAtEnd(bin, it); LLVMMoveToNextSymbol(it)) {
    const char *sym = LLVMGetSymbolName(it);
    if (!sym || !*sym) continue;
    err[0] = '\0';
    kl_jit_lookup(jit, m, sym, err, sizeof err); /* links the object on the first defined one */
  }
  _exit(CHILD_OK);
}

static kl_status check_in_child(const void *data, size_t size, char *err, size_t errlen) {
  fflush(NULL);
  pid_t pid = fork();
  if (pid < 0) {
    kl_errf(err, errlen, "host loader: cannot start the process that checks the object (%s); it is not loaded",
            strerror(errno));
    return KL_ERR;
  }
  if (pid == 0) child_link(data, size); /* does not return */
  int st = 0;
  struct timespec nap = { 0, 1000000 };
  pid_t r = 0;
  for (long waited = 0; (r = waitpid(pid, &st, WNOHANG)) == 0 && waited < 30000; waited++) nanosleep(&nap, NULL);
  while (r < 0 && errno == EINTR) r = waitpid(pid, &st, WNOHANG);
  if (r == 0) {
    kill(pid, SIGKILL);
    waitpid(pid, &st, 0);
    kl_errf(err, errlen, "host loader: linking the object took LLVM more than 30 s; it is not loaded");
    return KL_ERR;
  }
  if (r < 0) {
    kl_errf(err, errlen, "host loader: lost the process that checks the object (%s)", strerror(errno));
    return KL_ERR;
  }
  if (WIFSIGNALED(st)) {
    int sig = WTERMSIG(st);
    kl_errf(err, errlen,
            "host loader: invalid host object (%zu bytes): LLVM %s on it (signal %d, %s), so it is not loaded", size,
            sig == SIGABRT ? "aborts (out of memory or a fatal error)" : "crashes", sig, strsignal(sig));
    return KL_ERR;
  }
  int code = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  if (code == CHILD_OK || code == CHILD_REFUSED) return KL_OK; /* refused: added again here for a clean error */
  kl_errf(err, errlen,
          "host loader: invalid host object (%zu bytes): LLVM stops the process on it (exit status %d), so it is not "
          "loaded",
          size, code);
  return KL_ERR;
}

kl_jit_module *kl_jit_add_object(kl_jit *jit, const void *data, size_t size, bool trusted, char *err, size_t errlen) {
  if (check_format(data, size, err, errlen) != KL_OK) return NULL;
  if (!trusted && check_in_child(data, size, err, errlen) != KL_OK) return NULL;
  pthread_mutex_lock(&jit->mu);
  kl_jit_module *mod = add_object(jit, data, size, err, errlen);
  pthread_mutex_unlock(&jit->mu);
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
    kl_errf(err, errlen, "host loader: lookup without module or name");
    return NULL;
  }
  pthread_mutex_lock(&jit->mu);
  jit->session_err[0] = '\0';
  lookup_wait w = { .done = false, .addr = 0 };
  pthread_mutex_init(&w.mu, NULL);
  pthread_cond_init(&w.cv, NULL);
  LLVMOrcCJITDylibSearchOrderElement order = { mod->jd, LLVMOrcJITDylibLookupFlagsMatchAllSymbols };
  LLVMOrcCLookupSetElement sym = { LLVMOrcLLJITMangleAndIntern(jit->lljit, name),
                                   LLVMOrcSymbolLookupFlagsRequiredSymbol };
  LLVMOrcExecutionSessionLookup(LLVMOrcLLJITGetExecutionSession(jit->lljit), LLVMOrcLookupKindStatic, &order, 1, &sym,
                                1, lookup_done, &w);
  pthread_mutex_lock(&w.mu);
  while (!w.done) pthread_cond_wait(&w.cv, &w.mu);
  pthread_mutex_unlock(&w.mu);
  pthread_cond_destroy(&w.cv);
  pthread_mutex_destroy(&w.mu);
  void *addr = (void *)(uintptr_t)w.addr;
  if (!addr) {
    if (jit->session_err[0])
      kl_errf(err, errlen, "host loader: cannot link '%s': %s", name, jit->session_err);
    else if (w.msg[0])
      kl_errf(err, errlen, "host loader: symbol '%s': %s", name, w.msg);
    else
      kl_errf(err, errlen, "host loader: symbol '%s' has address 0", name);
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
    kl_errf(err, errlen, "host loader: module does not belong to this loader");
    return KL_ERR;
  }
  *pp = mod->next;
  LLVMErrorRef e = LLVMOrcResourceTrackerRemove(mod->rt);
  kl_status st = KL_OK;
  if (e) {
    jt_llvm_err(err, errlen, "host loader: cannot remove module", e);
    st = KL_ERR;
  }
  LLVMOrcReleaseResourceTracker(mod->rt);
  free(mod);
  pthread_mutex_unlock(&jit->mu);
  return st;
}

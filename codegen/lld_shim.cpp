// lld_shim.cpp — in-process ELF linking for AMDGPU code objects (HSACO).
// Contract: kl_lld_link_elf runs lld's ELF driver (ld.lld) on argv, exactly as the
// command-line tool would (argv[0] should be "ld.lld"). Returns 0 on success; on failure
// returns non-zero and writes lld's diagnostics (truncated) into err. lld keeps global
// state, so calls are serialised by a mutex; lld::lldMain destroys its
// CommonLinkerContext after every run, so repeated links in one process work. If lld
// reports that it cannot safely run again (a crash was recovered), every later call
// fails with a message instead of touching corrupted state.
// It also carries a weak no-op getPollyPluginInfo(): Debian's LLVM is built with Polly
// as a static pass extension that LLVM's LTO code (pulled in by lld) references, but
// ships no libPolly.a, so a static (KILN_STATIC) link would fail without it. A real
// Polly, when linked, takes precedence; kiln never runs LTO, so the stub is not called.
#include <cstring>
#include <mutex>
#include <string>

#include "lld/Common/Driver.h"
#include "llvm/ADT/ArrayRef.h"
#include "llvm/Passes/PassPlugin.h"
#include "llvm/Support/raw_ostream.h"

LLD_HAS_DRIVER(elf)

static void kl_no_polly(llvm::PassBuilder &) {}
__attribute__((weak)) llvm::PassPluginLibraryInfo getPollyPluginInfo() {
  return { LLVM_PLUGIN_API_VERSION, "Polly (not linked into kiln)", "0", kl_no_polly };
}

static std::mutex kl_lld_mutex;
static bool kl_lld_broken = false;

static void kl_lld_copy(char *dst, size_t n, const std::string &s) {
  if (!dst || n == 0) return;
  size_t k = s.size() < n - 1 ? s.size() : n - 1;
  std::memcpy(dst, s.data(), k);
  dst[k] = '\0';
}

extern "C" int kl_lld_link_elf(const char **argv, int argc, char *err, size_t errlen) {
  std::lock_guard<std::mutex> lock(kl_lld_mutex);
  if (err && errlen) err[0] = '\0';
  if (kl_lld_broken) {
    kl_lld_copy(err, errlen, "lld: an earlier link crashed; lld cannot run again in this process");
    return 1;
  }
  if (!argv || argc < 1) {
    kl_lld_copy(err, errlen, "lld: empty argument list");
    return 1;
  }
  std::string out, errs;
  llvm::raw_string_ostream os(out), es(errs);
  lld::Result r = lld::lldMain(llvm::ArrayRef<const char *>(argv, (size_t)argc), os, es,
                               { { lld::Gnu, &lld::elf::link } });
  os.flush();
  es.flush();
  if (!r.canRunAgain) kl_lld_broken = true;
  if (r.retCode != 0 && errs.empty()) errs = "lld: link failed (exit code " + std::to_string(r.retCode) + ")";
  if (r.retCode != 0) kl_lld_copy(err, errlen, errs);
  return r.retCode;
}

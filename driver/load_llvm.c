/* load_llvm.c — emit then load (load_llvm.h). */
#include "driver/load_llvm.h"
#include "codegen/codegen_target.h"

kl_status kl_device_load_llvm(kl_device *dev, LLVMModuleRef m, kl_dev_module **out) {
  *out = NULL;
  const kl_device_info *info = kl_device_get_info(dev);
  if (!m) return kl_device_set_error(dev, "%s: load of a NULL LLVM module", info->backend);
  kl_binary bin;
  char err[1024];
  if (kl_codegen_emit(m, info->arch, NULL, &bin, err, sizeof err) != KL_OK)
    return kl_device_set_error(dev, "%s: %s", info->backend, err);
  kl_status st = kl_device_load(dev, bin.data, bin.size, KL_LOAD_TRUSTED, out);
  kl_binary_free(&bin);
  return st;
}

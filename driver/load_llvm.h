/* load_llvm.h — emit then load: an LLVM module compiled for a device and loaded on it.
 * Contract: kl_device_load_llvm emits the module's binary for the device's arch
 * (kl_codegen_emit: PTX, HSACO or a host object) and loads it (KL_LOAD_TRUSTED: this
 * process made it). The module is not modified or consumed. Errors: KL_ERR with the
 * message in the device's error buffer (kl_device_error), as kl_device_load's. The device
 * layer itself never calls code generation; this is the driver's composition of the two
 * (tests and tools that hand-build LLVM modules use it). */
#ifndef KL_LOAD_LLVM_H
#define KL_LOAD_LLVM_H
#include <llvm-c/Core.h>
#include "runtime/device.h"

kl_status kl_device_load_llvm(kl_device *dev, LLVMModuleRef m, kl_dev_module **out);
#endif

/* bundle.h — saving a compiled program to one bundle file and loading it back.
 * Contract:
 *  - kl_program_save(p, path) writes every target variant of p into one file (format
 *    below). kl_program_load(ctx, path) reads it into a new kl_program in ctx that
 *    kl_program_run runs unchanged on the device present: it picks the variant for the
 *    device as for compiled programs, and a bundle without a variant for the device
 *    fails at run with a message naming the device, its arch and the bundle's targets.
 *    (kl_program_load_for_device checks that at load time instead.)
 *  - Loading parses each target's module IR text into ctx (kl_parse_module), verifies it,
 *    and rebuilds the plan from its graph func exactly as kl_compile does (params,
 *    constants, steps with their tokens, outputs); the plan section of the bundle must
 *    agree with it.
 *    The IR is authoritative: every kernel's grid, block and LDS bytes in the plan must
 *    be those of its kernel func (grid_size, block_size, the rock.alloc ops in LDS), within
 *    the target's limits (block <= max_workgroup_size, LDS <= the target's LDS), and its
 *    kind, perf config, argument names and layouts those of the IR; so a kernel never
 *    runs with a launch size it was not compiled for. An AMDGPU code object must define
 *    the kernel for the target's chip with the IR's block size and LDS bytes (its
 *    metadata, read by hsaco.c); PTX text is not read by kiln.
 *  - Host binaries (ELF relocatable objects, compiled for the host CPU) are never handed
 *    to LLVM as they come: each kernel is lowered and compiled again from the verified IR
 *    and its object must equal the bundle's byte for byte (else an error naming the
 *    kernel). LLVM's object reader and linker may crash on malformed input, so this is
 *    how loading a bundle promises not to take the process down; the binaries of a
 *    loaded program are still loaded untrusted (without KL_LOAD_TRUSTED, device.h). A
 *    bundle written by a kiln with another LLVM version, or for another host CPU, is
 *    refused for the host the same way.
 *    Kernel infos (p:kernels()) come from the bundle; kernel IR snapshots, LLVM IR and
 *    the module snapshots after each pass are NOT saved (a loaded program has none;
 *    kl_program_ir returns NULL). A loaded program is not put in the compile cache.
 *  - Errors: NULL / KL_ERR plus a message in err[errlen] naming the file and, for a
 *    damaged bundle, the section and what is wrong ("x.klb: bundle: section 3 (binary
 *    of kernel k0, target 'host'): checksum mismatch ..."). Any input bytes give an
 *    error, never a crash. Reading and validating is client/kiln_client.c (plain C), so
 *    kiln and outside clients read bundles with the same code.
 *
 * ==== Bundle file format, version 3 ====
 * (version 1 held host LLVM bitcode; this kiln refuses it: "format version 1 is not
 * supported (this reader reads versions 2 and 3)". Version 2 is version 3 with steps that
 * are launches only, without token and waits (step = u32 kind 0, u32 kernel index, u32
 * nargs, nargs x u32 slot); it still loads: its steps are launches in order, step i
 * yielding token i and waiting on token i - 1. kiln writes version 3.)
 * All integers little-endian. FNV-1a 64 = offset basis 0xcbf29ce484222325, prime
 * 0x100000001b3, over bytes.
 * Header (48 bytes at offset 0):
 *    0  8  magic "KILNBNDL"
 *    8  4  u32 format version (2)
 *   12  4  u32 header size (48)
 *   16  4  u32 number of sections N
 *   20  4  u32 flags (0)
 *   24  8  u64 file size in bytes
 *   32  8  u64 FNV-1a 64 of the section table (N * 40 bytes)
 *   40  8  u64 FNV-1a 64 of header bytes 0..39
 * Section table (at 48; N entries of 40 bytes):
 *    0 u32 kind, 4 u32 target index, 8 u32 index, 12 u32 reserved (0),
 *   16 u64 offset, 24 u64 size, 32 u64 FNV-1a 64 of the section's bytes.
 * Sections follow the table in table order, each at the next multiple of 8 after the
 * previous one (the first after the table); padding bytes are zero and the file ends
 * with the last section, so every byte of the file is checked.
 * Kinds:
 *   1 META  (target 0, index 0; exactly one): u32 number of targets T (>= 1), str
 *           producer ("kiln 0.1.0").
 *   2 PLAN  (target t, index 0; one per target t < T): see below.
 *   3 IR    (target t, index 0; one per target): the compiled module's IR text
 *           (kl_print_op of the variant's module in generic form with locations: the
 *           graph func holding the plan and the kernel funcs), UTF-8, no NUL.
 *   4 BINARY (target t, index k; one per kernel k of target t): the kernel's binary
 *           (host: ELF relocatable object; sm_*: PTX text; gfx*: HSACO), at least 1 byte.
 *   5 CONST (target t, index s; one per constant slot s whose buffer spans > 0 bytes):
 *           the constant's bytes in the slot's layout (exactly t.bytes bytes).
 *   Readers skip sections of other kinds (additions an old reader may ignore);
 *   incompatible changes get a new format version.
 * Encodings inside PLAN: str = u32 length + bytes (no NUL); i64 = 8 bytes two's complement.
 *   tensor = str type text, str element type ("i1" "i8" "u8" "i32" "i64" "index" "f16" "bf16"
 *            "f32" "f64"), u32 element bytes, u32 rank (<= 16), i64 shape[rank],
 *            i64 strides[rank] (elements)
 *   PLAN   = str target, str arch ("host"|"amdgpu"|"nvptx"), str binary format
 *            ("host-object"|"hsaco"|"ptx"),
 *            u32 K, K x kernel, u32 S, S x slot, u32 P, P x step, u32 O, O x u32 output slot
 *   kernel = str name, str kind, str perf config, i64 grid[3], i64 block[3],
 *            i64 LDS bytes, u32 nargs, u32 ninputs, nargs x (str arg name, tensor)
 *   slot   = u32 kind (0 param, 1 constant, 2 result of a launch), str name (params
 *            only, else empty), tensor
 *   step   = u32 kind (0 launch, 1 prefill, 2 copy, 3 alloc_workspace, 4 free),
 *            u32 token, u32 W, W x u32 token waited on, then by kind:
 *              launch:          u32 kernel index, u32 nargs (== the kernel's), nargs x u32 slot
 *              prefill:         u32 slot, u64 value (the bits of an IEEE binary64)
 *              copy:            u32 source slot, u32 destination slot, u64 bytes
 *              alloc_workspace: u32 slot, u64 bytes
 *              free:            u32 slot
 *            (at most 4096 steps; the rules the steps obey: client/kiln_client.h)
 * A section must be consumed exactly; indices must be in range; names of targets,
 * kernels (per target) and params (per target) are non-empty and unique, other slots
 * have empty names; grid and block entries are in 1..2^31-1, LDS bytes in 0..2^31-1;
 * element bytes match the element type; ninputs <= nargs. */
#ifndef KL_BUNDLE_H
#define KL_BUNDLE_H
#include "client/kiln_client.h"
#include "driver/program.h"

kl_status kl_program_save(const kl_program *p, const char *path, char *err, size_t errlen);
/* The bundle bytes in memory (malloc'd; caller frees). */
kl_status kl_program_save_memory(const kl_program *p, void **out, size_t *size, char *err, size_t errlen);

kl_program *kl_program_load(kl_ctx *ctx, const char *path, char *err, size_t errlen);
/* From a bundle already open (path: the name used in messages, may be NULL). */
kl_program *kl_program_from_bundle(kl_ctx *ctx, const kl_bundle *b, const char *path, char *err, size_t errlen);
/* As kl_program_load, but fails at once unless the bundle has a variant that runs on dev
 * (same rule as kl_program_run). */
kl_program *kl_program_load_for_device(kl_ctx *ctx, const char *path, kl_device *dev, char *err, size_t errlen);
#endif

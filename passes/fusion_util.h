/* fusion_util.h — what the fusion passes ask about global intermediates at the kernel
 * level (rock-regularize, the input/output fusion passes): the uses of a buffer through
 * rock.transform chains, and, in regular form, the views from a GEMM operand down to the
 * inputs of the fusing op that produced it.
 *
 * Contract.
 *  - A "use through views" of buffer b is an operand of an op that is b itself or the
 *    top of a chain of rock.transform ops whose bottom is b; depth is the number of
 *    transforms in between (0 = direct). The transforms themselves are not uses.
 *  - A fusing op (KL_TRAIT_FUSING, e.g. rock.elementwise) writes its LAST operand and
 *    reads the others; kl_fu_fusing_write / kl_fu_fusing_read say which.
 *  - Views returned here are heap kl_views owned by the caller (kl_view_free). Failures
 *    return NULL / -1 and, when err is non-NULL, put the reason in err (n bytes).
 *  - Nothing here changes the IR.
 *
 * Input fusion (kl_fu_operand_inputs). For a GEMM operand value `opnd` (as the gemm /
 * conv / gridwise_gemm reads it, possibly a rock.transform chain):
 *    opnd --views P--> %a = rock.alloc (global)   written DIRECTLY (depth 0) by exactly one
 *    fusing op E (and written by nothing else: every other use of %a is a fusing read or
 *    a non-fusing use through views that is not E), E's iteration space = %a's shape;
 *    E's input j is x_j --views X_j--> base_j.
 *  The result is, per input j of E: base_j and the composed view P . X_j (the GEMM
 *  operand's coordinates -> coordinates of base_j, simplified), plus E and %a. Because
 *  the form is regular (no view between %a and E), vector lengths of the fused global
 *  loads follow from these views alone (kl_view_vector_len over base_j's strides).
 *  When opnd's chain does not end at a global rock.alloc, or %a has no direct fusing
 *  writer (a kernel input, a GEMM result, several writers, a writer through a view: not
 *  regular), it returns -1 with the reason and fills nothing. */
#ifndef KL_FUSION_UTIL_H
#define KL_FUSION_UTIL_H
#include "core/ir.h"
#include "core/view.h"

/* An epilogue that reads the GEMM result through a broadcast (new dims, or size-1 dims
 * grown) is split by rock-regularize into one fusing op per combination of the broadcast
 * coordinates, each reading the result directly; graph-partition keeps such an
 * epilogue in the GEMM's kernel only up to this many copies. */
#define KL_FU_MAX_BROADCAST_COPIES 16

typedef struct kl_fu_use {
  kl_op *user;   /* the op using the buffer */
  int index;     /* its operand index */
  kl_value *top; /* the operand value (the buffer itself when depth is 0) */
  int depth;     /* number of rock.transform ops between the buffer and the operand */
} kl_fu_use;

/* Every use of buf through views, in use-list order (depth-first). *out is malloc'd
 * (free it); returns the count. */
int kl_fu_uses(kl_value *buf, kl_fu_use **out);
/* buf is the result of a rock.alloc in global memory. */
bool kl_fu_is_global_alloc(const kl_value *buf);
/* Operand i of op is the output a fusing op writes / an input it reads. */
bool kl_fu_fusing_write(const kl_op *op, int i);
bool kl_fu_fusing_read(const kl_op *op, int i);
/* The composed view of v's rock.transform chain (v's shape -> the underlying buffer's
 * coordinates, simplified; the identity when v has no chain); *under = the buffer. */
kl_view *kl_fu_chain_view(kl_value *v, kl_value **under, char *err, size_t n);
/* A short printable name of a value for messages: "%hint" when it has a name hint, else
 * "the <op> at <loc>" (buf: n bytes; returns buf). */
const char *kl_fu_value_name(const kl_value *v, char *buf, size_t n);

/* Input fusion: see the file comment. Returns E's input count (inputs[j], views[j] for
 * each; views[j] owned by the caller), or -1 with the reason in err. */
typedef struct kl_fu_input {
  kl_value *base;     /* the buffer input j of the writer reads (kernel argument or alloc) */
  kl_view *view;      /* GEMM operand coordinates -> base coordinates */
  int writer_operand; /* j: the operand index of the writer */
} kl_fu_input;
int kl_fu_operand_inputs(kl_value *opnd, kl_op **writer, kl_value **alloc, kl_fu_input **inputs, char *err, size_t n);
void kl_fu_inputs_free(kl_fu_input *inputs, int n);
#endif

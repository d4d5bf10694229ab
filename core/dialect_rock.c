/* dialect_rock.c — registration and local verifiers of the rock ops. */
#include "core/dialect_rock.h"
#include "core/dialect_graph.h"
#include "core/infer.h"
#include <string.h>

bool kl_is_kernel(const kl_op *op) { return op && !strcmp(op->name, "func.func") && kl_op_attr(op, "kernel"); }

kl_value *kl_rock_underlying(kl_value *v, kl_op **ops, int *n, int max) {
  *n = 0;
  while (v->def && !strcmp(v->def->name, "rock.transform")) {
    if (*n < max) ops[*n] = v->def;
    (*n)++;
    v = v->def->opnds[0].value;
  }
  return v;
}

static bool is_buffer(const kl_value *v) { return v->type->kind == KL_TY_BUFFER; }
static kl_status all_buffers(kl_op *op, int from, int to) {
  for (int i = from; i < to && i < op->nopnds; i++)
    if (!is_buffer(op->opnds[i].value))
      return kl_emit_error(op->ctx, op->loc, "'%s' operand %d must be a buffer, got %s", op->name, i,
                           kl_type_str(op->opnds[i].value->type));
  return KL_OK;
}
static kl_status verify_buffers(kl_op *op) { return all_buffers(op, 0, op->nopnds); }
/* rock.conv: buffers [N, C, S...], [K, C/G, W...], [N, K, O...] of one rank 3, 4 or 5, the
 * graph conv's attributes (kl_graph_conv_params), O as kl_infer_conv gives it */
static kl_status verify_conv(kl_op *op) {
  if (verify_buffers(op) != KL_OK) return KL_ERR;
  const kl_type *in = op->opnds[0].value->type, *f = op->opnds[1].value->type, *o = op->opnds[2].value->type;
  int sp = in->rank - 2;
  if (sp < 1 || sp > KL_CONV_MAX_SPATIAL || f->rank != in->rank || o->rank != in->rank)
    return kl_emit_error(op->ctx, op->loc,
                         "'rock.conv' needs buffers of one rank 3, 4 or 5 (1-D to 3-D: [N,C,spatial...], "
                         "[K,C/G,window...], [N,K,spatial...]), got %s, %s, %s",
                         in->text, f->text, o->text);
  if (in->elem != f->elem)
    return kl_emit_error(op->ctx, op->loc, "'rock.conv' input and filter element types differ: %s, %s", in->text,
                         f->text);
  kl_conv_params p;
  if (!kl_graph_conv_params(op->ctx, op->loc, sp, op->nattrs, op->attrs, &p)) return KL_ERR;
  kl_shape si = kl_shape_make(in->rank, in->shape), sf = kl_shape_make(f->rank, f->shape), so;
  char err[512];
  if (kl_infer_conv(&si, &sf, &p, &so, err, sizeof err)) return kl_emit_error(op->ctx, op->loc, "'rock.conv' %s", err);
  for (int i = 0; i < o->rank; i++)
    if (so.dim[i] != o->shape[i]) {
      char b[256];
      return kl_emit_error(op->ctx, op->loc, "'rock.conv' output %s does not have the conv's shape %s", o->text,
                           kl_shape_format(&so, b, sizeof b));
    }
  return KL_OK;
}
static bool same_shape(const kl_type *a, const kl_type *b) {
  if (a->rank != b->rank) return false;
  for (int i = 0; i < a->rank; i++)
    if (a->shape[i] != b->shape[i]) return false;
  return true;
}
static kl_status verify_transform(kl_op *op) {
  if (verify_buffers(op) != KL_OK) return KL_ERR;
  const kl_attr *v = kl_op_attr(op, "view");
  if (!v || v->kind != KL_AT_EXT || strcmp(v->ext->name, "view"))
    return kl_emit_error(op->ctx, op->loc, "'rock.transform' needs a #view<...> attribute 'view'");
  if (op->results[0].type->kind != KL_TY_BUFFER || op->results[0].type->elem != op->opnds[0].value->type->elem)
    return kl_emit_error(op->ctx, op->loc, "'rock.transform' result must be a buffer of the source's element type");
  return KL_OK;
}
static kl_status verify_gemm(kl_op *op) {
  if (verify_buffers(op) != KL_OK) return KL_ERR;
  const kl_type *a = op->opnds[0].value->type, *b = op->opnds[1].value->type, *c = op->opnds[2].value->type;
  if (a->rank != 3 || b->rank != 3 || c->rank != 3)
    return kl_emit_error(op->ctx, op->loc, "'%s' needs rank-3 operands [G,K,M], [G,K,N], [G,M,N]", op->name);
  if (a->shape[0] != b->shape[0] || a->shape[0] != c->shape[0] || a->shape[1] != b->shape[1] ||
      a->shape[2] != c->shape[1] || b->shape[2] != c->shape[2])
    return kl_emit_error(op->ctx, op->loc,
                         "'%s' shapes do not agree: a %s, b %s, c %s (want [G,K,M], [G,K,N], [G,M,N])", op->name,
                         a->text, b->text, c->text);
  if (a->elem != b->elem) return kl_emit_error(op->ctx, op->loc, "'%s' a and b element types differ", op->name);
  return KL_OK;
}
static kl_status verify_elementwise(kl_op *op) {
  if (verify_buffers(op) != KL_OK) return KL_ERR;
  if (op->nopnds < 1) return kl_emit_error(op->ctx, op->loc, "'rock.elementwise' needs an output operand");
  const kl_type *out = op->opnds[op->nopnds - 1].value->type;
  for (int i = 0; i + 1 < op->nopnds; i++)
    if (!same_shape(op->opnds[i].value->type, out))
      return kl_emit_error(op->ctx, op->loc,
                           "'rock.elementwise' input %d %s does not have the output's shape %s (apply a view)", i,
                           op->opnds[i].value->type->text, out->text);
  kl_block *b = op->regions[0].first;
  if (!b || b->nargs != op->nopnds - 1)
    return kl_emit_error(op->ctx, op->loc, "'rock.elementwise' body must take one scalar per input (%d)",
                         op->nopnds - 1);
  for (int i = 0; i < b->nargs; i++)
    if (b->args[i]->type != op->opnds[i].value->type->elem)
      return kl_emit_error(op->ctx, op->loc, "'rock.elementwise' body argument %d is %s, input element type is %s", i,
                           b->args[i]->type->text, op->opnds[i].value->type->elem->text);
  kl_op *y = b->last;
  if (!y || strcmp(y->name, "rock.yield") || y->nopnds != 1 || y->opnds[0].value->type != out->elem)
    return kl_emit_error(op->ctx, op->loc, "'rock.elementwise' body must end with rock.yield of one %s",
                         out->elem->text);
  return KL_OK;
}
/* rock.reduce / rock.softmax: (in, out) plain, or fused (2 regions): prologue inputs
 * [0, n_prologue) (each of the reduction input's shape), epilogue inputs, out; the
 * prologue body takes one scalar per prologue input, the epilogue body one per epilogue
 * input plus the reduction's value at each index listed in result_args. */
static kl_status verify_reduction(kl_op *op) {
  if (verify_buffers(op) != KL_OK) return KL_ERR;
  if (op->nregions == 0) {
    if (op->nopnds != 2) return kl_emit_error(op->ctx, op->loc, "'%s' needs operands (in, out)", op->name);
    return KL_OK;
  }
  int64_t np = 0, ra[64];
  int nr = kl_op_attr_i64s(op, "result_args", ra, 64);
  if (op->nregions != 2 || !kl_op_attr_i64(op, "n_prologue", &np) || np < 1 || np >= op->nopnds || nr < 1)
    return kl_emit_error(op->ctx, op->loc,
                         "fused '%s' needs 2 regions (prologue, epilogue), n_prologue in [1, operands) and "
                         "result_args",
                         op->name);
  kl_block *pb = op->regions[0].first, *eb = op->regions[1].first;
  int64_t ne = op->nopnds - 1 - np;
  if (!pb || pb->nargs != np || !eb || eb->nargs != ne + nr)
    return kl_emit_error(op->ctx, op->loc, "fused '%s': the bodies take %lld and %lld + %d scalars", op->name,
                         (long long)np, (long long)ne, nr);
  const kl_type *in = op->opnds[0].value->type;
  for (int64_t i = 1; i < np; i++)
    if (!same_shape(op->opnds[i].value->type, in))
      return kl_emit_error(op->ctx, op->loc, "fused '%s': prologue input %lld %s does not have the shape %s", op->name,
                           (long long)i, op->opnds[i].value->type->text, in->text);
  const kl_type *out = op->opnds[op->nopnds - 1].value->type;
  for (int64_t i = np; i + 1 < op->nopnds; i++)
    if (!same_shape(op->opnds[i].value->type, out))
      return kl_emit_error(op->ctx, op->loc, "fused '%s': epilogue input %lld %s does not have the output's shape %s",
                           op->name, (long long)i, op->opnds[i].value->type->text, out->text);
  for (int i = 0; i < nr; i++)
    if (ra[i] < 0 || ra[i] >= eb->nargs)
      return kl_emit_error(op->ctx, op->loc, "fused '%s': result_args out of range", op->name);
  kl_op *y = pb->last, *z = eb->last;
  if (!y || strcmp(y->name, "rock.yield") || y->nopnds != 1 || !z || strcmp(z->name, "rock.yield") || z->nopnds != 1 ||
      z->opnds[0].value->type != out->elem)
    return kl_emit_error(op->ctx, op->loc, "fused '%s': the bodies must end with rock.yield (epilogue: of one %s)",
                         op->name, out->elem->text);
  return KL_OK;
}
static kl_status verify_buffers_first(kl_op *op) {
  if (!is_buffer(op->opnds[0].value))
    return kl_emit_error(op->ctx, op->loc, "'%s' operand 0 must be a buffer", op->name);
  for (int i = 1; i < op->nopnds; i++)
    if (op->opnds[i].value->type->kind != KL_TY_INDEX)
      return kl_emit_error(op->ctx, op->loc, "'%s' index %d must be index", op->name, i - 1);
  return KL_OK;
}
static kl_status verify_id(kl_op *op) {
  if (op->results[0].type->kind != KL_TY_INDEX)
    return kl_emit_error(op->ctx, op->loc, "'%s' produces an index", op->name);
  return KL_OK;
}
static kl_status verify_loadstore(kl_op *op) {
  bool load = !strcmp(op->name, "rock.load");
  int bi = load ? 0 : 1;
  if (op->nopnds <= bi || !is_buffer(op->opnds[bi].value))
    return kl_emit_error(op->ctx, op->loc, "'%s' needs a buffer operand", op->name);
  const kl_type *bt = op->opnds[bi].value->type;
  if (op->nopnds - bi - 1 != bt->rank)
    return kl_emit_error(op->ctx, op->loc, "'%s' needs %d indices for %s, got %d", op->name, bt->rank, bt->text,
                         op->nopnds - bi - 1);
  for (int i = bi + 1; i < op->nopnds; i++)
    if (op->opnds[i].value->type->kind != KL_TY_INDEX)
      return kl_emit_error(op->ctx, op->loc, "'%s' index %d must be index", op->name, i - bi - 1);
  const kl_type *vt = load ? op->results[0].type : op->opnds[0].value->type;
  const kl_type *et = vt->kind == KL_TY_VECTOR ? vt->elem : vt;
  if (et != bt->elem)
    return kl_emit_error(op->ctx, op->loc, "'%s' value type %s does not match the buffer's element type %s", op->name,
                         vt->text, bt->elem->text);
  return KL_OK;
}

/* rock.atomic_rmw(%x, %buf, %i...) {kind = "add" | "max" | "min"}: rock.store's operands;
 * the element becomes elem + x (or max / min(elem, x), NaN propagating for floats)
 * atomically (passes/lower_atomic.h). */
static kl_status verify_atomic_rmw(kl_op *op) {
  const char *k = kl_op_attr_string(op, "kind");
  if (!k || (strcmp(k, "add") && strcmp(k, "max") && strcmp(k, "min")))
    return kl_emit_error(op->ctx, op->loc, "'rock.atomic_rmw' needs kind = \"add\", \"max\" or \"min\"");
  return verify_loadstore(op);
}

/* rock.lane_shuffle(%x) {xor = N}: x of lane (this lane XOR N) of the wave; N a power of
 * two in [1, 32]; x and the result one scalar of f32, f64, i32 or i64. */
static kl_status verify_lane_shuffle(kl_op *op) {
  const kl_type *t = op->opnds[0].value->type;
  int64_t x;
  if (t->kind != KL_TY_F32 && t->kind != KL_TY_F64 && t->kind != KL_TY_I32 && t->kind != KL_TY_I64)
    return kl_emit_error(op->ctx, op->loc, "'rock.lane_shuffle' operand must be f32, f64, i32 or i64, got %s",
                         kl_type_str(t));
  if (op->results[0].type != t)
    return kl_emit_error(op->ctx, op->loc, "'rock.lane_shuffle' result must have the operand's type %s", t->text);
  if (!kl_op_attr_i64(op, "xor", &x) || x < 1 || x > 32 || (x & (x - 1)))
    return kl_emit_error(op->ctx, op->loc,
                         "'rock.lane_shuffle' needs an integer attribute 'xor', a power of two in [1, 32]");
  return KL_OK;
}

/* rock.ldmatrix(%lds, %i...) {num = N, trans = B}: NVIDIA's warp-level matrix load
 * (ldmatrix.sync.aligned.m8n8.xN[.trans].shared.b16; N = 1, 2, 4): every lane of the warp
 * gives the coordinates of one 16-byte row (lanes 8j..8j+7: rows 0..7 of matrix j < N) of
 * a 16-bit LDS buffer, 16-byte aligned; the result vector<2N x T> of lane l holds, per
 * matrix j, elements 2j, 2j+1 = row l/4, columns 2(l%4), 2(l%4)+1 (trans: rows
 * 2(l%4), 2(l%4)+1 of column l/4). All lanes of the warp execute it together. */
static kl_status verify_ldmatrix(kl_op *op) {
  kl_status st = verify_buffers_first(op);
  if (st != KL_OK) return st;
  const kl_type *bt = op->opnds[0].value->type, *rt = op->results[0].type;
  int64_t num = 0;
  const kl_attr *tr = kl_op_attr(op, "trans");
  if (!kl_op_attr_i64(op, "num", &num) || (num != 1 && num != 2 && num != 4))
    return kl_emit_error(op->ctx, op->loc, "'rock.ldmatrix' needs an integer attribute 'num': 1, 2 or 4");
  if (tr && tr->kind != KL_AT_BOOL)
    return kl_emit_error(op->ctx, op->loc, "'rock.ldmatrix' attribute 'trans' must be a bool, got %s", tr->text);
  if (bt->space != KL_SPACE_LDS || kl_type_bits(bt->elem) != 16)
    return kl_emit_error(op->ctx, op->loc, "'rock.ldmatrix' reads an LDS buffer of 16-bit elements, got %s", bt->text);
  if (op->nopnds - 1 != bt->rank)
    return kl_emit_error(op->ctx, op->loc, "'rock.ldmatrix' needs %d indices for %s, got %d", bt->rank, bt->text,
                         op->nopnds - 1);
  if (rt->kind != KL_TY_VECTOR || rt->elem != bt->elem || rt->shape[0] != 2 * num)
    return kl_emit_error(op->ctx, op->loc, "'rock.ldmatrix' with num = %lld produces vector<%lldx%s>, got %s",
                         (long long)num, (long long)(2 * num), bt->elem->text, kl_type_str(rt));
  return KL_OK;
}

/* rock.stmatrix(%v, %lds, %i...) {num = N, trans = B}: NVIDIA's warp-level matrix store
 * (stmatrix.sync.aligned.m8n8.xN[.trans].shared.b16; N = 1, 2, 4; sm_90+), ldmatrix's
 * mirror: every lane gives the coordinates of one 16-byte row (lanes 8j..8j+7: rows 0..7
 * of matrix j < N) of a 16-bit LDS buffer, 16-byte aligned; %v : vector<2N x T> of lane l
 * holds, per matrix j, elements 2j, 2j+1 = row l/4, columns 2(l%4), 2(l%4)+1 (trans:
 * they go to rows 2(l%4), 2(l%4)+1 of column l/4). All lanes of the warp execute it. */
static kl_status verify_stmatrix(kl_op *op) {
  if (op->nopnds < 2)
    return kl_emit_error(op->ctx, op->loc, "'rock.stmatrix' needs a value, an LDS buffer and its indices");
  const kl_type *vt = op->opnds[0].value->type, *bt = op->opnds[1].value->type;
  int64_t num = 0;
  const kl_attr *tr = kl_op_attr(op, "trans");
  if (!kl_op_attr_i64(op, "num", &num) || (num != 1 && num != 2 && num != 4))
    return kl_emit_error(op->ctx, op->loc, "'rock.stmatrix' needs an integer attribute 'num': 1, 2 or 4");
  if (tr && tr->kind != KL_AT_BOOL)
    return kl_emit_error(op->ctx, op->loc, "'rock.stmatrix' attribute 'trans' must be a bool, got %s", tr->text);
  if (bt->kind != KL_TY_BUFFER || bt->space != KL_SPACE_LDS || kl_type_bits(bt->elem) != 16)
    return kl_emit_error(op->ctx, op->loc, "'rock.stmatrix' writes an LDS buffer of 16-bit elements, got %s",
                         kl_type_str(bt));
  if (op->nopnds - 2 != bt->rank)
    return kl_emit_error(op->ctx, op->loc, "'rock.stmatrix' needs %d indices for %s, got %d", bt->rank, bt->text,
                         op->nopnds - 2);
  for (int i = 2; i < op->nopnds; i++)
    if (op->opnds[i].value->type->kind != KL_TY_INDEX)
      return kl_emit_error(op->ctx, op->loc, "'rock.stmatrix' index %d is not an index", i - 2);
  if (vt->kind != KL_TY_VECTOR || vt->elem != bt->elem || vt->shape[0] != 2 * num)
    return kl_emit_error(op->ctx, op->loc, "'rock.stmatrix' with num = %lld stores vector<%lldx%s>, got %s",
                         (long long)num, (long long)(2 * num), bt->elem->text, kl_type_str(vt));
  return KL_OK;
}

/* rock.async_copy(%src, %si..., %dst, %di...[, %valid]) {len = V}: V consecutive elements
 * of the global buffer src from (si...) to the LDS buffer dst at (di...), asynchronously
 * (NVIDIA cp.async: complete after a later rock.async_commit / rock.async_wait; elsewhere
 * a plain copy); with valid false, V zeros (src is not read). V * element bytes is 4, 8 or
 * 16; both addresses are aligned to it. rock.async_commit closes the group of this
 * thread's copies issued since the last commit; rock.async_wait {pending = N} waits until
 * at most N of this thread's committed groups are incomplete (a barrier makes other
 * threads' copies visible). */
static kl_status verify_async_copy(kl_op *op) {
  int64_t len = 0;
  if (op->nopnds < 2 || !is_buffer(op->opnds[0].value))
    return kl_emit_error(op->ctx, op->loc, "'rock.async_copy' operand 0 must be a buffer");
  const kl_type *st = op->opnds[0].value->type;
  int di = 1 + st->rank;
  if (op->nopnds <= di || !is_buffer(op->opnds[di].value))
    return kl_emit_error(op->ctx, op->loc, "'rock.async_copy' needs %d source indices for %s, then the LDS buffer",
                         st->rank, st->text);
  const kl_type *dt = op->opnds[di].value->type;
  int n = op->nopnds - di - 1 - dt->rank;
  if (n != 0 && n != 1)
    return kl_emit_error(op->ctx, op->loc, "'rock.async_copy' needs %d destination indices for %s and an optional i1",
                         dt->rank, dt->text);
  for (int i = 1; i < op->nopnds; i++)
    if (i != di && !(n == 1 && i == op->nopnds - 1) && op->opnds[i].value->type->kind != KL_TY_INDEX)
      return kl_emit_error(op->ctx, op->loc, "'rock.async_copy' operand %d must be an index", i);
  if (n == 1 && op->opnds[op->nopnds - 1].value->type->kind != KL_TY_I1)
    return kl_emit_error(op->ctx, op->loc, "'rock.async_copy' last operand (valid) must be i1");
  if (dt->space != KL_SPACE_LDS || st->space == KL_SPACE_LDS || st->elem != dt->elem)
    return kl_emit_error(op->ctx, op->loc,
                         "'rock.async_copy' copies a global buffer into an LDS buffer of the same "
                         "element type, got %s -> %s",
                         st->text, dt->text);
  int64_t bytes = kl_op_attr_i64(op, "len", &len) ? len * kl_type_bits(st->elem) / 8 : 0;
  if (kl_type_bits(st->elem) % 8 || (bytes != 4 && bytes != 8 && bytes != 16))
    return kl_emit_error(op->ctx, op->loc,
                         "'rock.async_copy' needs an integer attribute 'len' of 4, 8 or 16 bytes "
                         "of %s",
                         st->elem->text);
  return KL_OK;
}
static kl_status verify_async_wait(kl_op *op) {
  int64_t n;
  if (!kl_op_attr_i64(op, "pending", &n) || n < 0 || n > 7)
    return kl_emit_error(op->ctx, op->loc, "'rock.async_wait' needs an integer attribute 'pending' in [0, 7]");
  return KL_OK;
}
/* Hopper warpgroup MMAs (passes/rock_wgmma.h): rock.wgmma_desc(%lds, %i...) {lbo, sbo,
 * offset} -> i64, the matrix descriptor of the LDS element at %i plus offset bytes; rock.wgmma(%da_0 : i64, %db_0 : i64,
 * ..., %c : vector<N/2 x f32>) {instr} -> c's type (k >= 1 descriptor pairs: k chained MMAs); rock.wgmma_sync(%v...) {step = "fence" |
 * "commit" | "wait" | "proxy_fence", pending (wait)} -> the operands' types. */
static kl_status verify_wgmma_desc(kl_op *op) {
  kl_status st = verify_buffers_first(op);
  if (st != KL_OK) return st;
  const kl_type *bt = op->opnds[0].value->type;
  int64_t lbo = 0, sbo = 0;
  if (bt->space != KL_SPACE_LDS || op->nopnds - 1 != bt->rank || op->results[0].type->kind != KL_TY_I64)
    return kl_emit_error(op->ctx, op->loc, "'rock.wgmma_desc' takes an LDS buffer and %d indices -> i64", bt->rank);
  if (!kl_op_attr_i64(op, "lbo", &lbo) || !kl_op_attr_i64(op, "sbo", &sbo) || lbo <= 0 || sbo <= 0 || lbo % 16 ||
      sbo % 16 || lbo >= (1 << 18) || sbo >= (1 << 18))
    return kl_emit_error(op->ctx, op->loc,
                         "'rock.wgmma_desc' needs integer attributes 'lbo' and 'sbo': byte offsets, multiples of 16 "
                         "below 2^18");
  int64_t off = 0;
  const kl_attr *oa = kl_op_attr(op, "offset");
  if (oa && (!kl_op_attr_i64(op, "offset", &off) || off < 0 || off % 16 || off >= (1 << 18)))
    return kl_emit_error(op->ctx, op->loc,
                         "'rock.wgmma_desc': 'offset' must be an integer byte offset, a multiple of 16 below 2^18");
  int64_t sw = 0;
  if (kl_op_attr(op, "swizzle") && (!kl_op_attr_i64(op, "swizzle", &sw) || (sw && sw != 32 && sw != 64 && sw != 128)))
    return kl_emit_error(op->ctx, op->loc, "'rock.wgmma_desc': 'swizzle' must be 0, 32, 64 or 128 (bytes)");
  return KL_OK;
}
static kl_status verify_wgmma(kl_op *op) {
  /* (%da_0, %db_0, ..., %da_k-1, %db_k-1, %c): k >= 1 chained MMAs on one accumulator */
  const kl_type *c = op->opnds[op->nopnds - 1].value->type;
  bool ok = op->nopnds >= 3 && op->nopnds % 2 == 1 && c->kind == KL_TY_VECTOR && c->elem->kind == KL_TY_F32 &&
      op->results[0].type == c && kl_op_attr_string(op, "instr");
  for (int i = 0; ok && i < op->nopnds - 1; i++) ok = op->opnds[i].value->type->kind == KL_TY_I64;
  if (!ok)
    return kl_emit_error(op->ctx, op->loc,
                         "'rock.wgmma' takes (i64, i64, ..., vector<N x f32>): pairs of descriptors, then the "
                         "accumulator -> its type, with a string attribute 'instr'");
  return KL_OK;
}
static kl_status verify_wgmma_sync(kl_op *op) {
  const char *step = kl_op_attr_string(op, "step");
  int64_t pending = -1;
  if (!step || (strcmp(step, "fence") && strcmp(step, "commit") && strcmp(step, "wait") && strcmp(step, "proxy_fence")))
    return kl_emit_error(op->ctx, op->loc,
                         "'rock.wgmma_sync' needs a string attribute 'step': fence, commit, wait or proxy_fence");
  if (!strcmp(step, "wait") && (!kl_op_attr_i64(op, "pending", &pending) || pending < 0 || pending > 7))
    return kl_emit_error(op->ctx, op->loc, "'rock.wgmma_sync' wait needs an integer attribute 'pending' in [0, 7]");
  if (op->nresults != op->nopnds) return kl_emit_error(op->ctx, op->loc, "'rock.wgmma_sync' returns its operands");
  for (int i = 0; i < op->nopnds; i++)
    if (op->results[i].type != op->opnds[i].value->type || op->results[i].type->kind != KL_TY_VECTOR)
      return kl_emit_error(op->ctx, op->loc, "'rock.wgmma_sync' passes vectors through (result i = operand i)");
  return KL_OK;
}

/* TMA + mbarrier (passes/rock_tma.h). rock.mbarrier(%bars, %i[, %x]) {step = "init"
 * (count) | "arrive_expect_tx" (bytes) | "arrive" | "arrive_remote" (%x: the CTA rank) | "wait"
 * (%x: the phase parity) | "inval"}: mbarrier %i of the LDS buffer<W x i64>; arrive_remote
 * arrives on mbarrier %i of the cluster's CTA of rank %x (its own where there is no cluster); rock.tma_load(%src, %bars, %bi, %lds, %li..., %c...) {dims, strides, box,
 * offset, swizzle}: the box at coordinates %c (innermost first) of the tensor map over the
 * global buffer src (offset elements from its base, dims elements, strides bytes of dims
 * 1..), dense row-major (box[0] fastest) into LDS from element (%li...), its byte addresses
 * through the swizzle of `swizzle` bytes (32 / 64 / 128, kl_swizzle_addr; absent or 0:
 * none), completing on mbarrier %bi. {multicast = C, multicast_dim = d} (thread-block clusters):
 * the op stands for C boxes, box j at coordinate d + j * box[d] written from LDS element
 * (%li...) + j * the box's elements; in a cluster of C CTAs (NVIDIA) rank j issues box j to
 * every CTA of the cluster, completing its bytes on each one's mbarrier %bi; elsewhere the
 * executing workgroup loads all C boxes. {im2col = [loW, loH, upW, upH, esW, esH]} (im2col mode,
 * passes/rock_tma_im2col.h): dims {C, W, H, N}, box {channels per pixel, pixels per column, 1,
 * 1}, two more index operands after the coordinates, the im2col offsets {w, h}; the box's pixels
 * walk the bounding box (corners lo / up, the upper one from each dim's end, traversal strides
 * es) from the coordinates' pixel. rock.barrier {scope = "cluster"}: a barrier of every
 * thread of the cluster (the block's barrier where there is no cluster). */
static bool is_index(kl_op *op, int i) { return op->opnds[i].value->type->kind == KL_TY_INDEX; }
static kl_status verify_mbarrier(kl_op *op) {
  const char *step = kl_op_attr_string(op, "step");
  int64_t v = 0;
  if (op->nopnds < 2 || !is_buffer(op->opnds[0].value) || op->opnds[0].value->type->space != KL_SPACE_LDS ||
      op->opnds[0].value->type->rank != 1 || op->opnds[0].value->type->elem->kind != KL_TY_I64 || !is_index(op, 1))
    return kl_emit_error(op->ctx, op->loc, "'rock.mbarrier' takes an LDS buffer<W x i64> and an index");
  if (!step ||
      (strcmp(step, "init") && strcmp(step, "arrive_expect_tx") && strcmp(step, "arrive") && strcmp(step, "wait") &&
       strcmp(step, "arrive_remote") && strcmp(step, "inval")))
    return kl_emit_error(op->ctx, op->loc,
                         "'rock.mbarrier' needs a string attribute 'step': init, arrive_expect_tx, arrive, "
                         "arrive_remote, wait or inval");
  if ((op->nopnds == 3) != (!strcmp(step, "wait") || !strcmp(step, "arrive_remote")) ||
      (op->nopnds == 3 && !is_index(op, 2)))
    return kl_emit_error(op->ctx, op->loc,
                         "'rock.mbarrier' wait and arrive_remote (only) take a third operand: the phase parity or the "
                         "CTA rank (index)");
  if (!strcmp(step, "init") && (!kl_op_attr_i64(op, "count", &v) || v < 1 || v > 1024))
    return kl_emit_error(op->ctx, op->loc, "'rock.mbarrier' init needs an integer attribute 'count' in [1, 1024]");
  if (!strcmp(step, "arrive_expect_tx") && (!kl_op_attr_i64(op, "bytes", &v) || v < 1 || v >= (1 << 20)))
    return kl_emit_error(op->ctx, op->loc,
                         "'rock.mbarrier' arrive_expect_tx needs an integer attribute 'bytes' in [1, 2^20)");
  return KL_OK;
}
/* rock.setmaxnreg {action = "inc" | "dec", regs}: the executing warpgroup's registers per
 * thread become regs (setmaxnreg.<action>.sync.aligned.u32; warp specialization,
 * passes/rock_tma.h) */
static kl_status verify_setmaxnreg(kl_op *op) {
  const char *a = kl_op_attr_string(op, "action");
  int64_t r = 0;
  if (!a || (strcmp(a, "inc") && strcmp(a, "dec")) || !kl_op_attr_i64(op, "regs", &r) || r < 24 || r > 256 || r % 8)
    return kl_emit_error(op->ctx, op->loc,
                         "'rock.setmaxnreg' needs action = \"inc\" or \"dec\" and regs, a multiple of 8 in [24, 256]");
  return KL_OK;
}
static kl_status verify_tma_load(kl_op *op) {
  int64_t dims[8], strides[8], box[8], off = -1;
  int nd = kl_op_attr_i64s(op, "dims", dims, 8), ns = kl_op_attr_i64s(op, "strides", strides, 8),
      nb = kl_op_attr_i64s(op, "box", box, 8);
  if (op->nopnds < 4 || !is_buffer(op->opnds[0].value) || !is_buffer(op->opnds[1].value) ||
      !is_buffer(op->opnds[3].value) || !is_index(op, 2))
    return kl_emit_error(op->ctx, op->loc,
                         "'rock.tma_load' takes (global buffer, LDS buffer<W x i64>, index, LDS buffer, indices...)");
  const kl_type *st = op->opnds[0].value->type, *bt = op->opnds[1].value->type, *dt = op->opnds[3].value->type;
  if (st->space != KL_SPACE_GLOBAL || bt->space != KL_SPACE_LDS || bt->rank != 1 || bt->elem->kind != KL_TY_I64 ||
      dt->space != KL_SPACE_LDS || dt->elem != st->elem || kl_type_bits(st->elem) % 8)
    return kl_emit_error(op->ctx, op->loc,
                         "'rock.tma_load' copies a global buffer into an LDS buffer of the same byte-sized element "
                         "type, completing on an LDS buffer<W x i64> of mbarriers; got %s -> %s, %s",
                         st->text, dt->text, bt->text);
  if (nd < 1 || nd > 5 || nb != nd || ns != nd - 1 || !kl_op_attr_i64(op, "offset", &off) || off < 0)
    return kl_emit_error(op->ctx, op->loc,
                         "'rock.tma_load' needs integer arrays 'dims' (1..5), 'box' (as many), 'strides' (one "
                         "fewer) and an integer 'offset' >= 0");
  int64_t eb = kl_type_bits(st->elem) / 8, ic[8];
  int ni = kl_op_attr(op, "im2col") ? kl_op_attr_i64s(op, "im2col", ic, 8) : 0;
  if (kl_op_attr(op, "im2col") &&
      (ni != 6 || nd != 4 || box[2] != 1 || box[3] != 1 || kl_op_attr(op, "multicast") || ic[4] < 1 || ic[4] > 8 ||
       ic[5] < 1 || ic[5] > 8 || ic[0] < -128 || ic[0] > 127 || ic[1] < -128 || ic[1] > 127 || ic[2] < -128 ||
       ic[2] > 127 || ic[3] < -128 || ic[3] > 127))
    return kl_emit_error(op->ctx, op->loc,
                         "'rock.tma_load': 'im2col' takes [loW, loH, upW, upH, esW, esH] (corners in [-128, 127], "
                         "strides 1..8) on a rank-4 map with box {c, pixels, 1, 1}, no multicast");
  if (op->nopnds != 4 + dt->rank + nd + (ni ? 2 : 0))
    return kl_emit_error(op->ctx, op->loc, "'rock.tma_load' needs %d LDS indices and %d coordinates%s, got %d operands",
                         dt->rank, nd, ni ? " and 2 im2col offsets" : "", op->nopnds);
  for (int i = 4; i < op->nopnds; i++)
    if (!is_index(op, i)) return kl_emit_error(op->ctx, op->loc, "'rock.tma_load' operand %d must be an index", i);
  for (int i = 0; i < nd; i++)
    if (dims[i] < 1 || dims[i] > ((int64_t)1 << 32) || box[i] < 1 || box[i] > 256 ||
        (i < nd - 1 && (strides[i] < 16 || strides[i] % 16 || strides[i] >= ((int64_t)1 << 40))))
      return kl_emit_error(op->ctx, op->loc,
                           "'rock.tma_load' dim %d: dims in [1, 2^32], box in [1, 256], strides multiples of 16 "
                           "bytes below 2^40",
                           i);
  if ((box[0] * eb) % 16 || (off * eb) % 16)
    return kl_emit_error(op->ctx, op->loc,
                         "'rock.tma_load': the box's inner extent and the offset must be multiples of 16 bytes");
  int64_t sw = 0;
  if (kl_op_attr(op, "swizzle") &&
      (!kl_op_attr_i64(op, "swizzle", &sw) || (sw && sw != 32 && sw != 64 && sw != 128) || (sw && box[0] * eb > sw)))
    return kl_emit_error(op->ctx, op->loc,
                         "'rock.tma_load': 'swizzle' must be 0, 32, 64 or 128 (bytes), at least the box's inner "
                         "extent (%lld bytes)",
                         (long long)(box[0] * eb));
  int64_t mc = 0, md = -1;
  if (kl_op_attr(op, "multicast") &&
      (!kl_op_attr_i64(op, "multicast", &mc) || mc < 2 || mc > 16 || !kl_op_attr_i64(op, "multicast_dim", &md) ||
       md < 0 || md >= nd))
    return kl_emit_error(op->ctx, op->loc,
                         "'rock.tma_load': 'multicast' must be 2..16 with 'multicast_dim' a dim of the box");
  return KL_OK;
}

/* rock.mma: the structure here; the instruction check (passes/rock_accel_lower.c, which
 * knows the matrix instructions) through the hook installed with kl_rock_set_mma_hook. */
static const char *const mma_hook_key = "rock.mma.hook";
void kl_rock_set_mma_hook(kl_ctx *ctx, const kl_rock_mma_hook *hook) {
  kl_ctx_set_user(ctx, mma_hook_key, (void *)hook);
}
static kl_status verify_mma(kl_op *op) {
  if (!kl_op_attr_string(op, "instr"))
    return kl_emit_error(op->ctx, op->loc,
                         "'rock.mma' needs a string attribute 'instr' naming a known matrix instruction, got none");
  const kl_rock_mma_hook *h = kl_ctx_get_user(op->ctx, mma_hook_key);
  return h && h->verify ? h->verify(op) : KL_OK;
}

#define KERN      KL_LEVEL_KERNEL
#define KERN_LOOP (KL_LEVEL_KERNEL | KL_LEVEL_LOOP)
#define ROCK(nm, mino, maxo, minr, maxr, nreg, tr, v, lv)                                           \
  {                                                                                                 \
    .name = "rock." nm, .traits = (tr), .levels = (lv), .min_operands = mino, .max_operands = maxo, \
    .min_results = minr, .max_results = maxr, .num_regions = nreg, .verify = v                      \
  }
static const char *const need_view[] = { "view", NULL };
static const char *const need_instr[] = { "instr", NULL };
// clang-format off
static const kl_opdef rock_ops[] = {
  { .name = "rock.transform", .traits = KL_TRAIT_PURE | KL_TRAIT_VIEW, .levels = KERN, .min_operands = 1, .max_operands = 1, .min_results = 1,
    .max_results = 1, .required_attrs = need_view, .verify = verify_transform, .summary = "a view of a buffer (no data moves)" },
  ROCK("alloc", 0, 0, 1, 1, 0, 0, NULL, KERN_LOOP),
  ROCK("conv", 3, 3, 0, 0, 0, 0, verify_conv, KERN),
  ROCK("gemm", 3, 3, 0, 0, 0, 0, verify_gemm, KERN),
  ROCK("gridwise_gemm", 3, 3, 0, 0, 0, 0, verify_gemm, KERN),
  ROCK("elementwise", 1, -1, 0, 0, 1, KL_TRAIT_FUSING, verify_elementwise, KERN),
  ROCK("reduce", 2, -1, 0, 0, -1, 0, verify_reduction, KERN),
  ROCK("softmax", 2, -1, 0, 0, -1, 0, verify_reduction, KERN),
  ROCK("yield", 0, -1, 0, 0, 0, KL_TRAIT_TERMINATOR, NULL, KERN),
  ROCK("workgroup_id", 0, 0, 1, 1, 0, KL_TRAIT_PURE, verify_id, KERN_LOOP),
  ROCK("workitem_id", 0, 0, 1, 1, 0, KL_TRAIT_PURE, verify_id, KERN_LOOP),
  ROCK("workgroup_count", 0, 0, 1, 1, 0, KL_TRAIT_PURE, verify_id, KERN_LOOP),
  ROCK("barrier", 0, 0, 0, 0, 0, 0, NULL, KERN_LOOP),
  { .name = "rock.lane_shuffle", .traits = KL_TRAIT_PURE, .levels = KERN_LOOP, .min_operands = 1, .max_operands = 1,
    .min_results = 1, .max_results = 1, .verify = verify_lane_shuffle,
    .summary = "the operand of lane (lane XOR xor) of the wave; a lane outside the wave (the host: 1 lane) reads its own" },
  ROCK("fill", 1, 1, 0, 0, 0, 0, verify_buffers, KERN),
  ROCK("threadwise_read_into", 2, -1, 0, 0, 0, 0, NULL, KERN),
  ROCK("threadwise_write_all", 2, -1, 0, 0, 0, 0, NULL, KERN),
  ROCK("threadwise_copy_async", 2, -1, 0, 0, 0, 0, NULL, KERN),
  ROCK("blockwise_gemm", 4, 4, 0, 0, 0, 0, NULL, KERN),
  ROCK("threadwise_gemm", 3, 3, 0, 0, 0, 0, verify_buffers, KERN),
  ROCK("load", 1, -1, 1, 1, 0, 0, verify_loadstore, KERN_LOOP),
  ROCK("prefetch", 1, -1, 0, 0, 0, 0, verify_buffers_first, KERN_LOOP),
  ROCK("store", 2, -1, 0, 0, 0, 0, verify_loadstore, KERN_LOOP),
  ROCK("atomic_rmw", 2, -1, 0, 0, 0, 0, verify_atomic_rmw, KERN_LOOP),
  { .name = "rock.ldmatrix", .levels = KERN_LOOP, .min_operands = 1, .max_operands = -1, .min_results = 1, .max_results = 1,
    .verify = verify_ldmatrix,
    .summary = "warp-level load of 1, 2 or 4 8x8 16-bit matrices from LDS, one row address per lane (NVIDIA ldmatrix)" },
  { .name = "rock.stmatrix", .levels = KERN_LOOP, .min_operands = 2, .max_operands = -1, .verify = verify_stmatrix,
    .summary = "warp-level store of 1, 2 or 4 8x8 16-bit matrices to LDS, one row address per lane (NVIDIA stmatrix, "
               "sm_90+)" },
  { .name = "rock.async_copy", .levels = KERN_LOOP, .min_operands = 2, .max_operands = -1, .verify = verify_async_copy,
    .summary = "asynchronous copy of 4, 8 or 16 bytes global -> LDS, zeros where not valid (NVIDIA cp.async)" },
  { .name = "rock.async_commit", .levels = KERN_LOOP, .summary = "closes this thread's group of rock.async_copy" },
  { .name = "rock.async_wait", .levels = KERN_LOOP, .verify = verify_async_wait,
    .summary = "waits until at most `pending` of this thread's async copy groups are incomplete" },
  { .name = "rock.mma", .traits = KL_TRAIT_PURE, .levels = KERN_LOOP, .min_operands = 3, .max_operands = 3, .min_results = 1,
    .max_results = 1, .required_attrs = need_instr, .verify = verify_mma,
    .summary = "one matrix instruction of a wave: D = A x B + C in the instruction's lane layouts (passes/rock_accel.h)" },
  { .name = "rock.wgmma_desc", .traits = KL_TRAIT_PURE, .levels = KERN_LOOP, .min_operands = 1, .max_operands = -1, .min_results = 1,
    .max_results = 1, .verify = verify_wgmma_desc,
    .summary = "the 64-bit wgmma matrix descriptor of an LDS element (passes/rock_wgmma.h)" },
  { .name = "rock.wgmma", .levels = KERN_LOOP, .min_operands = 3, .max_operands = -1, .min_results = 1,
    .max_results = 1, .required_attrs = need_instr, .verify = verify_wgmma,
    .summary = "wgmma.mma_async of a warpgroup, chained on one accumulator: D = A_k-1 x B_k-1 + (... + (A_0 x B_0 + C)), A and B in LDS through descriptors (passes/rock_wgmma.h)" },
  { .name = "rock.mbarrier", .levels = KERN_LOOP, .min_operands = 2, .max_operands = 3, .verify = verify_mbarrier,
    .summary = "mbarrier init / arrive.expect_tx / arrive / try_wait.parity loop / inval on an LDS buffer of mbarriers (passes/rock_tma.h)" },
  { .name = "rock.tma_load", .levels = KERN_LOOP, .min_operands = 4, .max_operands = -1, .verify = verify_tma_load,
    .summary = "one TMA box load global -> LDS completing on an mbarrier (cp.async.bulk.tensor; plain copies elsewhere; passes/rock_tma.h)" },
  { .name = "rock.setmaxnreg", .levels = KERN_LOOP, .verify = verify_setmaxnreg,
    .summary = "the executing warpgroup's registers per thread (setmaxnreg; warp specialization, passes/rock_tma.h)" },
  { .name = "rock.wgmma_sync", .levels = KERN_LOOP, .min_operands = 0, .max_operands = -1, .min_results = 0,
    .max_results = -1, .verify = verify_wgmma_sync,
    .summary = "wgmma.fence / commit_group / wait_group / fence.proxy.async, passing the accumulators through (passes/rock_wgmma.h)" },
};
// clang-format on
#undef ROCK
#undef KERN
#undef KERN_LOOP
void kl_register_rock_dialect(kl_ctx *ctx) {
  for (size_t i = 0; i < sizeof rock_ops / sizeof *rock_ops; i++) kl_register_op(ctx, &rock_ops[i]);
}

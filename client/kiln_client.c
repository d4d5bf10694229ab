/* kiln_client.c — reading and writing kiln bundle files (format: driver/bundle.h).
 * Plain C11 over bytes: only the C standard library. Every read is bounds-checked; every
 * count is checked against the bytes left before anything is allocated. */
#include "client/kiln_client.h"
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { HEADER_BYTES = 48, ENTRY_BYTES = 40, MAX_RANK = 16, MAX_STEPS = 4096 };
enum { SEC_META = 1, SEC_PLAN = 2, SEC_IR = 3, SEC_BINARY = 4, SEC_CONST = 5 };
static const char MAGIC[8] = { 'K', 'I', 'L', 'N', 'B', 'N', 'D', 'L' };

uint64_t kl_bundle_fnv1a64(const void *data, size_t n) {
  const unsigned char *p = data;
  uint64_t h = 0xcbf29ce484222325ull;
  for (size_t i = 0; i < n; i++) {
    h ^= p[i];
    h *= 0x100000001b3ull;
  }
  return h;
}

static void errf(char *err, size_t errlen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void errf(char *err, size_t errlen, const char *fmt, ...) {
  if (!err || !errlen) return;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(err, errlen, fmt, ap);
  va_end(ap);
}

/* ---- element types ---- */
static const struct {
  const char *name;
  int bytes;
} ELEMS[] = {
  { "i1", 1 },    { "i8", 1 },  { "u8", 1 },   { "i32", 4 }, { "i64", 8 },
  { "index", 8 }, { "f16", 2 }, { "bf16", 2 }, { "f32", 4 }, { "f64", 8 },
};
static int elem_bytes_of(const char *name) {
  for (size_t i = 0; i < sizeof ELEMS / sizeof *ELEMS; i++)
    if (name && !strcmp(ELEMS[i].name, name)) return ELEMS[i].bytes;
  return 0;
}
/* Bytes spanned by a buffer; false on overflow (limit 2^62). */
static bool span_bytes(int rank, const int64_t *shape, const int64_t *strides, int eb, uint64_t *out) {
  const uint64_t lim = 1ull << 62;
  uint64_t span = 1;
  for (int i = 0; i < rank; i++) {
    if (shape[i] < 0 || strides[i] < 0) return false;
    if (shape[i] == 0) {
      *out = 0;
      for (int j = i; j < rank; j++)
        if (shape[j] < 0 || strides[j] < 0) return false;
      return true;
    }
  }
  for (int i = 0; i < rank; i++) {
    uint64_t t;
    if (__builtin_mul_overflow((uint64_t)(shape[i] - 1), (uint64_t)strides[i], &t) || t > lim) return false;
    span += t;
    if (span > lim) return false;
  }
  uint64_t b;
  if (__builtin_mul_overflow(span, (uint64_t)eb, &b) || b > lim) return false;
  *out = b;
  return true;
}

/* ---- kiln's type text, the redundancy the client checks the plan against ----
 * "tensor<4x6xf32>", "buffer<64x64xf32, strides=[1,64], lds>", "tensor<f32>" (rank 0) or a
 * bare scalar "f32"; strides are printed only when not row-major (core/type.c). */
enum { SPACE_GLOBAL, SPACE_LDS, SPACE_PRIVATE };
typedef struct ptype {
  int elem_bytes, rank, space;
  char elem[8];
  int64_t shape[MAX_RANK], strides[MAX_RANK];
} ptype;
static size_t p_int(const char *s, size_t n, size_t i, int64_t *v) { /* digits at s[i..]; 0 if none or overflow */
  size_t j = i;
  int64_t x = 0;
  while (j < n && s[j] >= '0' && s[j] <= '9') {
    if (x > (INT64_MAX - (s[j] - '0')) / 10) return 0;
    x = x * 10 + (s[j++] - '0');
  }
  *v = x;
  return j - i;
}
static bool p_lit(const char *s, size_t n, size_t *i, const char *lit) {
  size_t k = strlen(lit);
  if (n - *i < k || memcmp(s + *i, lit, k)) return false;
  *i += k;
  return true;
}
/* Parses a type at s[0..n); returns the characters used, 0 if it is not one. */
static size_t parse_type(const char *s, size_t n, ptype *t) {
  memset(t, 0, sizeof *t);
  size_t i = 0;
  bool shaped = p_lit(s, n, &i, "tensor<") || p_lit(s, n, &i, "buffer<");
  bool buffer = shaped && s[0] == 'b';
  for (;;) { /* dims "Nx", then the element type */
    int64_t v;
    size_t k = shaped ? p_int(s, n, i, &v) : 0;
    if (!k) break;
    if (i + k >= n || s[i + k] != 'x' || t->rank == MAX_RANK) return 0;
    t->shape[t->rank++] = v;
    i += k + 1;
  }
  size_t e = i;
  while (e < n && e - i < sizeof t->elem - 1 && ((s[e] >= 'a' && s[e] <= 'z') || (s[e] >= '0' && s[e] <= '9'))) e++;
  memcpy(t->elem, s + i, e - i);
  t->elem[e - i] = 0;
  if (!(t->elem_bytes = elem_bytes_of(t->elem))) return 0;
  i = e;
  int64_t st = 1;
  for (int d = t->rank - 1; d >= 0; d--) {
    t->strides[d] = st;
    if (t->shape[d] > 1 && __builtin_mul_overflow(st, t->shape[d], &st)) st = INT64_MAX;
  }
  if (!shaped) return i;
  if (p_lit(s, n, &i, ", strides=[")) {
    for (int d = 0; d < t->rank; d++) {
      size_t k = p_int(s, n, i, &t->strides[d]);
      if (!k) return 0;
      i += k;
      if (d + 1 < t->rank && !p_lit(s, n, &i, ",")) return 0;
    }
    if (!p_lit(s, n, &i, "]")) return 0;
  }
  if (buffer && p_lit(s, n, &i, ", lds"))
    t->space = SPACE_LDS;
  else if (buffer && p_lit(s, n, &i, ", private"))
    t->space = SPACE_PRIVATE;
  return p_lit(s, n, &i, ">") ? i : 0;
}

/* ---- the IR text: the launch sizes each kernel was compiled for ----
 * The IR section is kiln's generic form: the module's ops sit at bracket depth 2 of
 *   "builtin.module"() ({ ... }) ...
 * and a kernel is  "func.func"() ({ body }) {..., block_size = B, grid_size = G, kernel,
 * ..., sym_name = "name"} ... on one line. grid_size and block_size default to 1 (as in
 * kiln); the LDS bytes are the sum over the body's "rock.alloc" ops whose result is a
 * buffer<..., lds> (elements x element bytes), kiln's rule (driver/program.c). */
static size_t skip_string(const char *s, size_t n, size_t i) { /* s[i] == '"' */
  for (i++; i < n; i++) {
    if (s[i] == '\\')
      i++;
    else if (s[i] == '"')
      return i + 1;
  }
  return n;
}
static bool opener(char c) { return c == '(' || c == '[' || c == '{'; }
static bool closer(char c) { return c == ')' || c == ']' || c == '}'; }
/* s[i] opens a group; the index after its closer, or n if it has none. */
static size_t skip_group(const char *s, size_t n, size_t i) {
  size_t depth = 0;
  while (i < n) {
    if (s[i] == '"') {
      i = skip_string(s, n, i);
      continue;
    }
    if (opener(s[i]))
      depth++;
    else if (closer(s[i]) && --depth == 0)
      return i + 1;
    i++;
  }
  return n;
}
static size_t skip_ws(const char *s, size_t n, size_t i) {
  while (i < n && (s[i] == ' ' || s[i] == '\n' || s[i] == '\t')) i++;
  return i;
}

typedef struct ir_kernel {
  int64_t grid, block, lds;
} ir_kernel;

/* The LDS bytes of the "rock.alloc" ops in s[b..e); -1 if one has a type the client cannot read. */
static int64_t region_lds(const char *s, size_t b, size_t e) {
  int64_t lds = 0;
  for (size_t i = b; i < e;) {
    if (s[i] != '"') {
      i++;
      continue;
    }
    size_t j = skip_string(s, e, i);
    if (j - i == 12 && !memcmp(s + i, "\"rock.alloc\"", 12)) {
      size_t k = skip_ws(s, e, j);
      if (k < e && s[k] == '(') k = skip_ws(s, e, skip_group(s, e, k));
      if (k < e && s[k] == '{') k = skip_ws(s, e, skip_group(s, e, k));
      if (!p_lit(s, e, &k, ": () -> ")) return -1;
      ptype t;
      if (!parse_type(s + k, e - k, &t)) return -1;
      if (t.space == SPACE_LDS) {
        int64_t numel = 1;
        for (int d = 0; d < t.rank; d++)
          if (__builtin_mul_overflow(numel, t.shape[d], &numel)) return -1;
        if (__builtin_mul_overflow(numel, (int64_t)t.elem_bytes, &numel) || __builtin_add_overflow(lds, numel, &lds))
          return -1;
      }
    }
    i = j;
  }
  return lds;
}

/* Finds kernel `name` in the IR text; false with a reason if it is not there or its
 * attributes cannot be read. */
static bool ir_find_kernel(const char *s, size_t n, const char *name, ir_kernel *out, char *why, size_t wn) {
  size_t depth = 0;
  for (size_t i = 0; i < n;) {
    if (opener(s[i])) {
      depth++;
      i++;
      continue;
    }
    if (closer(s[i])) {
      depth--;
      i++;
      continue;
    }
    if (s[i] != '"') {
      i++;
      continue;
    }
    size_t j = skip_string(s, n, i);
    if (depth != 2 || j - i != 11 || memcmp(s + i, "\"func.func\"", 11)) {
      i = j;
      continue;
    }
    /* a function of the module: operands, the body region, the attribute dictionary */
    size_t k = skip_ws(s, n, j);
    if (k < n && s[k] == '(') k = skip_ws(s, n, skip_group(s, n, k));
    if (k >= n || s[k] != '(') {
      i = k;
      continue;
    }
    size_t rb = k, re = skip_group(s, n, rb);
    k = skip_ws(s, n, re);
    if (k >= n || s[k] != '{') {
      i = k;
      continue;
    }
    size_t ab = k + 1, ae = skip_group(s, n, k) - 1; /* the closing brace */
    if (ae >= n || s[ae] != '}') break;
    i = ae + 1;
    bool kernel = false, named = false;
    int64_t grid = 1, block = 1;
    int seen_grid = 0, seen_block = 0;
    for (size_t a = ab; a < ae;) { /* entries "key" or "key = value", separated by commas */
      a = skip_ws(s, ae, a);
      size_t kb = a;
      while (a < ae && s[a] != ' ' && s[a] != '=' && s[a] != ',') a++;
      size_t kl = a - kb;
      a = skip_ws(s, ae, a);
      size_t vb = a, ve = a;
      if (a < ae && s[a] == '=') {
        vb = ve = skip_ws(s, ae, a + 1);
        while (ve < ae && s[ve] != ',')
          ve = s[ve] == '"' ? skip_string(s, ae, ve) : opener(s[ve]) ? skip_group(s, ae, ve) : ve + 1;
      }
      a = ve < ae ? ve + 1 : ae;
      int64_t v;
      if (kl == 6 && !memcmp(s + kb, "kernel", 6))
        kernel = true;
      else if (kl == 8 && !memcmp(s + kb, "sym_name", 8))
        named = ve - vb == strlen(name) + 2 && s[vb] == '"' && !memcmp(s + vb + 1, name, ve - vb - 2) &&
            !memchr(s + vb, '\\', ve - vb);
      else if ((kl == 9 && !memcmp(s + kb, "grid_size", 9)) || (kl == 10 && !memcmp(s + kb, "block_size", 10))) {
        size_t d = p_int(s, ve, vb, &v);
        bool g = kl == 9;
        if (!d || (vb + d < ve && s[vb + d] != ' ') || (g ? seen_grid++ : seen_block++)) {
          snprintf(why, wn, "a function has an unreadable or repeated %.*s attribute", (int)kl, s + kb);
          return false;
        }
        if (g)
          grid = v;
        else
          block = v;
      }
    }
    if (!kernel || !named) continue;
    out->grid = grid;
    out->block = block;
    out->lds = region_lds(s, rb, re);
    if (out->lds < 0) {
      snprintf(why, wn, "kernel %s: a rock.alloc has a type this reader cannot size", name);
      return false;
    }
    return true;
  }
  snprintf(why, wn, "kernel %s is not a kernel function of the IR", name);
  return false;
}

/* ---- plan helpers (kiln_client.h) ---- */
int kl_bundle_step_naccess(const kl_bundle_step *s) {
  switch (s->kind) {
    case KL_BUNDLE_LAUNCH: return s->nargs > 0 ? s->nargs : 0;
    case KL_BUNDLE_COPY: return 2;
    case KL_BUNDLE_PREFILL:
    case KL_BUNDLE_ALLOC_WORKSPACE:
    case KL_BUNDLE_FREE: return 1;
  }
  return 0;
}
int kl_bundle_step_access(const kl_bundle_target *t, const kl_bundle_step *s, int i, int *writes) {
  *writes = 1;
  switch (s->kind) {
    case KL_BUNDLE_LAUNCH: *writes = i >= t->kernels[s->kernel].ninputs; return s->args[i];
    case KL_BUNDLE_COPY: *writes = i == 1; return i == 1 ? s->dst : s->src;
    default: return s->slot;
  }
}
const char *kl_bundle_step_kind_name(kl_bundle_step_kind k) {
  static const char *const names[] = { "launch", "prefill", "copy", "alloc_workspace", "free" };
  return (unsigned)k < 5 ? names[k] : "?";
}
int kl_bundle_value_fits(const char *elem, double v) {
  static const struct {
    const char *name;
    double lo, hi;
    bool integral;
  } R[] = {
    { "i1", 0, 1, true },
    { "i8", -128, 127, true },
    { "u8", 0, 255, true },
    { "i32", -2147483648.0, 2147483647.0, true },
    { "i64", -9223372036854775808.0, 9223372036854775807.0, true }, /* hi rounds to 2^63: checked below */
    { "index", -9223372036854775808.0, 9223372036854775807.0, true },
    { "f16", -65504.0, 65504.0, false },
    { "bf16", -3.3895313892515355e38, 3.3895313892515355e38, false },
    { "f32", -3.4028234663852886e38, 3.4028234663852886e38, false },
    { "f64", -1.7976931348623157e308, 1.7976931348623157e308, false },
  };
  for (size_t i = 0; elem && i < sizeof R / sizeof *R; i++) {
    if (strcmp(R[i].name, elem)) continue;
    if (v != v) return !R[i].integral; /* nan */
    if (!R[i].integral)
      return (v >= R[i].lo && v <= R[i].hi) || v > 1.7976931348623157e308 ||
          v < -1.7976931348623157e308; /* finite in range, or inf */
    if (!(v >= R[i].lo && v <= R[i].hi) || v >= 9223372036854775808.0) return 0;
    return (double)(int64_t)v == v;
  }
  return 0;
}

/* ---- the bundle object and its arena ---- */
typedef struct chunk {
  struct chunk *next;
  size_t used, cap;
} chunk;
struct kl_bundle {
  unsigned version;
  const char *producer;
  int ntargets;
  kl_bundle_target *targets;
  chunk *chunks;
  bool oom;
};
#define CHUNK_HDR ((sizeof(chunk) + 15) & ~(size_t)15)
static void *ar_alloc(kl_bundle *b, size_t n) {
  n = (n + 15) & ~(size_t)15;
  if (!n) n = 16;
  chunk *c = b->chunks;
  if (!c || c->cap - c->used < n) {
    size_t cap = n > 65536 ? n : 65536;
    chunk *nc = malloc(CHUNK_HDR + cap);
    if (!nc) {
      b->oom = true;
      return NULL;
    }
    nc->cap = cap;
    nc->used = 0;
    if (c && n > 65536) {
      nc->next = c->next;
      c->next = nc;
      c = nc;
    } /* big block: keep the current chunk on top */
    else {
      nc->next = c;
      b->chunks = nc;
      c = nc;
    }
  }
  void *p = (char *)c + CHUNK_HDR + c->used;
  c->used += n;
  memset(p, 0, n);
  return p;
}
void kl_bundle_close(kl_bundle *b) {
  if (!b) return;
  for (chunk *c = b->chunks, *n; c; c = n) {
    n = c->next;
    free(c);
  }
  free(b);
}

/* ---- a bounds-checked reader over one section ---- */
typedef struct rd {
  kl_bundle *b;
  const unsigned char *p;
  size_t n, pos;
  char sec[160];   /* "section 3 (plan of target 0)" */
  char where[160]; /* "kernel 1 argument 0" */
  char *err;
  size_t errlen;
  bool failed;
} rd;

static bool rfail(rd *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static bool rfail(rd *r, const char *fmt, ...) {
  if (r->failed) return false;
  r->failed = true;
  char msg[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  errf(r->err, r->errlen, "bundle: %s: %s%s%s", r->sec, r->where[0] ? r->where : "", r->where[0] ? ": " : "", msg);
  return false;
}
static bool need(rd *r, size_t k, const char *what) {
  if (r->failed) return false;
  if (r->n - r->pos < k)
    return rfail(r, "truncated: %s needs %zu bytes at section offset %zu, %zu left", what, k, r->pos, r->n - r->pos);
  return true;
}
static uint32_t get_u32(const unsigned char *p) {
  return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}
static uint64_t get_u64(const unsigned char *p) { return (uint64_t)get_u32(p) | (uint64_t)get_u32(p + 4) << 32; }
static uint32_t r_u32(rd *r, const char *what) {
  if (!need(r, 4, what)) return 0;
  uint32_t v = get_u32(r->p + r->pos);
  r->pos += 4;
  return v;
}
static int64_t r_i64(rd *r, const char *what) {
  if (!need(r, 8, what)) return 0;
  uint64_t v = get_u64(r->p + r->pos);
  r->pos += 8;
  return (int64_t)v;
}
/* A string: u32 length, bytes (no NUL inside). Copied NUL-terminated into the arena. */
static const char *r_str(rd *r, const char *what) {
  uint32_t len = r_u32(r, what);
  if (!need(r, len, what)) return "";
  const char *s = (const char *)r->p + r->pos;
  if (memchr(s, 0, len)) {
    rfail(r, "%s contains a NUL byte", what);
    return "";
  }
  char *d = ar_alloc(r->b, (size_t)len + 1);
  if (!d) {
    rfail(r, "out of memory");
    return "";
  }
  memcpy(d, s, len);
  r->pos += len;
  return d;
}
/* A count of items of at least min_bytes each; checked against the bytes left. */
static int r_count(rd *r, size_t min_bytes, const char *what) {
  uint32_t n = r_u32(r, what);
  if (r->failed) return 0;
  if (n > 0x7fffffffu || (uint64_t)n * min_bytes > r->n - r->pos) {
    rfail(r, "%s %u is impossible: %zu bytes left in the section", what, n, r->n - r->pos);
    return 0;
  }
  return (int)n;
}
static void *r_array(rd *r, size_t n, size_t size) {
  if (r->failed) return NULL;
  void *p = ar_alloc(r->b, n * size);
  if (!p) rfail(r, "out of memory");
  return p;
}

static bool r_tensor(rd *r, kl_bundle_tensor *t, const char *what) {
  char w[96];
  snprintf(w, sizeof w, "%s type", what);
  t->type = r_str(r, w);
  snprintf(w, sizeof w, "%s element type", what);
  t->elem = r_str(r, w);
  t->elem_bytes = (int)r_u32(r, "element size");
  uint32_t rank = r_u32(r, "rank");
  if (r->failed) return false;
  if (!*t->type) return rfail(r, "%s has an empty type", what);
  int eb = elem_bytes_of(t->elem);
  if (!eb) return rfail(r, "%s has an unknown element type '%s'", what, t->elem);
  if (t->elem_bytes != eb)
    return rfail(r, "%s: element type %s has %d bytes, the bundle says %d", what, t->elem, eb, t->elem_bytes);
  if (rank > MAX_RANK) return rfail(r, "%s has rank %u (at most %d)", what, rank, MAX_RANK);
  t->rank = (int)rank;
  int64_t *sh = r_array(r, rank + 1, sizeof *sh), *st = r_array(r, rank + 1, sizeof *st);
  if (!need(r, (size_t)rank * 16, "shape and strides")) return false;
  for (uint32_t i = 0; i < rank; i++) sh[i] = r_i64(r, "shape");
  for (uint32_t i = 0; i < rank; i++) st[i] = r_i64(r, "strides");
  for (uint32_t i = 0; i < rank; i++) {
    if (sh[i] < 0) return rfail(r, "%s: negative size %lld in dimension %u", what, (long long)sh[i], i);
    if (st[i] < 0) return rfail(r, "%s: negative stride %lld in dimension %u", what, (long long)st[i], i);
  }
  t->shape = sh;
  t->strides = st;
  if (!span_bytes(t->rank, sh, st, eb, &t->bytes)) return rfail(r, "%s: the buffer is too large (size overflow)", what);
  ptype pt;
  size_t tl = strlen(t->type);
  if (parse_type(t->type, tl, &pt) != tl) return rfail(r, "%s: '%s' is not a tensor or buffer type", what, t->type);
  bool same = !strcmp(pt.elem, t->elem) && pt.rank == t->rank;
  for (int i = 0; same && i < t->rank; i++) same = pt.shape[i] == sh[i] && pt.strides[i] == st[i];
  if (!same) return rfail(r, "%s: the element type, shape or strides differ from its type %s", what, t->type);
  return !r->failed;
}

/* The steps are a program that runs (kiln_client.h): tokens, order, slot lifetimes. */
static bool is_ancestor(const uint64_t *anc, int words, int i, int j) { /* step j before step i */
  return (anc[(size_t)i * words + j / 64] >> (j % 64)) & 1;
}
static bool check_steps(rd *r, kl_bundle_target *t) {
  int n = t->nsteps, ns = t->nslots, words = (n + 63) / 64;
  const kl_bundle_step *st = t->steps;
  uint64_t *anc = r_array(r, (size_t)n * (size_t)words + 1, sizeof *anc);
  int *lastw = r_array(r, (size_t)ns + 1, sizeof *lastw), *ws = r_array(r, (size_t)ns + 1, sizeof *ws);
  int *nread = r_array(r, (size_t)ns + 1, sizeof *nread), *allocs = r_array(r, (size_t)ns + 1, sizeof *allocs);
  bool *written = r_array(r, (size_t)ns + 1, sizeof *written);
  size_t total = 0;
  for (int i = 0; i < n; i++) total += (size_t)kl_bundle_step_naccess(&st[i]);
  int *readers = r_array(r, total + 1, sizeof *readers), *rnext = r_array(r, total + 1, sizeof *rnext);
  int *rhead = r_array(r, (size_t)ns + 1, sizeof *rhead), nr = 0;
  if (r->failed) return false;
  for (int s = 0; s < ns; s++) {
    lastw[s] = -1;
    rhead[s] = -1;
    written[s] = t->slots[s].kind != KL_BUNDLE_RESULT;
  }
  for (int i = 0; i < n; i++)
    if (st[i].kind == KL_BUNDLE_ALLOC_WORKSPACE) allocs[st[i].slot]++;
  for (int i = 0; i < n; i++) {
    const kl_bundle_step *S = &st[i];
    snprintf(r->where, sizeof r->where, "step %d (%s, token %d)", i, kl_bundle_step_kind_name(S->kind), S->token);
    for (int j = 0; j < i; j++)
      if (st[j].token == S->token) return rfail(r, "token %d is also yielded by step %d", S->token, j);
    uint64_t *a = &anc[(size_t)i * words];
    for (int w = 0; w < S->nwaits; w++) {
      int j = i - 1;
      while (j >= 0 && st[j].token != S->waits[w]) j--;
      if (j < 0) return rfail(r, "waits on token %d, which no earlier step yields", S->waits[w]);
      a[j / 64] |= 1ull << (j % 64);
      for (int x = 0; x < words; x++) a[x] |= anc[(size_t)j * words + x];
    }
    if (S->kind == KL_BUNDLE_PREFILL) {
      const kl_bundle_slot *sl = &t->slots[S->slot];
      if (!kl_bundle_value_fits(sl->t.elem, S->value))
        return rfail(r, "the prefill value %.17g is not representable in slot %d's element type %s", S->value, S->slot,
                     sl->t.elem);
    }
    if (S->kind == KL_BUNDLE_COPY) {
      const kl_bundle_tensor *x = &t->slots[S->src].t, *y = &t->slots[S->dst].t;
      bool same = !strcmp(x->elem, y->elem) && x->rank == y->rank && S->bytes == y->bytes;
      for (int d = 0; same && d < x->rank; d++) same = x->shape[d] == y->shape[d] && x->strides[d] == y->strides[d];
      if (!same)
        return rfail(r, "copy from slot %d (%s) to slot %d (%s, %llu bytes): the layouts differ", S->src, x->type,
                     S->dst, y->type, (unsigned long long)S->bytes);
    }
    if (S->kind == KL_BUNDLE_ALLOC_WORKSPACE) {
      const kl_bundle_slot *sl = &t->slots[S->slot];
      if (sl->kind != KL_BUNDLE_RESULT || sl->output >= 0)
        return rfail(r, "slot %d is not an intermediate result: it cannot be a workspace", S->slot);
      if (allocs[S->slot] != 1) return rfail(r, "slot %d is allocated %d times", S->slot, allocs[S->slot]);
      if (S->bytes != sl->t.bytes)
        return rfail(r, "allocates %llu bytes for slot %d, which spans %llu", (unsigned long long)S->bytes, S->slot,
                     (unsigned long long)sl->t.bytes);
    }
    if (S->kind == KL_BUNDLE_FREE && ws[S->slot] != 1)
      return rfail(r, "frees slot %d, which is %s", S->slot, ws[S->slot] ? "already freed" : "not allocated before");
    int na = kl_bundle_step_naccess(S);
    for (int k = 0; k < na; k++) {
      int wr, s = kl_bundle_step_access(t, S, k, &wr);
      if (ws[s] == 2) return rfail(r, "uses slot %d after its free step", s);
      if (allocs[s] && !ws[s] && S->kind != KL_BUNDLE_ALLOC_WORKSPACE)
        return rfail(r, "uses slot %d before its alloc_workspace step", s);
      if (wr && t->slots[s].kind != KL_BUNDLE_RESULT)
        return rfail(r, "writes slot %d, a %s", s, t->slots[s].kind == KL_BUNDLE_PARAM ? "param" : "constant");
      if (!wr && !written[s]) return rfail(r, "reads slot %d, which no earlier step writes", s);
      if (lastw[s] >= 0 && !is_ancestor(anc, words, i, lastw[s]))
        return rfail(r, "%s slot %d but does not wait (directly or through its waits) on step %d, which writes it",
                     wr ? "writes" : "reads", s, lastw[s]);
      for (int q = rhead[s]; wr && q >= 0; q = rnext[q])
        if (readers[q] != i && !is_ancestor(anc, words, i, readers[q]))
          return rfail(r, "writes slot %d but does not wait (directly or through its waits) on step %d, which reads it",
                       s, readers[q]);
    }
    for (int k = 0; k < na; k++) {
      int wr, s = kl_bundle_step_access(t, S, k, &wr);
      if (wr) {
        lastw[s] = i;
        rhead[s] = -1;
        if (S->kind != KL_BUNDLE_ALLOC_WORKSPACE && S->kind != KL_BUNDLE_FREE) written[s] = true;
        if (S->kind == KL_BUNDLE_ALLOC_WORKSPACE) ws[s] = 1;
        if (S->kind == KL_BUNDLE_FREE) ws[s] = 2;
      } else {
        readers[nr] = i;
        rnext[nr] = rhead[s];
        rhead[s] = nr++;
      }
    }
  }
  r->where[0] = 0;
  for (int s = 0; s < ns; s++)
    if (ws[s] == 1) return rfail(r, "workspace slot %d is never freed", s);
  for (int o = 0; o < t->noutputs; o++)
    if (!written[t->outputs[o]]) return rfail(r, "output %d (slot %d) is never written by a step", o, t->outputs[o]);
  return true;
}

static bool decode_plan(rd *r, kl_bundle_target *t) {
  t->name = r_str(r, "target name");
  t->arch = r_str(r, "arch");
  t->binary_format = r_str(r, "binary format");
  if (r->failed) return false;
  if (!*t->name) return rfail(r, "empty target name");
  if (!*t->arch || !*t->binary_format) return rfail(r, "target '%s': empty arch or binary format", t->name);
  t->nkernels = r_count(r, 3 * 4 + 7 * 8 + 8, "kernel count");
  kl_bundle_kernel *ks = r_array(r, (size_t)t->nkernels + 1, sizeof *ks);
  for (int k = 0; k < t->nkernels && !r->failed; k++) {
    kl_bundle_kernel *K = &ks[k];
    snprintf(r->where, sizeof r->where, "kernel %d", k);
    K->name = r_str(r, "name");
    K->kind = r_str(r, "kind");
    K->perf_config = r_str(r, "perf config");
    for (int i = 0; i < 3; i++) K->grid[i] = r_i64(r, "grid");
    for (int i = 0; i < 3; i++) K->block[i] = r_i64(r, "block");
    K->lds_bytes = r_i64(r, "LDS bytes");
    uint32_t nargs = r_u32(r, "argument count"), nin = r_u32(r, "input count");
    if (r->failed) return false;
    if (!*K->name) return rfail(r, "empty kernel name");
    snprintf(r->where, sizeof r->where, "kernel %d (%s)", k, K->name);
    for (int j = 0; j < k; j++)
      if (!strcmp(ks[j].name, K->name)) return rfail(r, "kernel name given twice");
    for (int i = 0; i < 3; i++)
      if (K->grid[i] < 1 || K->grid[i] > 0x7fffffff || K->block[i] < 1 || K->block[i] > 0x7fffffff)
        return rfail(r, "bad launch dims grid=[%lld,%lld,%lld] block=[%lld,%lld,%lld]", (long long)K->grid[0],
                     (long long)K->grid[1], (long long)K->grid[2], (long long)K->block[0], (long long)K->block[1],
                     (long long)K->block[2]);
    if (K->lds_bytes < 0 || K->lds_bytes > 0x7fffffff) return rfail(r, "bad LDS size %lld", (long long)K->lds_bytes);
    if (nargs > 0x7fffffffu || (uint64_t)nargs * 20 > r->n - r->pos)
      return rfail(r, "argument count %u is impossible", nargs);
    if (nin > nargs) return rfail(r, "%u inputs but only %u arguments", nin, nargs);
    K->nargs = (int)nargs;
    K->ninputs = (int)nin;
    kl_bundle_arg *as = r_array(r, nargs + 1, sizeof *as);
    for (uint32_t a = 0; a < nargs && !r->failed; a++) {
      char what[64];
      snprintf(what, sizeof what, "argument %u", a);
      as[a].name = r_str(r, "argument name");
      r_tensor(r, &as[a].t, what);
      as[a].is_output = a >= nin;
    }
    K->args = as;
  }
  t->kernels = ks;
  r->where[0] = 0;
  t->nslots = r_count(r, 4 + 4 + 16, "slot count");
  kl_bundle_slot *ss = r_array(r, (size_t)t->nslots + 1, sizeof *ss);
  for (int s = 0; s < t->nslots && !r->failed; s++) {
    snprintf(r->where, sizeof r->where, "slot %d", s);
    uint32_t kind = r_u32(r, "slot kind");
    ss[s].name = r_str(r, "slot name");
    r_tensor(r, &ss[s].t, "slot");
    ss[s].output = -1;
    if (r->failed) return false;
    if (kind > KL_BUNDLE_RESULT) return rfail(r, "unknown slot kind %u", kind);
    ss[s].kind = (kl_bundle_slot_kind)kind;
    if (kind == KL_BUNDLE_PARAM) {
      if (!*ss[s].name) return rfail(r, "param without a name");
      for (int j = 0; j < s; j++)
        if (ss[j].kind == KL_BUNDLE_PARAM && !strcmp(ss[j].name, ss[s].name))
          return rfail(r, "param '%s' given twice", ss[s].name);
    } else if (*ss[s].name)
      return rfail(r, "only params have names");
  }
  t->slots = ss;
  r->where[0] = 0;
  bool v3 = r->b->version >= 3;
  t->nsteps = r_count(r, v3 ? 16 : 12, "step count");
  if (!r->failed && t->nsteps > MAX_STEPS) return rfail(r, "%d steps (at most %d)", t->nsteps, MAX_STEPS);
  kl_bundle_step *st = r_array(r, (size_t)t->nsteps + 1, sizeof *st);
  for (int i = 0; i < t->nsteps && !r->failed; i++) {
    snprintf(r->where, sizeof r->where, "step %d", i);
    kl_bundle_step *S = &st[i];
    *S = (kl_bundle_step){ .kernel = -1, .slot = -1, .src = -1, .dst = -1 };
    uint32_t kind = r_u32(r, "step kind");
    if (v3) {
      uint32_t tok = r_u32(r, "token");
      uint32_t nw = (uint32_t)r_count(r, 4, "wait count");
      if (r->failed) return false;
      if (tok > 0x7fffffffu) return rfail(r, "token %u out of range", tok);
      S->token = (int)tok;
      int *w = r_array(r, (size_t)nw + 1, sizeof *w);
      for (uint32_t k = 0; k < nw && !r->failed; k++) {
        uint32_t x = r_u32(r, "wait");
        if (x > 0x7fffffffu) return rfail(r, "wait %u: token %u out of range", k, x);
        if (w) w[k] = (int)x;
      }
      S->nwaits = (int)nw;
      S->waits = w;
    } else { /* version 2: launches in order, a token chain */
      S->token = i;
      int *w = r_array(r, 2, sizeof *w);
      if (w && i > 0) w[0] = i - 1;
      S->nwaits = i > 0;
      S->waits = w;
    }
    if (r->failed) return false;
    if (kind > KL_BUNDLE_FREE || (!v3 && kind != KL_BUNDLE_LAUNCH)) return rfail(r, "unknown step kind %u", kind);
    S->kind = (kl_bundle_step_kind)kind;
    if (kind == KL_BUNDLE_LAUNCH) {
      uint32_t k = r_u32(r, "kernel index");
      uint32_t n = r_u32(r, "argument count");
      if (r->failed) return false;
      if (k >= (uint32_t)t->nkernels) return rfail(r, "kernel index %u out of range (%d kernels)", k, t->nkernels);
      if (n != (uint32_t)ks[k].nargs)
        return rfail(r, "launch of %s passes %u arguments, the kernel takes %d", ks[k].name, n, ks[k].nargs);
      if (!need(r, (size_t)n * 4, "argument slots")) return false;
      int *args = r_array(r, (size_t)n + 1, sizeof *args);
      for (uint32_t a = 0; a < n; a++) {
        uint32_t s = r_u32(r, "argument slot");
        if (s >= (uint32_t)t->nslots) return rfail(r, "argument %u: slot %u out of range (%d slots)", a, s, t->nslots);
        const kl_bundle_tensor *x = &ss[s].t, *y = &ks[k].args[a].t;
        bool same = !strcmp(x->elem, y->elem) && x->rank == y->rank;
        for (int d = 0; same && d < x->rank; d++) same = x->shape[d] == y->shape[d] && x->strides[d] == y->strides[d];
        if (!same)
          return rfail(r, "argument %u: slot %u (%s) does not have the layout of %s's argument (%s)", a, s, x->type,
                       ks[k].name, y->type);
        args[a] = (int)s;
      }
      S->kernel = (int)k;
      S->nargs = (int)n;
      S->args = args;
      continue;
    }
    uint32_t a = r_u32(r, kind == KL_BUNDLE_COPY ? "source slot" : "slot"), b = 0;
    if (kind == KL_BUNDLE_COPY) b = r_u32(r, "destination slot");
    if (kind == KL_BUNDLE_PREFILL) {
      uint64_t bits = (uint64_t)r_i64(r, "prefill value");
      memcpy(&S->value, &bits, sizeof S->value);
    }
    if (kind == KL_BUNDLE_COPY || kind == KL_BUNDLE_ALLOC_WORKSPACE) S->bytes = (uint64_t)r_i64(r, "bytes");
    if (r->failed) return false;
    if (a >= (uint32_t)t->nslots || (kind == KL_BUNDLE_COPY && b >= (uint32_t)t->nslots))
      return rfail(r, "%s: slot %u out of range (%d slots)", kl_bundle_step_kind_name(S->kind),
                   a >= (uint32_t)t->nslots ? a : b, t->nslots);
    if (kind == KL_BUNDLE_COPY) {
      S->src = (int)a;
      S->dst = (int)b;
    } else
      S->slot = (int)a;
  }
  t->steps = st;
  r->where[0] = 0;
  t->noutputs = r_count(r, 4, "output count");
  int *outs = r_array(r, (size_t)t->noutputs + 1, sizeof *outs);
  for (int i = 0; i < t->noutputs && !r->failed; i++) {
    uint32_t s = r_u32(r, "output slot");
    if (r->failed) return false;
    if (s >= (uint32_t)t->nslots) return rfail(r, "output %d: slot %u out of range (%d slots)", i, s, t->nslots);
    outs[i] = (int)s;
    if (ss[s].output < 0) ss[s].output = i;
  }
  t->outputs = outs;
  if (!r->failed && r->pos != r->n) return rfail(r, "%zu unexpected bytes after the plan", r->n - r->pos);
  return !r->failed && check_steps(r, t);
}

typedef struct entry {
  uint32_t kind, target, index, reserved;
  uint64_t offset, size, sum;
} entry;

static void describe(char *buf, size_t n, int i, const entry *e, const kl_bundle *b) {
  const char *tn = (b && b->targets && e->target < (uint32_t)b->ntargets && b->targets[e->target].name)
      ? b->targets[e->target].name
      : NULL;
  char tgt[96];
  if (tn)
    snprintf(tgt, sizeof tgt, "target '%s'", tn);
  else
    snprintf(tgt, sizeof tgt, "target %u", e->target);
  switch (e->kind) {
    case SEC_META: snprintf(buf, n, "section %d (meta)", i); break;
    case SEC_PLAN: snprintf(buf, n, "section %d (plan of %s)", i, tgt); break;
    case SEC_IR: snprintf(buf, n, "section %d (IR of %s)", i, tgt); break;
    case SEC_BINARY: {
      const kl_bundle_target *t = tn ? &b->targets[e->target] : NULL;
      if (t && t->kernels && e->index < (uint32_t)t->nkernels)
        snprintf(buf, n, "section %d (binary of kernel %s, %s)", i, t->kernels[e->index].name, tgt);
      else
        snprintf(buf, n, "section %d (binary of kernel %u, %s)", i, e->index, tgt);
      break;
    }
    case SEC_CONST: snprintf(buf, n, "section %d (data of constant slot %u, %s)", i, e->index, tgt); break;
    default: snprintf(buf, n, "section %d (kind %u)", i, e->kind); break;
  }
}

static kl_bundle *open_checked(const unsigned char *d, size_t size, char *err, size_t errlen) {
  if (size < 8) {
    errf(err, errlen, "bundle: not a kiln bundle: the file has only %zu bytes (truncated?)", size);
    return NULL;
  }
  if (memcmp(d, MAGIC, 8)) {
    errf(err, errlen, "bundle: not a kiln bundle (the file does not start with \"KILNBNDL\")");
    return NULL;
  }
  if (size < HEADER_BYTES) {
    errf(err, errlen, "bundle: header: truncated: the header needs %d bytes, the file has %zu", HEADER_BYTES, size);
    return NULL;
  }
  uint32_t version = get_u32(d + 8);
  uint64_t hsum = get_u64(d + 40);
  bool known = version == 2 || version == KL_BUNDLE_FORMAT_VERSION;
  if (kl_bundle_fnv1a64(d, 40) != hsum) {
    if (!known)
      errf(err, errlen,
           "bundle: header: checksum mismatch: the bundle is corrupted, or it has format version %u, which this reader "
           "(versions 2 and %u) cannot read",
           version, KL_BUNDLE_FORMAT_VERSION);
    else
      errf(err, errlen, "bundle: header: checksum mismatch (stored %016llx, computed %016llx): the header is corrupted",
           (unsigned long long)hsum, (unsigned long long)kl_bundle_fnv1a64(d, 40));
    return NULL;
  }
  if (!known) {
    errf(err, errlen, "bundle: format version %u is not supported (this reader reads versions 2 and %u)", version,
         KL_BUNDLE_FORMAT_VERSION);
    return NULL;
  }
  uint32_t hbytes = get_u32(d + 12), nsec = get_u32(d + 16), flags = get_u32(d + 20);
  uint64_t fbytes = get_u64(d + 24), tsum = get_u64(d + 32);
  if (hbytes != HEADER_BYTES) {
    errf(err, errlen, "bundle: header: header size %u, expected %d", hbytes, HEADER_BYTES);
    return NULL;
  }
  if (flags) {
    errf(err, errlen, "bundle: header: unknown flags 0x%x", flags);
    return NULL;
  }
  if (fbytes > size) {
    errf(err, errlen, "bundle: truncated: the header says the bundle has %llu bytes, only %zu are there",
         (unsigned long long)fbytes, size);
    return NULL;
  }
  if (fbytes < size) {
    errf(err, errlen, "bundle: %llu unexpected bytes after the end of the bundle (the header says %llu bytes)",
         (unsigned long long)(size - fbytes), (unsigned long long)fbytes);
    return NULL;
  }
  if (nsec > (size - HEADER_BYTES) / ENTRY_BYTES) {
    errf(err, errlen, "bundle: header: %u sections do not fit in %zu bytes", nsec, size);
    return NULL;
  }
  size_t tbytes = (size_t)nsec * ENTRY_BYTES;
  if (kl_bundle_fnv1a64(d + HEADER_BYTES, tbytes) != tsum) {
    errf(err, errlen, "bundle: section table: checksum mismatch: the table of sections is corrupted");
    return NULL;
  }
  entry *es = calloc(nsec + 1, sizeof *es);
  if (!es) {
    errf(err, errlen, "bundle: out of memory");
    return NULL;
  }
  uint64_t pos = HEADER_BYTES + tbytes;
  for (uint32_t i = 0; i < nsec; i++) {
    const unsigned char *p = d + HEADER_BYTES + (size_t)i * ENTRY_BYTES;
    entry *e = &es[i];
    *e = (entry){ get_u32(p),      get_u32(p + 4),  get_u32(p + 8), get_u32(p + 12),
                  get_u64(p + 16), get_u64(p + 24), get_u64(p + 32) };
    char sec[160];
    describe(sec, sizeof sec, (int)i, e, NULL);
    uint64_t start = (pos + 7) & ~(uint64_t)7;
    if (e->reserved) {
      errf(err, errlen, "bundle: %s: reserved field is %u, expected 0", sec, e->reserved);
      free(es);
      return NULL;
    }
    if (e->offset != start) {
      errf(err, errlen, "bundle: %s: offset %llu, expected %llu (sections follow each other in table order)", sec,
           (unsigned long long)e->offset, (unsigned long long)start);
      free(es);
      return NULL;
    }
    if (start > size || e->size > size - start) {
      errf(err, errlen, "bundle: %s: %llu bytes at offset %llu run past the end of the bundle (%zu bytes)", sec,
           (unsigned long long)e->size, (unsigned long long)e->offset, size);
      free(es);
      return NULL;
    }
    for (uint64_t q = pos; q < start; q++)
      if (d[q]) {
        errf(err, errlen, "bundle: %s: padding byte at offset %llu is not zero", sec, (unsigned long long)q);
        free(es);
        return NULL;
      }
    if (kl_bundle_fnv1a64(d + start, (size_t)e->size) != e->sum) {
      errf(err, errlen, "bundle: %s: checksum mismatch (stored %016llx, computed %016llx): the section is corrupted",
           sec, (unsigned long long)e->sum, (unsigned long long)kl_bundle_fnv1a64(d + start, (size_t)e->size));
      free(es);
      return NULL;
    }
    pos = start + e->size;
  }
  if (pos != size) {
    errf(err, errlen, "bundle: %llu bytes after the last section", (unsigned long long)(size - pos));
    free(es);
    return NULL;
  }

  /* ---- decode ---- */
  kl_bundle *b = calloc(1, sizeof *b);
  if (!b) {
    free(es);
    errf(err, errlen, "bundle: out of memory");
    return NULL;
  }
  b->version = version;
  rd r = { .b = b, .err = err, .errlen = errlen };
  int meta = -1;
  for (uint32_t i = 0; i < nsec; i++)
    if (es[i].kind == SEC_META) {
      if (meta >= 0) {
        errf(err, errlen, "bundle: section %u: a second meta section (the first is section %d)", i, meta);
        goto fail;
      }
      meta = (int)i;
    }
  if (meta < 0) {
    errf(err, errlen, "bundle: no meta section");
    goto fail;
  }
  r.p = d + es[meta].offset;
  r.n = (size_t)es[meta].size;
  r.pos = 0;
  describe(r.sec, sizeof r.sec, meta, &es[meta], NULL);
  uint32_t nt = r_u32(&r, "target count");
  b->producer = r_str(&r, "producer");
  if (r.failed) goto fail;
  if (r.pos != r.n) {
    rfail(&r, "%zu unexpected bytes", r.n - r.pos);
    goto fail;
  }
  if (nt == 0 || nt > nsec) {
    rfail(&r, "target count %u is impossible (%u sections)", nt, nsec);
    goto fail;
  }
  if (es[meta].target || es[meta].index) {
    rfail(&r, "target and index must be 0");
    goto fail;
  }
  b->ntargets = (int)nt;
  b->targets = ar_alloc(b, nt * sizeof *b->targets);
  if (!b->targets) {
    errf(err, errlen, "bundle: out of memory");
    goto fail;
  }
  /* plans first: they give names and counts for the other sections */
  for (uint32_t t = 0; t < nt; t++) {
    int found = -1;
    for (uint32_t i = 0; i < nsec; i++)
      if (es[i].kind == SEC_PLAN && es[i].target == t) {
        if (found >= 0) {
          errf(err, errlen, "bundle: section %u: a second plan for target %u (the first is section %d)", i, t, found);
          goto fail;
        }
        found = (int)i;
      }
    if (found < 0) {
      errf(err, errlen, "bundle: no plan section for target %u", t);
      goto fail;
    }
    r = (rd){ .b = b, .p = d + es[found].offset, .n = (size_t)es[found].size, .err = err, .errlen = errlen };
    describe(r.sec, sizeof r.sec, found, &es[found], NULL);
    if (es[found].index) {
      rfail(&r, "index must be 0");
      goto fail;
    }
    if (!decode_plan(&r, &b->targets[t])) goto fail;
    for (uint32_t u = 0; u < t; u++)
      if (!strcmp(b->targets[u].name, b->targets[t].name)) {
        rfail(&r, "target '%s' is in the bundle twice", b->targets[t].name);
        goto fail;
      }
  }
  /* IR, binaries, constants */
  for (uint32_t i = 0; i < nsec; i++) {
    entry *e = &es[i];
    char sec[160];
    describe(sec, sizeof sec, (int)i, e, b);
    if (e->kind == SEC_PLAN && e->target >= nt) {
      errf(err, errlen, "bundle: %s: target %u out of range (%u targets)", sec, e->target, nt);
      goto fail;
    }
    if (e->kind == SEC_META || e->kind == SEC_PLAN) continue;
    if (e->kind != SEC_IR && e->kind != SEC_BINARY && e->kind != SEC_CONST) continue; /* unknown kinds are skipped */
    if (e->target >= nt) {
      errf(err, errlen, "bundle: %s: target %u out of range (%u targets)", sec, e->target, nt);
      goto fail;
    }
    kl_bundle_target *t = &b->targets[e->target];
    const unsigned char *src = d + e->offset;
    size_t n = (size_t)e->size;
    char *copy = ar_alloc(b, n + 1);
    if (!copy) {
      errf(err, errlen, "bundle: out of memory");
      goto fail;
    }
    memcpy(copy, src, n);
    if (e->kind == SEC_IR) {
      if (e->index) {
        errf(err, errlen, "bundle: %s: index must be 0", sec);
        goto fail;
      }
      if (t->ir) {
        errf(err, errlen, "bundle: %s: a second IR section for target '%s'", sec, t->name);
        goto fail;
      }
      if (memchr(src, 0, n)) {
        errf(err, errlen, "bundle: %s: the IR text contains a NUL byte", sec);
        goto fail;
      }
      t->ir = copy;
      t->ir_size = n;
    } else if (e->kind == SEC_BINARY) {
      if (e->index >= (uint32_t)t->nkernels) {
        errf(err, errlen, "bundle: %s: kernel %u out of range (%d kernels)", sec, e->index, t->nkernels);
        goto fail;
      }
      kl_bundle_kernel *k = (kl_bundle_kernel *)&t->kernels[e->index];
      if (k->binary) {
        errf(err, errlen, "bundle: %s: a second binary for kernel %s of target '%s'", sec, k->name, t->name);
        goto fail;
      }
      if (!n) {
        errf(err, errlen, "bundle: %s: empty binary", sec);
        goto fail;
      }
      k->binary = copy;
      k->binary_size = n;
    } else {
      if (e->index >= (uint32_t)t->nslots) {
        errf(err, errlen, "bundle: %s: slot %u out of range (%d slots)", sec, e->index, t->nslots);
        goto fail;
      }
      kl_bundle_slot *s = (kl_bundle_slot *)&t->slots[e->index];
      if (s->kind != KL_BUNDLE_CONSTANT) {
        errf(err, errlen, "bundle: %s: slot %u is not a constant", sec, e->index);
        goto fail;
      }
      if (s->data) {
        errf(err, errlen, "bundle: %s: a second data section for slot %u of target '%s'", sec, e->index, t->name);
        goto fail;
      }
      if (n != s->t.bytes) {
        errf(err, errlen, "bundle: %s: %zu bytes of data, the constant (%s) needs %llu", sec, n, s->t.type,
             (unsigned long long)s->t.bytes);
        goto fail;
      }
      s->data = copy;
      s->data_size = n;
    }
  }
  for (int t = 0; t < b->ntargets; t++) {
    kl_bundle_target *T = &b->targets[t];
    if (!T->ir) {
      errf(err, errlen, "bundle: target '%s' has no IR section", T->name);
      goto fail;
    }
    for (int k = 0; k < T->nkernels; k++)
      if (!T->kernels[k].binary) {
        errf(err, errlen, "bundle: target '%s': kernel %s has no binary section", T->name, T->kernels[k].name);
        goto fail;
      }
    for (int s = 0; s < T->nslots; s++)
      if (T->slots[s].kind == KL_BUNDLE_CONSTANT && !T->slots[s].data) {
        if (T->slots[s].t.bytes == 0) continue; /* an empty constant has no data section */
        errf(err, errlen, "bundle: target '%s': constant slot %d has no data section", T->name, s);
        goto fail;
      }
    /* a kernel launches only with the sizes its IR was compiled for */
    for (int k = 0; k < T->nkernels; k++) {
      const kl_bundle_kernel *K = &T->kernels[k];
      ir_kernel ik;
      char why[256];
      if (!ir_find_kernel(T->ir, T->ir_size, K->name, &ik, why, sizeof why)) {
        errf(err, errlen, "bundle: target '%s': IR section: %s", T->name, why);
        goto fail;
      }
      if (K->grid[0] != ik.grid || K->grid[1] != 1 || K->grid[2] != 1 || K->block[0] != ik.block || K->block[1] != 1 ||
          K->block[2] != 1 || K->lds_bytes != ik.lds) {
        errf(err, errlen,
             "bundle: target '%s': the plan section disagrees with the IR: kernel %s launches with grid "
             "[%lld,%lld,%lld], "
             "block [%lld,%lld,%lld], %lld LDS bytes in the plan; the IR says grid_size %lld, block_size %lld, %lld "
             "LDS bytes",
             T->name, K->name, (long long)K->grid[0], (long long)K->grid[1], (long long)K->grid[2],
             (long long)K->block[0], (long long)K->block[1], (long long)K->block[2], (long long)K->lds_bytes,
             (long long)ik.grid, (long long)ik.block, (long long)ik.lds);
        goto fail;
      }
    }
  }
  free(es);
  if (b->oom) {
    kl_bundle_close(b);
    errf(err, errlen, "bundle: out of memory");
    return NULL;
  }
  return b;
fail:
  free(es);
  kl_bundle_close(b);
  return NULL;
}

kl_bundle *kl_bundle_open_memory(const void *data, size_t size, char *err, size_t errlen) {
  if (err && errlen) err[0] = 0;
  if (!data && size) {
    errf(err, errlen, "bundle: no data");
    return NULL;
  }
  return open_checked(data ? data : "", size, err, errlen);
}

kl_bundle *kl_bundle_open_file(const char *path, char *err, size_t errlen) {
  if (err && errlen) err[0] = 0;
  FILE *f = fopen(path, "rb");
  if (!f) {
    errf(err, errlen, "bundle: cannot open '%s': %s", path, strerror(errno));
    return NULL;
  }
  size_t cap = 1 << 16, n = 0;
  unsigned char *buf = malloc(cap);
  for (;;) {
    if (!buf) {
      fclose(f);
      errf(err, errlen, "bundle: '%s': out of memory", path);
      return NULL;
    }
    n += fread(buf + n, 1, cap - n, f);
    if (n < cap) break;
    unsigned char *nb = cap > (SIZE_MAX / 2) ? NULL : realloc(buf, cap * 2);
    if (!nb) free(buf);
    buf = nb;
    cap *= 2;
  }
  if (ferror(f)) {
    errf(err, errlen, "bundle: cannot read '%s': %s", path, strerror(errno));
    fclose(f);
    free(buf);
    return NULL;
  }
  fclose(f);
  char msg[1024] = "";
  kl_bundle *b = open_checked(buf, n, msg, sizeof msg);
  free(buf);
  if (!b) errf(err, errlen, "%s: %s", path, msg);
  return b;
}

unsigned kl_bundle_format_version(const kl_bundle *b) { return b->version; }
const char *kl_bundle_producer(const kl_bundle *b) { return b->producer; }
int kl_bundle_ntargets(const kl_bundle *b) { return b->ntargets; }
const kl_bundle_target *kl_bundle_target_at(const kl_bundle *b, int i) {
  return (i >= 0 && i < b->ntargets) ? &b->targets[i] : NULL;
}
const kl_bundle_target *kl_bundle_find_target(const kl_bundle *b, const char *name) {
  for (int i = 0; name && i < b->ntargets; i++)
    if (!strcmp(b->targets[i].name, name)) return &b->targets[i];
  return NULL;
}
const kl_bundle_kernel *kl_bundle_find_kernel(const kl_bundle_target *t, const char *name) {
  for (int i = 0; t && name && i < t->nkernels; i++)
    if (!strcmp(t->kernels[i].name, name)) return &t->kernels[i];
  return NULL;
}
int kl_bundle_find_param(const kl_bundle_target *t, const char *name) {
  for (int i = 0; t && name && i < t->nslots; i++)
    if (t->slots[i].kind == KL_BUNDLE_PARAM && !strcmp(t->slots[i].name, name)) return i;
  return -1;
}
const void *kl_bundle_binary(const kl_bundle *b, const char *target, const char *kernel, size_t *size) {
  const kl_bundle_kernel *k = kl_bundle_find_kernel(kl_bundle_find_target(b, target), kernel);
  if (size) *size = k ? k->binary_size : 0;
  return k ? k->binary : NULL;
}

/* ---------------------------------------------------------------- writing ---- */
typedef struct wb {
  unsigned char *p;
  size_t n, cap;
  bool oom;
} wb;
static void w_bytes(wb *w, const void *s, size_t n) {
  if (w->oom) return;
  if (w->cap - w->n < n) {
    size_t cap = w->cap ? w->cap : 4096;
    while (cap - w->n < n) cap *= 2;
    unsigned char *np = realloc(w->p, cap);
    if (!np) {
      w->oom = true;
      return;
    }
    w->p = np;
    w->cap = cap;
  }
  if (n) memcpy(w->p + w->n, s, n);
  w->n += n;
}
static void w_u32(wb *w, uint32_t v) {
  unsigned char b[4] = { (unsigned char)v, (unsigned char)(v >> 8), (unsigned char)(v >> 16),
                         (unsigned char)(v >> 24) };
  w_bytes(w, b, 4);
}
static void w_u64(wb *w, uint64_t v) {
  w_u32(w, (uint32_t)v);
  w_u32(w, (uint32_t)(v >> 32));
}
static void w_str(wb *w, const char *s) {
  size_t n = s ? strlen(s) : 0;
  w_u32(w, (uint32_t)n);
  w_bytes(w, s, n);
}
static bool w_tensor(wb *w, const kl_bundle_tensor *t, char *err, size_t errlen, const char *what) {
  int eb = elem_bytes_of(t->elem);
  if (!eb) {
    errf(err, errlen, "bundle: %s: unknown element type '%s'", what, t->elem ? t->elem : "(null)");
    return false;
  }
  if (t->rank < 0 || t->rank > MAX_RANK || (t->rank && (!t->shape || !t->strides))) {
    errf(err, errlen, "bundle: %s: bad rank or shape", what);
    return false;
  }
  uint64_t bytes;
  if (!span_bytes(t->rank, t->shape, t->strides, eb, &bytes)) {
    errf(err, errlen, "bundle: %s: bad shape or strides", what);
    return false;
  }
  w_str(w, t->type);
  w_str(w, t->elem);
  w_u32(w, (uint32_t)eb);
  w_u32(w, (uint32_t)t->rank);
  for (int i = 0; i < t->rank; i++) w_u64(w, (uint64_t)t->shape[i]);
  for (int i = 0; i < t->rank; i++) w_u64(w, (uint64_t)t->strides[i]);
  return true;
}
static void put_u32(unsigned char *p, uint32_t v) {
  for (int i = 0; i < 4; i++) p[i] = (unsigned char)(v >> (8 * i));
}
static void put_u64(unsigned char *p, uint64_t v) {
  put_u32(p, (uint32_t)v);
  put_u32(p + 4, (uint32_t)(v >> 32));
}

typedef struct psec {
  uint32_t kind, target, index;
  const void *data;
  size_t size;
  unsigned char *owned;
} psec;

static bool encode_plan(wb *w, const kl_bundle_target *t, char *err, size_t errlen) {
  char what[128];
  w_str(w, t->name);
  w_str(w, t->arch);
  w_str(w, t->binary_format);
  w_u32(w, (uint32_t)t->nkernels);
  for (int k = 0; k < t->nkernels; k++) {
    const kl_bundle_kernel *K = &t->kernels[k];
    if (!K->name || !*K->name) {
      errf(err, errlen, "bundle: target '%s': kernel %d has no name", t->name, k);
      return false;
    }
    if (K->nargs < 0 || K->ninputs < 0 || K->ninputs > K->nargs || (K->nargs && !K->args)) {
      errf(err, errlen, "bundle: target '%s': kernel %s: bad argument counts", t->name, K->name);
      return false;
    }
    w_str(w, K->name);
    w_str(w, K->kind);
    w_str(w, K->perf_config);
    for (int i = 0; i < 3; i++) w_u64(w, (uint64_t)K->grid[i]);
    for (int i = 0; i < 3; i++) w_u64(w, (uint64_t)K->block[i]);
    w_u64(w, (uint64_t)K->lds_bytes);
    w_u32(w, (uint32_t)K->nargs);
    w_u32(w, (uint32_t)K->ninputs);
    for (int a = 0; a < K->nargs; a++) {
      snprintf(what, sizeof what, "target '%s': kernel %s argument %d", t->name, K->name, a);
      w_str(w, K->args[a].name);
      if (!w_tensor(w, &K->args[a].t, err, errlen, what)) return false;
    }
  }
  w_u32(w, (uint32_t)t->nslots);
  for (int s = 0; s < t->nslots; s++) {
    const kl_bundle_slot *S = &t->slots[s];
    snprintf(what, sizeof what, "target '%s': slot %d", t->name, s);
    w_u32(w, (uint32_t)S->kind);
    w_str(w, S->kind == KL_BUNDLE_PARAM ? S->name : "");
    if (!w_tensor(w, &S->t, err, errlen, what)) return false;
  }
  w_u32(w, (uint32_t)t->nsteps);
  for (int i = 0; i < t->nsteps; i++) {
    const kl_bundle_step *S = &t->steps[i];
    bool launch = S->kind == KL_BUNDLE_LAUNCH, copy = S->kind == KL_BUNDLE_COPY;
    if ((unsigned)S->kind > KL_BUNDLE_FREE || S->token < 0 || S->nwaits < 0 || (S->nwaits && !S->waits) ||
        (launch && (S->kernel < 0 || S->kernel >= t->nkernels || S->nargs < 0 || (S->nargs && !S->args))) ||
        (copy && (S->src < 0 || S->src >= t->nslots || S->dst < 0 || S->dst >= t->nslots)) ||
        (!launch && !copy && (S->slot < 0 || S->slot >= t->nslots))) {
      errf(err, errlen, "bundle: target '%s': step %d: bad kind, token, kernel, arguments or slots", t->name, i);
      return false;
    }
    w_u32(w, (uint32_t)S->kind);
    w_u32(w, (uint32_t)S->token);
    w_u32(w, (uint32_t)S->nwaits);
    for (int k = 0; k < S->nwaits; k++) w_u32(w, (uint32_t)S->waits[k]);
    if (launch) {
      w_u32(w, (uint32_t)S->kernel);
      w_u32(w, (uint32_t)S->nargs);
      for (int a = 0; a < S->nargs; a++) {
        if (S->args[a] < 0 || S->args[a] >= t->nslots) {
          errf(err, errlen, "bundle: target '%s': step %d: bad slot", t->name, i);
          return false;
        }
        w_u32(w, (uint32_t)S->args[a]);
      }
      continue;
    }
    w_u32(w, (uint32_t)(copy ? S->src : S->slot));
    if (copy) w_u32(w, (uint32_t)S->dst);
    if (S->kind == KL_BUNDLE_PREFILL) {
      uint64_t bits;
      memcpy(&bits, &S->value, sizeof bits);
      w_u64(w, bits);
    }
    if (copy || S->kind == KL_BUNDLE_ALLOC_WORKSPACE) w_u64(w, S->bytes);
  }
  w_u32(w, (uint32_t)t->noutputs);
  for (int i = 0; i < t->noutputs; i++) {
    if (t->outputs[i] < 0 || t->outputs[i] >= t->nslots) {
      errf(err, errlen, "bundle: target '%s': output %d: bad slot", t->name, i);
      return false;
    }
    w_u32(w, (uint32_t)t->outputs[i]);
  }
  return true;
}

int kl_bundle_encode(int ntargets, const kl_bundle_target *targets, const char *producer, void **out, size_t *size,
                     char *err, size_t errlen) {
  *out = NULL;
  *size = 0;
  if (err && errlen) err[0] = 0;
  if (ntargets < 1 || !targets) {
    errf(err, errlen, "bundle: nothing to write (no targets)");
    return -1;
  }
  /* section list: meta, then per target: plan, IR, binaries, constants */
  size_t cap = 1, n = 0;
  for (int t = 0; t < ntargets; t++)
    cap += 2 + (size_t)(targets[t].nkernels > 0 ? targets[t].nkernels : 0) +
        (size_t)(targets[t].nslots > 0 ? targets[t].nslots : 0);
  psec *secs = calloc(cap, sizeof *secs);
  if (!secs) {
    errf(err, errlen, "bundle: out of memory");
    return -1;
  }
  int rc = -1;
  wb meta = { 0 };
  w_u32(&meta, (uint32_t)ntargets);
  w_str(&meta, producer ? producer : "");
  secs[n++] = (psec){ SEC_META, 0, 0, meta.p, meta.n, meta.p };
  for (int t = 0; t < ntargets; t++) {
    const kl_bundle_target *T = &targets[t];
    if (!T->name || !*T->name) {
      errf(err, errlen, "bundle: target %d has no name", t);
      goto done;
    }
    for (int u = 0; u < t; u++)
      if (!strcmp(targets[u].name, T->name)) {
        errf(err, errlen, "bundle: target '%s' given twice", T->name);
        goto done;
      }
    if (T->nkernels < 0 || T->nslots < 0 || T->nsteps < 0 || T->noutputs < 0) {
      errf(err, errlen, "bundle: target '%s': negative count", T->name);
      goto done;
    }
    wb plan = { 0 };
    bool ok = encode_plan(&plan, T, err, errlen);
    secs[n++] = (psec){ SEC_PLAN, (uint32_t)t, 0, plan.p, plan.n, plan.p };
    if (!ok) goto done;
    if (plan.oom) {
      errf(err, errlen, "bundle: out of memory");
      goto done;
    }
    if (!T->ir) {
      errf(err, errlen, "bundle: target '%s' has no IR text", T->name);
      goto done;
    }
    secs[n++] = (psec){ SEC_IR, (uint32_t)t, 0, T->ir, T->ir_size, NULL };
    for (int k = 0; k < T->nkernels; k++) {
      if (!T->kernels[k].binary || !T->kernels[k].binary_size) {
        errf(err, errlen, "bundle: target '%s': kernel %s has no binary", T->name, T->kernels[k].name);
        goto done;
      }
      secs[n++] = (psec){ SEC_BINARY, (uint32_t)t, (uint32_t)k, T->kernels[k].binary, T->kernels[k].binary_size, NULL };
    }
    for (int s = 0; s < T->nslots; s++) {
      const kl_bundle_slot *S = &T->slots[s];
      if (S->kind != KL_BUNDLE_CONSTANT) continue;
      uint64_t bytes = 0;
      span_bytes(S->t.rank, S->t.shape, S->t.strides, elem_bytes_of(S->t.elem), &bytes);
      if (S->data_size != bytes || (bytes && !S->data)) {
        errf(err, errlen, "bundle: target '%s': constant slot %d has %zu bytes of data, its type %s needs %llu",
             T->name, s, S->data_size, S->t.type ? S->t.type : "?", (unsigned long long)bytes);
        goto done;
      }
      if (bytes) secs[n++] = (psec){ SEC_CONST, (uint32_t)t, (uint32_t)s, S->data, S->data_size, NULL };
    }
  }
  if (meta.oom) {
    errf(err, errlen, "bundle: out of memory");
    goto done;
  }
  {
    /* layout */
    uint64_t pos = HEADER_BYTES + (uint64_t)n * ENTRY_BYTES;
    uint64_t *offs = calloc(n + 1, sizeof *offs);
    if (!offs) {
      errf(err, errlen, "bundle: out of memory");
      goto done;
    }
    for (size_t i = 0; i < n; i++) {
      pos = (pos + 7) & ~(uint64_t)7;
      offs[i] = pos;
      pos += secs[i].size;
    }
    unsigned char *buf = calloc(1, (size_t)pos);
    if (!buf) {
      free(offs);
      errf(err, errlen, "bundle: out of memory (%llu bytes)", (unsigned long long)pos);
      goto done;
    }
    memcpy(buf, MAGIC, 8);
    put_u32(buf + 8, KL_BUNDLE_FORMAT_VERSION);
    put_u32(buf + 12, HEADER_BYTES);
    put_u32(buf + 16, (uint32_t)n);
    put_u32(buf + 20, 0);
    put_u64(buf + 24, pos);
    for (size_t i = 0; i < n; i++) {
      unsigned char *e = buf + HEADER_BYTES + i * ENTRY_BYTES;
      if (secs[i].size) memcpy(buf + offs[i], secs[i].data, secs[i].size);
      put_u32(e, secs[i].kind);
      put_u32(e + 4, secs[i].target);
      put_u32(e + 8, secs[i].index);
      put_u32(e + 12, 0);
      put_u64(e + 16, offs[i]);
      put_u64(e + 24, secs[i].size);
      put_u64(e + 32, kl_bundle_fnv1a64(buf + offs[i], secs[i].size));
    }
    put_u64(buf + 32, kl_bundle_fnv1a64(buf + HEADER_BYTES, n * ENTRY_BYTES));
    put_u64(buf + 40, kl_bundle_fnv1a64(buf, 40));
    free(offs);
    *out = buf;
    *size = (size_t)pos;
    rc = 0;
  }
done:
  for (size_t i = 0; i < n; i++) free(secs[i].owned);
  free(secs);
  return rc;
}

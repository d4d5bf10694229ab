/* rock_gridwise_to_blockwise.c — the `rock-gridwise-to-blockwise` pass.
 *
 * rock.gridwise_gemm(a [G,Kp,Mp], b [G,Kp,Np], c [G,Mp,Np]) {m_per_block = MB, ...}
 * (sizes already tile multiples) becomes, in place:
 *   %bid = rock.workgroup_id    %tid = rock.workitem_id
 *   %lds_a = rock.alloc : buffer<KB x MB x T, lds>   (kpack > 1: buffer<KB/kpack x MB x
 *            kpack x T, lds> under a rock.transform viewing it as [KB, MB])
 *   %lds_b likewise [KB, NB]; %copy_a / %copy_b = rock.alloc private [KB*MB/BS] / [KB*NB/BS]
 *   %acc = rock.alloc : buffer<MT*NT x Tacc, private>; rock.fill(%acc) {value = 0}
 *   scf.for %kl = 0 to Kp/KB step 1 {
 *     rock.threadwise_read_into(%a, %copy_a, %bid, %tid, %kl) {view: (bid, tid, kl, iter) -> (g, k, m), vector_len}
 *     rock.threadwise_read_into(%b, %copy_b, %bid, %tid, %kl) {view: ... -> (g, k, n), vector_len}
 *     rock.threadwise_write_all(%copy_a, %lds_a, %tid) {view: (tid, iter) -> (k, m), store = "set", vector_len}
 *     rock.threadwise_write_all(%copy_b, %lds_b, %tid) {...}
 *     rock.barrier
 *     rock.blockwise_gemm(%lds_a, %lds_b, %acc, %tid) {m_per_block, n_per_block, k_per_block,
 *                         m_per_thread, n_per_thread, kpack, block_size}
 *     rock.barrier
 *   }
 *   rock.threadwise_write_all(%acc, %c, %bid, %tid) {view: (bid, tid, iter) -> (g, m, n), store, vector_len}
 * Coordinates: bid = (g * Mp/MB + m_block) * Np/NB + n_block (bid: the workgroup id in the
 * tile order of option raster-group-m, passes/gemm_raster.h; auto by default); C tile of thread tid:
 * rows (tid / (NB/NT)) * MT + [0, MT), columns (tid % (NB/NT)) * NT + [0, NT); acc[i*NT + j]
 * holds (row i, column j) of that tile (the rock.blockwise_gemm contract of
 * rock-blockwise-to-threadwise). The global -> LDS copy: each thread copies a ck x cd
 * sub-tile of the KB x MB (resp. KB x NB) tile; the layout (ck, cd, and whether iter
 * and tid each run fastest along K or along M/N) is chosen per operand for, in order:
 * the longest vector along iter through the operand's views down to its buffer
 * (kl_view_max_vectorization), the fewest 64-byte lines touched when the first wave
 * (64 threads) reads its first vectors (coalescing; addresses from the composed views),
 * on AMD MFMA / WMMA tiles with 16-byte kpack rows the fewest LDS wavefronts of the copy's
 * stores (copy_wavefronts), the shortest per-thread run along the vector dim, vectors
 * along M/N rather than K. On those AMD tiles two keys come first: a shortest LDS store
 * run of at least 4 bytes (lds_store_run: no 2-byte ds_write of a transposed operand),
 * and, after the vector length, stores at most 2-way (ranked above the lines).
 * vector_len records the vector length. When an operand is a view of a global
 * rock.alloc written directly by one fusing op (a rock.elementwise prologue, fused into
 * the copies by rock-align-tiling), the layout is chosen for the view of its primary
 * input instead (the copy view composed down to the alloc, then through the input's
 * views): the `primary_input` attribute of the elementwise when given (an index that is
 * not an input is an error at the elementwise), else the largest input by elements of
 * its buffer, then the longest vector its views allow along any dim, then the lowest
 * index; with several inputs the choice is recorded as primary_input.
 * Accel GEMMs with more than one K step are software pipelined: the tiles of step 0 are
 * read into the private copies before the loop, and each step, after writing its copies
 * to LDS and the first barrier, reads the next step's tiles ((kl + 1) mod (Kp/KB): the
 * last step reloads step 0, in bounds and unused) before rock.blockwise_gemm, so the
 * global loads are in flight while the matrix instructions run. mma.sync GEMMs with an
 * even number of K steps whose two tile pairs fit in 48 KiB are double-buffered instead
 * (one barrier per K step, LDS tiles L0 and L1):
 *   read(0); write(L0); barrier; read(1)
 *   scf.for %kl = 0 to Kp/KB step 2 {
 *     blockwise_gemm(L0); write(L1); barrier; read((kl + 2) mod n)
 *     blockwise_gemm(L1); write(L0); barrier; read((kl + 3) mod n) }
 * (a tile is written only after the barrier that follows every wave's last read of it).
 * wgmma GEMMs (passes/rock_wgmma.h) with more than one K step take W = 3 (else 2) LDS
 * buffers whose MMAs stay in flight across the next step's copies: wg_emit, the protocol
 * in rock_wgmma.h.
 * AMDGPU accel GEMMs take the loops of amd_k_loop instead (next step's loads before the
 * step's MFMAs / WMMAs, no barrier between them and the back-edge; double-buffered with
 * one barrier per K step where amd_dbuf says: MFMA where two workgroups with two tile pairs
 * fit the LDS, MFMA / WMMA f16 / bf16 where two pairs fit at no occupancy cost);
 * option amd-k-loop = 1 / 2 forces them (single / double-buffered) on any target. Tiles
 * whose skewed pair fits the LDS once but not twice take the unpadded xor tiles
 * (lds_tile_xor) and the double-buffered loop where two xor pairs fit (amd_lds_xor; option
 * amd-lds-layout = auto | skew | xor, xor forced on any kpack > 1 tile, host included).
 * AMDGPU kpack-1 tiles (f32 MFMA, the no-matrix FMA path) take the xor1 tiles
 * (x1_tile_view: each K row's granules XOR-swizzled inside its 128 bytes, no pad; under
 * amd-lds-layout = xor on any target), the swizzle chosen with the copy layout (x1_pick). 
 * mma.sync LDS tiles are [KB/kpack, rows, kpack] with kpack * element = 16 bytes and
 * index d of M/N at row d + d/8 plus a pad row (DB a multiple of 64; else one pad row):
 * bank-conflict-free copies and fragment reads (see lower_gridwise) while the tiles fit
 * in 48 KiB. With {cp-async=S, cp-async-layout=krow} (mma.sync on NVIDIA) the stages of
 * the cp.async operands are [rows, KB + kpack] instead (lds_tile_krow), with xor panels of
 * [rows, 64 bytes of K] whose 16-byte chunks are XOR-swizzled by the row (lds_tile_xor), with
 * auto (the default) xor where KB is one panel, else kgroup (func attribute
 * async_lds_layout): the lanes that read one row's consecutive global bytes write whole
 * LDS sectors, conflict-free (xor). An M / N-contiguous operand (B stored [K, N], A stored
 * [K, M]) takes xor stages with the roles swapped (rows of K, 64-byte panels of M / N; read
 * with ldmatrix.trans), else the register path. Which operands go async, into which
 * stages, and (auto) S are planned once before the copy layouts (async_plan), which are
 * then ranked for those stages' stores.
 * The kernel func's lds_bytes grows by the tiles' bytes. */
#include "core/pass.h"
#include "core/rewrite.h"
#include "core/dialect_rock.h"
#include "core/dialect_builtin.h"
#include "core/view_emit.h"
#include "passes/fusion_util.h"
#include "passes/gemm_raster.h"
#include "passes/gemm_shape.h"
#include "passes/perf_config.h"
#include "passes/rock_accel.h"
#include "passes/rock_wgmma.h"
#include "passes/rock_tma.h"
#include "passes/rock_tma_im2col.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
  int64_t G, Kp, Mp, Np, MB, NB, KB, MT, NT, kpack, BS;
} tiles;
#define TMA_MAX_STAGES 6 /* the TMA loop's LDS stages at most (tma_emit) */
typedef struct {
  int64_t cp_async;   /* the option: -1 auto, 0 / 1 off, 2..KL_MAX_STAGES */
  int layout;         /* cp-async-layout: 0 kgroup, 1 krow, 2 xor, 3 auto (xor with one 64-byte panel, else kgroup) */
  int64_t amd_loop;   /* the option amd-k-loop: 0 by target, 1 / 2 the AMDGPU loop with 1 / 2 tile pairs */
  int amd_lds;        /* the option amd-lds-layout: 0 auto, 1 skew, 2 xor (amd_lds_xor) */
  int64_t raster_m;   /* the option raster-group-m: workgroup order (passes/gemm_raster.h); <= 1 row order */
  bool wg_fence_late; /* wgmma-fence=late: the K loop's proxy fence after the global loads (wg_step) */
  int64_t tma;        /* the option tma: 0 off, 1 auto stages, 3..6 stages (passes/rock_tma.h) */
  int64_t tma_sw;     /* the option tma-swizzle: the widest swizzle in bytes (128, 64, 32), 0 none */
  int ws;             /* the option ws: 0 off, 1 on (auto resolved: KL_WS_AUTO; passes/rock_tma.h) */
  int persistent;     /* the option persistent: 0 off, 1 on (auto resolved: KL_PERSIST_AUTO; passes/rock_tma.h) */
  int im2col;         /* the option tma-im2col: 0 off, 1 on (auto resolved: KL_TMA_IM2COL_AUTO; rock_tma_im2col.h) */
  int cluster;        /* the option cluster: the CTAs per cluster (1 none; auto resolved: KL_CLUSTER_AUTO) */
  int cluster_dir;    /* its shape: 0 chosen per GEMM (cluster_shape), 1 C x 1 (share B), 2 1 x C (share A) */
} opts;
/* The xor1 swizzle of an AMD kpack-1 LDS tile (x1_tile_view): granules of L elements
 * XOR'd by (k / kdiv) mod m within blocks of blk elements; m = 0: the plain tile. */
typedef struct {
  int64_t blk, L, kdiv, m;
} swz1;
/* Per-thread copy layout of one operand: each thread copies ck x cd elements of the
 * KB x DB tile; iter_d (tid_d): iter (tid) runs fastest along M/N, else along K. */
typedef struct {
  int64_t ck, cd;
  bool iter_d, tid_d;
  int64_t vlen, lines, run;
  bool vd;
  int64_t lds;  /* AMD MFMA / WMMA: LDS wavefronts of the copy's stores (copy_wavefronts), else 0 */
  int64_t wide; /* AMD MFMA / WMMA: bytes of the shortest LDS store run, capped at 4 (lds_store_run), else 0 */
  bool lds_ok;  /* AMD MFMA / WMMA: the copy's stores at most 2-way (lds <= 2 x its phases), else false */
  int perm;     /* AMD xor tiles (amd_lds_xor): the tile's row permutation (xor_tile_view) these counts are for */
  swz1 sw;      /* AMD kpack-1 tiles (x1_pick): the xor1 swizzle these counts are for */
} layout;

/* (bid, tid, kl, iter) -> (g, k, d) of operand a (is_a) or b. */
static kl_view *global_copy_view(const tiles *t, bool is_a, const layout *l, char *err, size_t n) {
  const char *d = is_a ? "m" : "n", *db = is_a ? "mb" : "nb", *ob = is_a ? "nb" : "mb";
  int64_t Dp = is_a ? t->Mp : t->Np, DB = is_a ? t->MB : t->NB, other = is_a ? t->Np / t->NB : t->Mp / t->MB;
  kl_vb b;
  int64_t shape[3] = { t->G, t->Kp, Dp };
  const char *names[3] = { "g", "k", d };
  kl_vb_identity(&b, 3, shape, names);
  const char *kn[3] = { "kl", "tk", "ik" };
  int64_t ks[3] = { t->Kp / t->KB, t->KB / l->ck, l->ck };
  kl_vb_unmerge(&b, "k", 3, kn, ks);
  const char *dn[3] = { db, "td", "id" };
  int64_t ds[3] = { Dp / DB, DB / l->cd, l->cd };
  kl_vb_unmerge(&b, d, 3, dn, ds);
  kl_vb_add_dim(&b, ob, other);
  const char *bn[3] = { "g", "mb", "nb" };
  kl_vb_merge(&b, "bid", 3, bn);
  const char *td_f[2] = { "tk", "td" }, *tk_f[2] = { "td", "tk" };
  kl_vb_merge(&b, "tid", 2, l->tid_d ? td_f : tk_f);
  const char *id_f[2] = { "ik", "id" }, *ik_f[2] = { "id", "ik" };
  kl_vb_merge(&b, "iter", 2, l->iter_d ? id_f : ik_f);
  const char *ord[4] = { "bid", "tid", "kl", "iter" };
  kl_vb_order(&b, 4, ord);
  return kl_vb_finish(&b, err, n);
}

/* (tid, iter) -> (k, d) of the [KB, DB] LDS tile; full: (bid, tid, kl, iter), bid and kl
 * ignored (the destination view of rock.threadwise_copy_async, whose upper space is its
 * source view's). */
static kl_view *lds_copy_view_ex(const tiles *t, bool is_a, const layout *l, bool full, char *err, size_t n) {
  const char *d = is_a ? "m" : "n";
  int64_t DB = is_a ? t->MB : t->NB;
  kl_vb b;
  int64_t shape[2] = { t->KB, DB };
  const char *names[2] = { "k", d };
  kl_vb_identity(&b, 2, shape, names);
  const char *kn[2] = { "tk", "ik" };
  int64_t ks[2] = { t->KB / l->ck, l->ck };
  kl_vb_unmerge(&b, "k", 2, kn, ks);
  const char *dn[2] = { "td", "id" };
  int64_t ds[2] = { DB / l->cd, l->cd };
  kl_vb_unmerge(&b, d, 2, dn, ds);
  const char *td_f[2] = { "tk", "td" }, *tk_f[2] = { "td", "tk" };
  kl_vb_merge(&b, "tid", 2, l->tid_d ? td_f : tk_f);
  const char *id_f[2] = { "ik", "id" }, *ik_f[2] = { "id", "ik" };
  kl_vb_merge(&b, "iter", 2, l->iter_d ? id_f : ik_f);
  if (full) {
    kl_vb_add_dim(&b, "bid", t->G * (t->Mp / t->MB) * (t->Np / t->NB));
    kl_vb_add_dim(&b, "kl", t->Kp / t->KB);
    const char *ord4[4] = { "bid", "tid", "kl", "iter" };
    kl_vb_order(&b, 4, ord4);
  } else {
    const char *ord[2] = { "tid", "iter" };
    kl_vb_order(&b, 2, ord);
  }
  return kl_vb_finish(&b, err, n);
}
static kl_view *lds_copy_view(const tiles *t, bool is_a, const layout *l, char *err, size_t n) {
  return lds_copy_view_ex(t, is_a, l, false, err, n);
}

/* (bid, tid, iter) -> (g, m, n) of c: the thread's MT x NT accumulator tile. */
static kl_view *output_view(const tiles *t, char *err, size_t n) {
  kl_vb b;
  int64_t shape[3] = { t->G, t->Mp, t->Np };
  const char *names[3] = { "g", "m", "n" };
  kl_vb_identity(&b, 3, shape, names);
  const char *mn[3] = { "mb", "tm", "im" };
  int64_t ms[3] = { t->Mp / t->MB, t->MB / t->MT, t->MT };
  kl_vb_unmerge(&b, "m", 3, mn, ms);
  const char *nn[3] = { "nb", "tn", "in" };
  int64_t ns[3] = { t->Np / t->NB, t->NB / t->NT, t->NT };
  kl_vb_unmerge(&b, "n", 3, nn, ns);
  const char *bn[3] = { "g", "mb", "nb" }, *tn[2] = { "tm", "tn" }, *in[2] = { "im", "in" };
  kl_vb_merge(&b, "bid", 3, bn);
  kl_vb_merge(&b, "tid", 2, tn);
  kl_vb_merge(&b, "iter", 2, in);
  const char *ord[3] = { "bid", "tid", "iter" };
  kl_vb_order(&b, 3, ord);
  return kl_vb_finish(&b, err, n);
}

/* Distinct 64-byte lines touched by the first min(BS, 64) threads of workgroup 0 in
 * iteration 0 when each reads its first vector (iter 0..vlen-1): the coalescing cost. */
static int64_t lines_touched(const kl_view *v, kl_value *src, int64_t bs, int64_t vlen) {
  kl_value *u = NULL;
  kl_view *full = kl_tile_compose_to_buffer(v, src, &u, NULL, 0);
  if (!full || u->type->kind != KL_TY_BUFFER || kl_view_lower_rank(full) != u->type->rank) {
    kl_view_free(full);
    return 1 << 30;
  }
  int64_t eb = (kl_type_bits(u->type->elem) + 7) / 8, nt = bs < 64 ? bs : 64, n = 0;
  int64_t *lines = kl_xmalloc(nt * vlen * sizeof *lines);
  for (int64_t t = 0; t < nt; t++)
    for (int64_t i = 0; i < vlen; i++) {
      int64_t up[4] = { 0, t, 0, i };
      bool valid;
      int64_t a = kl_view_eval_addr(full, up, u->type->strides, &valid);
      if (!valid) continue;
      int64_t line = a * eb / 64, j = 0;
      while (j < n && lines[j] != line) j++;
      if (j == n) lines[n++] = line;
    }
  free(lines);
  kl_view_free(full);
  return n;
}

static kl_view *lds_copy_view(const tiles *t, bool is_a, const layout *l, char *err, size_t n);
static int64_t copy_wavefronts(const tiles *t, const kl_view *w, int64_t DB, int skew, int perm, int64_t eb,
                               int64_t *phases);
static int64_t lds_store_run(const tiles *t, const kl_view *w, int64_t DB, int skew, int perm, int64_t cap);

/* The copy layout (see the header comment): longest vector along iter, then fewest
 * lines touched by a wave's first vector reads, then (AMD MFMA tiles with 16-byte kpack
 * rows: amd_skew >= 0, the tile's skew; xor_tile: the cp.async stages in the xor layout,
 * 1 K-major, 2 M / N-major (xor_tile_view's mn), xor_perm) the fewest LDS wavefronts of the copy's stores into the tile, then the shortest run per thread along the vectorized dim, then vectors
 * along M/N rather than K. */
static int xor_perm(const tiles *t, int64_t DB, const char *d, bool mn, const kl_view *da, int64_t vlen, int64_t eb,
                    int64_t *wf_out);
static kl_view *lds_copy_view_ex(const tiles *t, bool is_a, const layout *l, bool full, char *err, size_t n);
static int64_t x1_pick(const tiles *t, const kl_view *w, const layout *l, int64_t DB, int64_t eb, int64_t lmin,
                       bool force, swz1 *out, int64_t *phases);
static bool choose_layout(const tiles *t, bool is_a, kl_value *src, kl_value *prim, int amd_skew, bool amd_xor,
                          int xor_tile, int64_t x1, int64_t eb, layout *best, char *err, size_t n) {
  int64_t DB = is_a ? t->MB : t->NB, per = t->KB * DB / t->BS;
  bool found = false;
  for (int64_t ck = 1; ck <= t->KB; ck++) {
    if (t->KB % ck || per % ck || DB % (per / ck)) continue;
    for (int f = 0; f < 4; f++) {
      layout l = { ck, per / ck, f < 2, f % 2 == 0, 1, 0, 0, false, 0, 0, false, 0, { 0, 0, 0, 0 } };
      if ((l.iter_d && l.cd == 1 && l.ck > 1) || (!l.iter_d && l.ck == 1 && l.cd > 1))
        continue; /* same as the other order */
      l.vd = l.iter_d;
      l.run = l.vd ? l.cd : l.ck;
      kl_view *v = global_copy_view(t, is_a, &l, err, n);
      if (!v) return false;
      if (prim) { /* the primary input of the prologue: v down to the intermediate, then its views */
        kl_value *u;
        kl_view *vp = kl_tile_compose_to_buffer(v, src, &u, NULL, 0);
        l.vlen = vp ? kl_tile_vector_len(vp, prim, 3) : 1;
        l.lines = vp ? lines_touched(vp, prim, t->BS, l.vlen) : 1 << 30;
        kl_view_free(vp);
      } else {
        l.vlen = kl_tile_vector_len(v, src, 3);
        l.lines = lines_touched(v, src, t->BS, l.vlen);
      }
      kl_view_free(v);
      if (amd_skew >= 0) { /* amd_xor: the xor tile, its row permutation with the fewest wavefronts */
        kl_view *w = lds_copy_view(t, is_a, &l, err, n);
        int64_t ph = 0;
        l.lds = -1;
        for (int pm = 0; w && pm < (amd_xor ? 6 : 1); pm++) {
          int64_t php = 0, wf = copy_wavefronts(t, w, DB, amd_skew, amd_xor ? pm : -1, eb, &php);
          if (wf >= 0 && (l.lds < 0 || wf < l.lds)) l.lds = wf, ph = php, l.perm = pm;
        }
        l.lds_ok = l.lds >= 0 && l.lds <= 2 * ph;
        l.wide = w ? lds_store_run(t, w, DB, amd_skew, amd_xor ? l.perm : -1, (4 + eb - 1) / eb) * eb : 0;
        if (l.wide > 4) l.wide = 4;
        kl_view_free(w);
        if (l.lds < 0) l.lds = INT64_MAX;
      } else if (x1 && found && l.vlen < best->vlen) { /* ranks below the best on the vector: no search */
        l.lds = INT64_MAX;
      } else if (x1) { /* AMD kpack-1 tiles: the xor1 swizzle with the fewest wavefronts (x1_pick) */
        kl_view *w = lds_copy_view(t, is_a, &l, err, n);
        int64_t ph = 0, wf = w ? x1_pick(t, w, &l, DB, eb, x1 > 0 ? x1 : -x1, x1 < 0, &l.sw, &ph) : -1;
        kl_view_free(w);
        l.lds_ok = wf >= 0 && wf <= 2 * ph;
        l.lds = wf < 0 ? INT64_MAX : wf;
      } else if (xor_tile) { /* the copy's stores into the xor tile (its best row permutation) */
        kl_view *w = lds_copy_view_ex(t, is_a, &l, true, err, n);
        int64_t wf = INT64_MAX;
        if (!w || xor_perm(t, DB, is_a ? "m" : "n", xor_tile == 2, w, l.vlen, eb, &wf) < 0) wf = INT64_MAX;
        kl_view_free(w);
        l.lds = wf;
      }
      bool better = !found || l.wide > best->wide || (l.wide == best->wide && l.vlen > best->vlen) ||
          (l.wide == best->wide && l.vlen == best->vlen && l.lds_ok && !best->lds_ok) ||
          (l.wide == best->wide && l.vlen == best->vlen && l.lds_ok == best->lds_ok &&
           (l.lines < best->lines ||
            (l.lines == best->lines &&
             (l.lds < best->lds ||
              (l.lds == best->lds && (l.run < best->run || (l.run == best->run && l.vd && !best->vd)))))));
      if (better) {
        *best = l;
        found = true;
      }
    }
  }
  if (!found)
    snprintf(err, n, "no per-thread copy layout for a %lldx%lld tile over %lld threads", (long long)t->KB,
             (long long)DB, (long long)t->BS);
  return found;
}

/* ---- the primary input of a prologue (input fusion, see the header comment) ---- */
/* The fusing writer of the global rock.alloc under operand v when it writes it directly
 * and has at least one input (passes/fusion_util.h); NULL otherwise. */
static kl_op *prologue_of(kl_value *v) {
  kl_op *w;
  kl_value *a;
  kl_fu_input *in;
  char err[256];
  int n = kl_fu_operand_inputs(v, &w, &a, &in, err, sizeof err);
  if (n < 0) return NULL;
  kl_fu_inputs_free(in, n);
  return n >= 1 ? w : NULL;
}

/* The longest vector any dim of input v's views (down to its buffer) allows. */
static int64_t input_vector_len(kl_value *v) {
  kl_view_err ve = { 0 };
  kl_view *id = kl_view_identity(v->type->rank, v->type->shape, NULL, &ve);
  int64_t best = 1;
  for (int d = 0; id && d < v->type->rank; d++) {
    int64_t l = kl_tile_vector_len(id, v, d);
    if (l > best) best = l;
  }
  kl_view_free(id);
  return best;
}

/* The primary input of prologue ew: its `primary_input` attribute when given (checked),
 * else the largest input by elements of its buffer, then the longest vector its views
 * allow, then the lowest index; recorded on ew when it has several inputs. -1 (after
 * kl_rewriter_fail) on a bad attribute. */
static int64_t primary_input(kl_rewriter *rw, kl_op *ew) {
  int nin = ew->nopnds - 1;
  const kl_attr *a = kl_op_attr(ew, "primary_input");
  if (a) {
    if (a->kind != KL_AT_INT || a->i < 0 || a->i >= nin) {
      kl_rewriter_fail(rw, ew->loc, "rock.elementwise: primary_input must be an input index in [0, %d), got %s", nin,
                       kl_attr_str_of(a));
      return -1;
    }
    return a->i;
  }
  int64_t best = 0, best_n = -1, best_v = 0;
  for (int i = 0; i < nin; i++) {
    kl_value *v = ew->opnds[i].value;
    int nc;
    kl_value *u = kl_rock_underlying(v, NULL, &nc, 0);
    if (v->type->kind != KL_TY_BUFFER || u->type->kind != KL_TY_BUFFER) continue;
    int64_t n = kl_type_numel(u->type), vl = input_vector_len(v);
    if (n > best_n || (n == best_n && vl > best_v)) best = i, best_n = n, best_v = vl;
  }
  if (nin > 1) kl_rewriter_set_attr(rw, ew, "primary_input", kl_attr_int(kl_rewriter_ctx(rw), best));
  return best;
}

/* Records the kernel argument under primary input v (through its views) in the kernel
 * function's `primary_inputs` (its arg_names, in the order of the GEMM operands): what
 * p:kernels() shows as the inputs that drive the fused loads' vectorization. */
static void record_primary(kl_rewriter *rw, kl_op *ew, kl_value *v) {
  int nc;
  kl_value *u = kl_rock_underlying(v, NULL, &nc, 0);
  kl_op *fn = ew;
  while (fn && !kl_is_kernel(fn)) fn = kl_op_parent_op(fn);
  if (!fn || u->def || kl_value_parent_op(u) != fn) return; /* not a kernel argument */
  kl_block *entry = kl_region_entry(&fn->regions[0]);
  const kl_attr *names = kl_op_attr(fn, "arg_names");
  int idx = -1;
  for (int i = 0; entry && i < entry->nargs; i++)
    if (entry->args[i] == u) idx = i;
  if (idx < 0 || !names || names->kind != KL_AT_ARRAY || idx >= names->n) return;
  const kl_attr *name = names->elems[idx], *old = kl_op_attr(fn, "primary_inputs");
  const kl_attr *list[32];
  int n = 0;
  for (int i = 0; old && old->kind == KL_AT_ARRAY && i < old->n && n < 31; i++) {
    if (old->elems[i] == name) return; /* already listed */
    list[n++] = old->elems[i];
  }
  list[n++] = name;
  kl_rewriter_set_attr(rw, fn, "primary_inputs", kl_attr_array(kl_rewriter_ctx(rw), n, list));
}

/* The value whose views decide operand v's global load vectorization: the primary
 * input of its prologue, or NULL (v itself). *bad after a reported error. */
static kl_value *load_driver(kl_rewriter *rw, kl_value *v, bool *bad) {
  kl_op *ew = prologue_of(v);
  if (!ew) return NULL;
  int64_t p = primary_input(rw, ew);
  if (p < 0) {
    *bad = true;
    return NULL;
  }
  record_primary(rw, ew, ew->opnds[p].value);
  return ew->opnds[p].value;
}

static kl_value *alloc(kl_rewriter *rw, kl_loc loc, const kl_type *elem, int rank, const int64_t *shape, kl_space sp) {
  const kl_type *t = kl_type_buffer(kl_rewriter_ctx(rw), elem, rank, shape, NULL, sp);
  return kl_op_result(kl_rewriter_create(rw, "rock.alloc", loc, 0, NULL, 1, &t, 0, NULL, 0), 0);
}
/* An LDS buffer of shape s (rank dims) seen through the tile view v (consumed); NULL when v
 * is NULL (its builder's error stands). */
static kl_value *lds_viewed(kl_rewriter *rw, kl_loc loc, const kl_type *elem, int rank, const int64_t *s, kl_view *v) {
  if (!v) return NULL;
  kl_value *raw = alloc(rw, loc, elem, rank, s, KL_SPACE_LDS);
  kl_value *r = kl_tile_transform(rw, loc, raw, v);
  kl_view_free(v);
  return r;
}

/* Rows of one K group of an LDS tile [KB/kpack, rows, kpack] holding DB indices along M/N:
 * skew 0: DB; 1: DB + 1 (one pad row); 2: DB + DB/8 + 1 (index d at row d + d/8, plus one
 * pad row). See lower_gridwise for why. */
static int64_t lds_rows(int64_t DB, int skew) { return skew == 2 ? DB + DB / 8 + 1 : skew == 1 ? DB + 1 : DB; }

/* The skew of an LDS tile of DB rows per K group (lds_rows): 2 for DB a multiple of 64, 1
 * for other multiples of 8, else 0; WMMA (gfx11, wave32) takes 2 for every multiple of 16
 * (its one-wave 16- and 32-row tiles' copies were 3.4-way with one pad row). */
static int tile_skew(int64_t DB, bool wmma) { return DB % 64 == 0 || (wmma && DB % 16 == 0) ? 2 : DB % 8 == 0 ? 1 : 0; }

/* LDS tile [KB, DB]: a plain alloc, or (kpack > 1) [KB/kpack, lds_rows(DB, skew), kpack]
 * viewed as [KB, DB]. */
static kl_view *lds_tile_view(const tiles *t, int64_t DB, int skew, const char *d, int64_t s[3], char *err, size_t n) {
  s[0] = t->KB / t->kpack, s[1] = lds_rows(DB, skew), s[2] = t->kpack;
  kl_vb b;
  const char *names[3] = { "ko", skew ? "row" : d, "ki" };
  kl_vb_identity(&b, 3, s, names);
  if (skew && !b.bad) { /* row = 9 * (d / 8) + d % 8 (skew 2) or row = d (skew 1) */
    const char *dn[2] = { "dh", "dl" };
    int64_t sz[2] = { skew == 2 ? DB / 8 : DB, skew == 2 ? 8 : 1 }, co[2] = { skew == 2 ? 9 : 1, 1 };
    kl_view *nv = kl_view_embed(b.v, "row", 2, dn, sz, co, &b.err);
    if (nv) {
      kl_view_free(b.v);
      b.v = nv;
    } else
      b.bad = true;
    kl_vb_merge(&b, d, 2, dn);
  }
  const char *kf[2] = { "ko", "ki" }, *ord[2] = { "k", d };
  kl_vb_merge(&b, "k", 2, kf);
  kl_vb_order(&b, 2, ord);
  return kl_vb_finish(&b, err, n);
}
static kl_value *lds_tile(kl_rewriter *rw, kl_loc loc, const kl_type *elem, const tiles *t, int64_t DB, int skew,
                          const char *d, char *err, size_t n) {
  if (t->kpack == 1) {
    int64_t s[2] = { t->KB, DB };
    return alloc(rw, loc, elem, 2, s, KL_SPACE_LDS);
  }
  int64_t s[3];
  kl_view *v = lds_tile_view(t, DB, skew, d, s, err, n);
  return lds_viewed(rw, loc, elem, 3, s, v);
}

/* LDS tile [KB, DB] of a cp.async operand (cp-async-layout=krow): [DB, KB + kpack] viewed
 * as [KB, DB], i.e. each M/N index one row of its KB K elements plus one pad vector
 * (kpack * element = 16 bytes). A K-contiguous operand's copy (the lanes that read one
 * row's consecutive global bytes) writes consecutive LDS bytes, and the ldmatrix rows (8
 * consecutive indices at one K group) sit (KB + kpack) * element bytes apart: an odd
 * multiple of 16 bytes (KB a multiple of 2 * kpack) puts them on 8 distinct 16-byte bank
 * groups. NULL (with err) when the view cannot be built. */
static kl_value *lds_tile_krow(kl_rewriter *rw, kl_loc loc, const kl_type *elem, const tiles *t, int64_t DB,
                               const char *d, char *err, size_t n) {
  int64_t s[2] = { DB, t->KB + t->kpack };
  kl_value *raw = alloc(rw, loc, elem, 2, s, KL_SPACE_LDS);
  kl_vb b;
  const char *names[2] = { d, "k" };
  kl_vb_identity(&b, 2, s, names);
  if (!b.bad) {
    const char *kn = "k";
    int64_t be[2] = { 0, t->KB };
    kl_view *nv = kl_view_slice(b.v, 1, &kn, be, &b.err);
    if (nv) {
      kl_view_free(b.v);
      b.v = nv;
    } else
      b.bad = true;
  }
  const char *ord[2] = { "k", d };
  kl_vb_order(&b, 2, ord);
  kl_view *v = kl_vb_finish(&b, err, n);
  if (!v) return NULL;
  kl_value *r = kl_tile_transform(rw, loc, raw, v);
  kl_view_free(v);
  return r;
}
/* Xor{d, m} of the swizzled tile (lds_tile_xor): a row of nc 16-byte chunks; m = min(nc,
 * 8) chunks XOR'd by (row / d) mod m with d = max(1, 8 / nc), so that the 16-byte slot
 * (address / 16 mod 8) of chunk c of rows r0 .. r0 + 7 (r0 a multiple of 8) takes all 8
 * values: nc >= 8: slot = c' mod 8 = (c XOR r) mod 8; nc = 4: slot = 4 (r mod 2) + (c XOR
 * r / 2 mod 4); nc = 2: slot = 2 (r mod 4) + (c XOR r / 4 mod 2). */
static void xor_params(int64_t nc, int64_t *d, int64_t *m) {
  *m = nc < 8 ? nc : 8;
  *d = nc < 8 ? 8 / nc : 1;
}
/* The swizzled tile's view (cp-async-layout=xor): [KB, DB] -> [P, R, ncp, kpack]: K in P
 * panels of ncp = min(KB/kpack, 4) 16-byte chunks (64-byte rows for 2-byte types), R = DB
 * rows plus, with P > 1, one pad row per panel (so that the two halves of a 128-byte K row
 * written by 8 lanes land on the two 64-byte halves of the bank period), else no padding;
 * 64-byte rows keep the per-K-step XOR terms to two values (K 64 as 128-byte rows spilled
 * 72-88 bytes at S = 3 on sm_80: one live address per K step of 16). Index d of M/N sits at row q = d with its low three bits permuted by
 * `perm` (0..5: the order of q's bits that form d's bits 2, 1, 0; 0 the identity), and the
 * 16-byte chunk c of row q at chunk c XOR ((q / dv) mod m) (xor_params). Every
 * permutation keeps 8 consecutive indices d0 .. d0 + 7 (d0 a multiple of 8) on 8
 * consecutive rows, so each ldmatrix phase (8 indices at one chunk) takes the 8
 * 16-byte slots whatever perm; perm only moves the copy's lanes (xor_perm picks it).
 * NULL (with err) unless KB/kpack is a power of two >= 2 and DB a multiple of 8.
 * mn (an M / N-contiguous operand, kl_gemm_async_major KL_ASYNC_MN): the roles swap: the
 * rows are the KB indices of K (their low three bits permuted) and each row holds the DB
 * indices of M / N in P = DB / kpack / ncp panels of ncp 16-byte chunks (one pad row per
 * panel with P > 1: the 8 lanes writing a 128-byte run of a row cover two panels 4 slots
 * apart), chunk c of row k at c XOR ((k / dv) mod m): the 8 rows k0 .. k0 + 7 of an
 * ldmatrix.trans phase (8 K indices x 8 consecutive M / N at one chunk) take the 8 slots.
 * NULL (with err) unless DB/kpack is 2 or a multiple of 4 and KB a multiple of 8. */
static const char *const xor_bits[6][3] = { { "q2", "q1", "q0" }, { "q2", "q0", "q1" }, { "q0", "q1", "q2" },
                                            { "q1", "q2", "q0" }, { "q0", "q2", "q1" }, { "q1", "q0", "q2" } };
static kl_view *xor_tile_view(const tiles *t, int64_t DB, const char *d, int perm, bool mn, int64_t s[4], char *err,
                              size_t n) {
  int64_t rows = mn ? t->KB : DB, ext = mn ? DB : t->KB, nc = ext / t->kpack, dv, m;
  const char *rn = mn ? "k" : d, *cn = mn ? d : "k";
  if (!mn && (t->KB % t->kpack || nc < 2 || (nc & (nc - 1)) || DB % 8)) {
    snprintf(err, n, "cp-async-layout=xor needs kPerBlock / kpack a power of two >= 2 and tile rows a multiple of 8");
    return NULL;
  }
  if (mn && (DB % t->kpack || (nc != 2 && (nc < 4 || nc % 4)) || t->KB % 8)) {
    snprintf(err, n,
             "cp-async-layout=xor for an M / N-contiguous operand needs tile rows / kpack 2 or a multiple of 4 and "
             "kPerBlock a multiple of 8");
    return NULL;
  }
  int64_t ncp = nc < 4 ? nc : 4, P = nc / ncp, R = rows + (P > 1);
  xor_params(ncp, &dv, &m);
  s[0] = P, s[1] = R, s[2] = ncp, s[3] = t->kpack;
  int64_t prm[2] = { dv, m };
  const char *names[4] = { "p", "q", "kc", "ki" };
  int up0[2] = { 1, 2 }, up1[2] = { 0, 3 };
  kl_vtrans tr[2] = { { KL_VT_XOR, 2, 2, 2, prm, up0, up0 }, { KL_VT_PASSTHROUGH, 0, 2, 2, NULL, up1, up1 } };
  kl_vmap map = { 4, 4, 2, names, s, names, s, tr };
  kl_vb b = { 0 };
  b.v = kl_view_make(1, &map, &b.err);
  b.bad = !b.v;
  if (R > rows && !b.bad) { /* the pad row of each panel */
    const char *qn = "q";
    int64_t be[2] = { 0, rows };
    kl_view *nv = kl_view_slice(b.v, 1, &qn, be, &b.err);
    if (nv) {
      kl_view_free(b.v);
      b.v = nv;
    } else
      b.bad = true;
  }
  const char *qn[4] = { "qh", "q2", "q1", "q0" },
             *dn[4] = { "qh", xor_bits[perm][0], xor_bits[perm][1], xor_bits[perm][2] };
  int64_t qs[4] = { rows / 8, 2, 2, 2 };
  kl_vb_unmerge(&b, "q", 4, qn, qs);
  kl_vb_merge(&b, rn, 4, dn);
  const char *kf[3] = { "p", "kc", "ki" }, *ord[2] = { "k", d };
  kl_vb_merge(&b, cn, 3, kf);
  kl_vb_order(&b, 2, ord);
  return kl_vb_finish(&b, err, n);
}
/* Bytes of one xor tile (xor_tile_view): P panels of R rows of ncp 16-byte chunks. */
static int64_t xor_tile_bytes(const tiles *t, int64_t DB, bool mn, int64_t eb) {
  int64_t rows = mn ? t->KB : DB, nc = (mn ? DB : t->KB) / t->kpack, ncp = nc < 4 ? nc : 4, P = ncp ? nc / ncp : 0;
  return P * (rows + (P > 1)) * ncp * t->kpack * eb;
}
/* LDS tile [KB, DB] of a cp.async operand (cp-async-layout=xor): xor_tile_view over a
 * [P, R, ncp, kpack] alloc. A K-contiguous operand's copy writes each row's KB *
 * element bytes into that row's own aligned span (whole 32-byte sectors: 16 per 512 bytes
 * copied, krow's 80-byte pitch 20), and ldmatrix stays conflict-free without krow's pad
 * vector; an M / N-contiguous one (mn) writes 16-byte runs of M / N into K rows that
 * ldmatrix.trans reads. NULL (with err) when the view cannot be built. */
static kl_value *lds_tile_xor(kl_rewriter *rw, kl_loc loc, const kl_type *elem, const tiles *t, int64_t DB,
                              const char *d, int perm, bool mn, char *err, size_t n) {
  int64_t s[4];
  kl_view *v = xor_tile_view(t, DB, d, perm, mn, s, err, n);
  return lds_viewed(rw, loc, elem, 4, s, v);
}
/* LDS tile [KB, DB] of a TMA operand in the sw-byte swizzled K-major layout (passes/rock_tma.h,
 * sw = 128, 64, 32): a [KB / KS, DB, sw / 16, 16 / eb] alloc (KS = sw / eb K elements per
 * row: one TMA box {KS, DB} per panel), viewed as [KB, DB] with the 16-byte chunk c of
 * row d at chunk c XOR ((d / dv) mod m) (xor_params of sw / 16 chunks: d % 8, d / 2 % 4,
 * d / 4 % 2), which is what TMA's CU_TENSOR_MAP_SWIZZLE_<sw>B writes and the wgmma
 * descriptors of that swizzle read when each panel starts at a multiple of 8 * sw bytes
 * (DB a multiple of 8; join_lds aligns the tiles). NULL (with err) unless KB is a multiple
 * of KS. */
static kl_value *lds_tile_swz(kl_rewriter *rw, kl_loc loc, const kl_type *elem, const tiles *t, int64_t DB,
                              const char *d, int64_t sw, char *err, size_t n) {
  int64_t eb = (kl_type_bits(elem) + 7) / 8, nc = sw / 16, kpe = 16 / eb, dv, m;
  if (sw < 32 || t->KB % (sw / eb) || DB % 8) {
    snprintf(err, n, "the %lld-byte TMA swizzle needs kPerBlock a multiple of %lld and tile rows a multiple of 8",
             (long long)sw, (long long)(sw / eb));
    return NULL;
  }
  xor_params(nc, &dv, &m);
  int64_t s[4] = { t->KB / (sw / eb), DB, nc, kpe }, prm[2] = { dv, m };
  const char *names[4] = { "p", d, "kc", "ki" };
  int up0[2] = { 1, 2 }, up1[2] = { 0, 3 };
  kl_vtrans tr[2] = { { KL_VT_XOR, 2, 2, 2, prm, up0, up0 }, { KL_VT_PASSTHROUGH, 0, 2, 2, NULL, up1, up1 } };
  kl_vmap map = { 4, 4, 2, names, s, names, s, tr };
  kl_vb b = { 0 };
  b.v = kl_view_make(1, &map, &b.err);
  b.bad = !b.v;
  const char *kf[3] = { "p", "kc", "ki" }, *ord[2] = { "k", d };
  kl_vb_merge(&b, "k", 3, kf);
  kl_vb_order(&b, 2, ord);
  kl_view *v = kl_vb_finish(&b, err, n);
  return lds_viewed(rw, loc, elem, 4, s, v);
}
/* The swizzle (bytes) of the TMA tiles for K tiles of kb_bytes: the widest of 128, 64, 32
 * up to the option's `cap` that divides them; 0 when cap is 0 or none does. */
static int64_t tma_swizzle_of(int64_t cap, int64_t kb_bytes) {
  for (int64_t sw = 128; sw >= 32; sw /= 2)
    if (sw <= cap && kb_bytes % sw == 0) return sw;
  return 0;
}
/* The swizzle of an MN-major TMA operand's tile (DB rows of M / N, K tile KB): the widest
 * up to cap whose panel (sw / eb elements of M / N) divides the tile, the warpgroup's
 * part (wave) and the instruction's (instr: 64 for A, N for B), so that every descriptor
 * starts on a panel; 0 when none (or KB > 256, a box's limit). */
static int64_t tma_mn_swizzle(int64_t cap, int64_t eb, int64_t DB, int64_t wave, int64_t instr, int64_t KB) {
  for (int64_t sw = 128; sw >= 32 && KB <= 256 && wave > 0 && instr > 0; sw /= 2)
    if (sw <= cap && (DB * eb) % sw == 0 && (wave * eb) % sw == 0 && (instr * eb) % sw == 0) return sw;
  return 0;
}
/* LDS tile [KB, DB] of an MN-major TMA operand in the sw-byte swizzled MN-major layout: a
 * [DB / MS, KB, sw / 16, 16 / eb] alloc (MS = sw / eb elements of M / N per row: one TMA box
 * {MS, KB} per panel; row k of a panel holds M / N elements of K index k), viewed as
 * [KB, DB] with the 16-byte chunk c of row k at chunk c XOR ((k / dv) mod m) (xor_params).
 * The wgmma descriptors read it transposed (imm-trans): LBO the panel stride, SBO the
 * 8-row K group stride (passes/rock_wgmma.h). */
static kl_value *lds_tile_swz_mn(kl_rewriter *rw, kl_loc loc, const kl_type *elem, const tiles *t, int64_t DB,
                                 const char *d, int64_t sw, char *err, size_t n) {
  int64_t eb = (kl_type_bits(elem) + 7) / 8, nc = sw / 16, kpe = 16 / eb, dv, m;
  if (sw < 32 || DB % (sw / eb) || t->KB % 8) {
    snprintf(err, n, "the %lld-byte MN-major TMA swizzle needs tile rows a multiple of %lld", (long long)sw,
             (long long)(sw / eb));
    return NULL;
  }
  xor_params(nc, &dv, &m);
  int64_t s[4] = { DB / (sw / eb), t->KB, nc, kpe }, prm[2] = { dv, m };
  const char *names[4] = { "p", "k", "dc", "di" };
  int up0[2] = { 1, 2 }, up1[2] = { 0, 3 };
  kl_vtrans tr[2] = { { KL_VT_XOR, 2, 2, 2, prm, up0, up0 }, { KL_VT_PASSTHROUGH, 0, 2, 2, NULL, up1, up1 } };
  kl_vmap map = { 4, 4, 2, names, s, names, s, tr };
  kl_vb b = { 0 };
  b.v = kl_view_make(1, &map, &b.err);
  b.bad = !b.v;
  const char *df[3] = { "p", "dc", "di" }, *ord[2] = { "k", d };
  kl_vb_merge(&b, d, 3, df);
  kl_vb_order(&b, 2, ord);
  kl_view *v = kl_vb_finish(&b, err, n);
  return lds_viewed(rw, loc, elem, 4, s, v);
}

/* The wavefronts of one shared-memory access phase: the most distinct byte addresses of
 * addr[0..n) that fall on one of `slots` banks of `unit` bytes. */
static int64_t phase_wavefronts(const int64_t *addr, int64_t n, int64_t unit, int64_t slots) {
  int64_t count[32] = { 0 }, worst = 0; /* per slot (slots = 128 / unit <= 32); one pass, not one per slot */
  for (int64_t x = 0; x < n; x++) {
    bool seen = false;
    for (int64_t y = 0; y < x && !seen; y++) seen = addr[y] == addr[x];
    int64_t sl = (addr[x] / unit) % slots;
    if (seen || sl < 0 || sl >= slots || sl >= 32) continue;
    if (++count[sl] > worst) worst = count[sl];
  }
  return worst;
}

/* The row permutation of the xor tile for the copy (bid, tid, kl, iter) -> (k, d) `da` of
 * vlen-element vectors: the first of the six whose copy stores (bid 0, K step 0: every
 * thread, every vector) take the fewest LDS wavefronts (per 128-byte phase of lanes, the
 * most distinct addresses on one slot), e.g. swapping bits 0 and 2 where a phase's lanes
 * write rows d and d + 4 (the 128x128x32 tiles: 4 lanes per 64-byte row, each thread 4
 * consecutive rows). -1 when no view can be built. */
static int xor_perm(const tiles *t, int64_t DB, const char *d, bool mn, const kl_view *da, int64_t vlen, int64_t eb,
                    int64_t *wf_out) {
  int best = -1;
  int64_t best_wf = 0, bytes = vlen * eb, unit = bytes > 4 ? bytes : 4, lanes = 128 / unit;
  int64_t per = t->KB * DB / t->BS;
  for (int perm = 0; perm < 6; perm++) {
    char err[256];
    int64_t s[4];
    kl_view *tv = xor_tile_view(t, DB, d, perm, mn, s, err, sizeof err);
    kl_view_err ve = { 0 };
    kl_view *full = tv ? kl_view_compose(da, tv, &ve) : NULL;
    kl_view_free(tv);
    if (!full) continue;
    int64_t strides[4] = { s[1] * s[2] * s[3], s[2] * s[3], s[3], 1 }, wf = 0, addr[32];
    for (int64_t i = 0; i < per; i += vlen)
      for (int64_t p0 = 0; p0 < t->BS; p0 += lanes) {
        int64_t na = 0;
        for (int64_t l = p0; l < p0 + lanes && l < t->BS && na < 32; l++) {
          int64_t up[4] = { 0, l, 0, i };
          bool valid;
          int64_t a = kl_view_eval_addr(full, up, strides, &valid) * eb;
          if (valid) addr[na++] = a;
        }
        wf += phase_wavefronts(addr, na, unit, lanes);
      }
    kl_view_free(full);
    if (best < 0 || wf < best_wf) best = perm, best_wf = wf;
  }
  if (wf_out) *wf_out = best_wf;
  return best;
}
/* Erases an unused LDS tile (a rock.alloc, or a rock.transform of one). */
static void erase_tile(kl_rewriter *rw, kl_value *tile) {
  kl_op *def = tile->def;
  kl_value *raw = def && !strcmp(def->name, "rock.transform") ? def->opnds[0].value : NULL;
  kl_rewriter_erase_op(rw, def);
  if (raw && raw->def) kl_rewriter_erase_op(rw, raw->def);
}
/* The [KB, DB] LDS tile view of an AMD tile and its buffer's strides: perm < 0 the kpack
 * tile of skew `skew` (lds_tile_view), else the xor tile with that row permutation
 * (xor_tile_view). NULL when the view cannot be built. */
static kl_view *amd_tile_view(const tiles *t, int64_t DB, int skew, int perm, int64_t strides[4]) {
  char err[256];
  int64_t s[4];
  const char *d = DB == t->MB ? "m" : "n";
  if (perm >= 0) {
    kl_view *v = xor_tile_view(t, DB, d, perm, false, s, err, sizeof err);
    strides[0] = s[1] * s[2] * s[3], strides[1] = s[2] * s[3], strides[2] = s[3], strides[3] = 1;
    return v;
  }
  kl_view *v = lds_tile_view(t, DB, skew, d, s, err, sizeof err);
  strides[0] = s[1] * s[2], strides[1] = s[2], strides[2] = 1;
  return v;
}
/* The shortest run of consecutive LDS elements among thread 0's stores of the copy (tid,
 * iter) -> (k, d) view w into a kpack > 1 tile of skew `skew` (lds_tile_view), capped at
 * `cap`: LLVM merges a thread's stores to adjacent addresses, so a run of 2 f16 is one
 * 4-byte store, a run of 1 a 2-byte one (ds_write_b16: a transposed copy with one K
 * element per thread). 0 when a view fails. */
static int64_t lds_store_run(const tiles *t, const kl_view *w, int64_t DB, int skew, int perm, int64_t cap) {
  int64_t strides[4];
  kl_view *tv = amd_tile_view(t, DB, skew, perm, strides);
  kl_view_err ve = { 0 };
  kl_view *full = tv ? kl_view_compose(w, tv, &ve) : NULL;
  kl_view_free(tv);
  if (!full) return 0;
  int64_t per = t->KB * DB / t->BS, best = cap;
  int64_t *a = kl_xmalloc(per * sizeof *a);
  int64_t n = 0;
  for (int64_t i = 0; i < per; i++) {
    int64_t up[2] = { 0, i };
    bool valid;
    int64_t x = kl_view_eval_addr(full, up, strides, &valid);
    if (valid) a[n++] = x;
  }
  for (int64_t i = 0; i < n; i++) { /* the run through a[i]: its length from its first element */
    bool first = true;
    for (int64_t j = 0; j < n; j++) first &= a[j] != a[i] - 1;
    if (!first) continue;
    int64_t len = 1;
    for (bool more = true; more && len < cap;) {
      more = false;
      for (int64_t j = 0; j < n && !more; j++) more = a[j] == a[i] + len;
      len += more;
    }
    if (len < best) best = len;
  }
  free(a);
  kl_view_free(full);
  return best;
}

/* LDS wavefronts of the copy (tid, iter) -> (k, d) view w into a kpack > 1 tile of skew
 * `skew` (lds_tile_view), all BS threads, each storing vectors of vlen elements of eb
 * bytes: per phase (128 bytes: 8 lanes of 16-byte accesses, 16 of 8, 32 of 4 or less)
 * the most distinct addresses on one bank slot, summed; -1 when a view fails. */
static int64_t copy_wavefronts(const tiles *t, const kl_view *w, int64_t DB, int skew, int perm, int64_t eb,
                               int64_t *phases) {
  int64_t strides[4];
  kl_view *tv = amd_tile_view(t, DB, skew, perm, strides);
  kl_view_err ve = { 0 };
  kl_view *full = tv ? kl_view_compose(w, tv, &ve) : NULL;
  kl_view_free(tv);
  if (!full) return -1;
  int64_t per = t->KB * DB / t->BS;
  int64_t vlen = kl_view_max_vectorization(full, 1, strides, (int)(8 * eb)), bytes;
  if (vlen < 1) vlen = 1;
  while (per % vlen) vlen /= 2;
  bytes = vlen * eb;
  int64_t unit = bytes > 4 ? bytes : 4, lanes = 128 / unit, slots = 128 / unit, wf = 0;
  int64_t addr[32];
  for (int64_t i = 0; i < per; i += vlen)
    for (int64_t p0 = 0; p0 < t->BS; p0 += lanes) {
      int64_t n = 0;
      for (int64_t l = p0; l < p0 + lanes && l < t->BS; l++) {
        int64_t up[2] = { l, i };
        bool valid;
        int64_t a = kl_view_eval_addr(full, up, strides, &valid) * eb;
        if (valid) addr[n++] = a;
      }
      wf += phase_wavefronts(addr, n, unit, slots);
      *phases += n > 0;
    }
  kl_view_free(full);
  return wf;
}

/* ---- AMD kpack-1 LDS tiles (f32 MFMA on gfx908 / gfx90a / gfx942; the no-matrix FMA
 * path of gfx1030 and gfx1100's f32): the xor1 swizzle ----
 * A plain [KB, DB] tile whose rows are a multiple of 128 bytes puts index d of every K
 * row on one bank: a copy whose lanes write several K rows at a few indices (a
 * K-contiguous operand, 16-byte global vectors along K) was up to 5.33-way (MFMA f32) or
 * 8-way (FMA path). The xor1 tile keeps the bytes (no pad: the LDS, the tiles' offsets and
 * the occupancy stay) and moves each K row's granules of L elements within their aligned
 * block of blk elements (128 bytes): index d of row k at
 *   k * DB + (d / blk) * blk + (((d % blk) / L) XOR ((k / kdiv) mod m)) * L + d % L,
 * the Xor{kdiv, m} view transform over [KB, DB / blk, blk / L, L]. A read whose lanes take
 * one K row (MFMA f32's 32 consecutive indices per 32 lanes, the FMA path's vectors at one
 * k) stays inside each aligned block: the same banks, permuted. L is at least the store
 * vector and (FMA path) the 16-byte read vector, so that no vector is split. The
 * parameters are chosen with the copy layout (choose_layout): the fewest wavefronts of the
 * copy's stores (x1_pick); m = 0 is the plain tile. */
/* The xor1 tile's view [KB, DB] -> [KB / kdiv, kdiv, DB / blk, blk / L, L] (s: the raw
 * shape), Xor{1, m} on (k / kdiv, the granule): the row term is its own dim, so that a
 * read whose K index is kdiv-aligned plus a lane's offset below kdiv (MFMA's K within the
 * instruction) XORs a constant per unrolled K step. */
static kl_view *x1_tile_view(const tiles *t, int64_t DB, const char *d, const swz1 *sw, int64_t s[5], char *err,
                             size_t n) {
  s[0] = t->KB / sw->kdiv, s[1] = sw->kdiv, s[2] = DB / sw->blk, s[3] = sw->blk / sw->L, s[4] = sw->L;
  int64_t prm[2] = { 1, sw->m };
  const char *names[5] = { "kh", "kl", "dh", "c", "l" };
  int up0[2] = { 0, 3 }, up1[3] = { 1, 2, 4 };
  kl_vtrans tr[2] = { { KL_VT_XOR, 2, 2, 2, prm, up0, up0 }, { KL_VT_PASSTHROUGH, 0, 3, 3, NULL, up1, up1 } };
  kl_vmap map = { 5, 5, 2, names, s, names, s, tr };
  kl_vb b = { 0 };
  b.v = kl_view_make(1, &map, &b.err);
  b.bad = !b.v;
  const char *kf[2] = { "kh", "kl" }, *df[3] = { "dh", "c", "l" }, *ord[2] = { "k", d };
  kl_vb_merge(&b, "k", 2, kf);
  kl_vb_merge(&b, d, 3, df);
  kl_vb_order(&b, 2, ord);
  return kl_vb_finish(&b, err, n);
}
static kl_value *lds_tile_x1(kl_rewriter *rw, kl_loc loc, const kl_type *elem, const tiles *t, int64_t DB,
                             const char *d, const swz1 *sw, char *err, size_t n) {
  int64_t s[5];
  kl_view *v = x1_tile_view(t, DB, d, sw, s, err, n);
  return lds_viewed(rw, loc, elem, 5, s, v);
}
/* The element offset of (k, d) in the xor1 tile sw (m = 0: plain). */
static int64_t x1_addr(int64_t k, int64_t d, int64_t DB, const swz1 *sw) {
  if (!sw->m) return k * DB + d;
  int64_t r = d % sw->blk, c = (r / sw->L) ^ ((k / sw->kdiv) % sw->m);
  return k * DB + d - r + c * sw->L + r % sw->L;
}
/* LDS wavefronts of a copy's stores into the xor1 tile sw by the first wave (lanes 0-63):
 * kd holds (k, d) of thread th's element i at [2 * (th * per + i)], each thread storing
 * vectors of vst elements of eb bytes; per phase of lanes (128 bytes: 32 lanes of up to 4
 * bytes, 16 of 8, 8 of 16, as test_accel counts them) the most distinct 4-byte words on
 * one of the 32 banks, summed (phases counted in *phases). test_accel counts every wave. */
static int64_t x1_wavefronts(const tiles *t, const int64_t *kd, int64_t DB, int64_t per, int64_t vst, int64_t eb,
                             const swz1 *sw, int64_t *phases) {
  int64_t bytes = vst * eb, unit = bytes > 4 ? bytes : 4, lanes = 128 / unit, wf = 0, ph = 0;
  int64_t words[128], nt = t->BS < 64 ? t->BS : 64;
  for (int64_t i = 0; i < per; i += vst)
    for (int64_t p0 = 0; p0 < nt; p0 += lanes) {
      int64_t nw = 0;
      for (int64_t l = p0; l < p0 + lanes && l < nt; l++) {
        const int64_t *x = kd + 2 * (l * per + i);
        int64_t a = x1_addr(x[0], x[1], DB, sw) * eb;
        for (int64_t w = a / 4; w <= (a + bytes - 1) / 4 && nw < 128; w++) {
          int64_t j = 0;
          while (j < nw && words[j] != w) j++;
          if (j == nw) words[nw++] = w;
        }
      }
      int64_t cnt[32] = { 0 }, worst = 0;
      for (int64_t j = 0; j < nw; j++)
        if (++cnt[words[j] % 32] > worst) worst = cnt[words[j] % 32];
      wf += worst;
      ph += nw > 0;
    }
  if (phases) *phases = ph;
  return wf;
}
/* The xor1 swizzle for the copy (tid, iter) -> (k, d) view w of layout l into a [KB, DB]
 * tile: the plain tile and every (L, kdiv) with L from lmin (elements) to blk, kdiv a
 * power of two below KB dividing it, m = min(blk / L, KB / kdiv); the fewest wavefronts
 * (x1_wavefronts), the plain tile on ties, then the larger L and kdiv (force: a swizzle
 * wherever one exists: amd-lds-layout=xor). Returns the wavefronts (-1
 * when the view fails), *phases the phases, *out the swizzle. */
static int64_t x1_pick(const tiles *t, const kl_view *w, const layout *l, int64_t DB, int64_t eb, int64_t lmin,
                       bool force, swz1 *out, int64_t *phases) {
  int64_t per = t->KB * DB / t->BS, nt = t->BS < 64 ? t->BS : 64;
  int64_t *kd = kl_xmalloc(2 * (size_t)(nt * per) * sizeof *kd);
  for (int64_t th = 0; th < nt; th++)
    for (int64_t i = 0; i < per; i++) {
      int64_t up[2] = { th, i }, s[2] = { DB, 1 };
      bool valid;
      int64_t a = kl_view_eval_addr(w, up, s, &valid);
      if (!valid) {
        free(kd);
        return -1;
      }
      kd[2 * (th * per + i)] = a / DB, kd[2 * (th * per + i) + 1] = a % DB;
    }
  /* the store vector: along M/N (vd) up to the global vector, 1 along K */
  int64_t vst = l->vd ? l->vlen : 1, blk = 1;
  while (vst > 1 && per % vst) vst /= 2;
  while (blk * 2 * eb <= 128 && DB % (blk * 2) == 0) blk *= 2;
  if (lmin < vst) lmin = vst;
  if (lmin * eb < 4) lmin = (4 + eb - 1) / eb;
  swz1 best = { blk, 1, 1, 0 };
  int64_t bph = 0, bwf = x1_wavefronts(t, kd, DB, per, vst, eb, &best, &bph), kmax = 1;
  if (force) bwf = INT64_MAX;
  while (kmax * 2 < t->KB) kmax *= 2;
  for (int64_t L = blk; L >= lmin && bwf > bph; L /= 2) /* until conflict-free */
    for (int64_t kdiv = kmax; kdiv >= 1 && bwf > bph; kdiv /= 2) {
      if (t->KB % kdiv) continue;
      int64_t m = blk / L < t->KB / kdiv ? blk / L : t->KB / kdiv;
      if (m < 2) continue;
      swz1 sw = { blk, L, kdiv, m };
      int64_t ph = 0, wf = x1_wavefronts(t, kd, DB, per, vst, eb, &sw, &ph);
      if (wf < bwf) best = sw, bwf = wf, bph = ph;
    }
  if (bwf == INT64_MAX) bwf = x1_wavefronts(t, kd, DB, per, vst, eb, &best, &bph);
  free(kd);
  *out = best;
  if (phases) *phases = bph;
  return bwf;
}

/* GPU targets: the K loop's LDS tiles (tiles[0..n): A, B and the double-buffer copies,
 * each a rock.alloc or a rock.transform of one) become views into ONE LDS buffer
 * `rock.alloc : buffer<total x T, lds>`, tile i at an offset that is a multiple of
 * `align` bytes (128: the bank period of NVIDIA's LDS: every tile keeps the bank mapping
 * it had alone; 8 x the swizzle for swizzled TMA tiles, whose pattern is taken from the
 * absolute address), so that the whole K-loop LDS is one allocation that
 * rock-output-swizzle can reuse after the loop (offsets packed without alignment when the
 * aligned buffer would exceed `budget` bytes, unless align > 128: then an error). Tiles of different element types stay separate. Returns the
 * LDS bytes of the tiles, -1 (message in err) when a view cannot be built. */
static int64_t join_lds(kl_rewriter *rw, kl_loc loc, kl_value *const *tiles, int n, int64_t budget, int64_t align_bytes,
                        char *err, size_t errlen) {
  kl_value *raw[2 * TMA_MAX_STAGES];
  int64_t off[2 * TMA_MAX_STAGES], total = 0, sum = 0;
  for (int i = 0; i < n; i++) {
    raw[i] = tiles[i];
    while (raw[i]->def && !strcmp(raw[i]->def->name, "rock.transform")) raw[i] = raw[i]->def->opnds[0].value;
    sum += kl_type_numel(raw[i]->type) * ((kl_type_bits(raw[i]->type->elem) + 7) / 8);
  }
  const kl_type *et = raw[0]->type->elem;
  int64_t eb = (kl_type_bits(et) + 7) / 8;
  for (int i = 0; i < n; i++)
    if (raw[i]->type->elem != et || !raw[i]->def || strcmp(raw[i]->def->name, "rock.alloc")) return sum;
  for (int64_t align = align_bytes / eb > 1 ? align_bytes / eb : 1;; align = 1) {
    total = 0;
    for (int i = 0; i < n; i++) {
      total = (total + align - 1) / align * align;
      off[i] = total;
      total += kl_type_numel(raw[i]->type);
    }
    if (align == 1 || total * eb <= budget) break;
    if (align_bytes > 128) {
      snprintf(err, errlen, "the K loop's LDS tiles at their %lld-byte alignment need %lld bytes, more than %lld",
               (long long)align_bytes, (long long)(total * eb), (long long)budget);
      return -1;
    }
  }
  kl_op *at = raw[0]->def; /* the one buffer goes before the first tile's alloc */
  for (int i = 1; i < n; i++)
    if (raw[i]->def->block == at->block && kl_op_is_before_in_block(raw[i]->def, at)) at = raw[i]->def;
  kl_rewriter_set_insertion_before(rw, at);
  kl_value *one = alloc(rw, loc, et, 1, &total, KL_SPACE_LDS);
  for (int i = 0; i < n; i++) {
    const kl_type *t = raw[i]->type;
    const char *names[KL_VIEW_MAX_DIMS];
    char buf[KL_VIEW_MAX_DIMS][16];
    for (int d = 0; d < t->rank; d++) {
      snprintf(buf[d], sizeof buf[d], "d%d", d);
      names[d] = buf[d];
    }
    kl_vb b;
    const char *f = "f";
    kl_vb_identity(&b, 1, &total, &f);
    if (!b.bad) {
      int64_t be[2] = { off[i], off[i] + kl_type_numel(t) };
      kl_view *nv = kl_view_slice(b.v, 1, &f, be, &b.err);
      if (nv) {
        kl_view_free(b.v);
        b.v = nv;
      } else
        b.bad = true;
    }
    kl_vb_unmerge(&b, "f", t->rank, names, t->shape);
    kl_view *v = kl_vb_finish(&b, err, errlen);
    if (!v) return -1;
    kl_rewriter_set_insertion_before(rw, raw[i]->def);
    kl_value *view = kl_tile_transform(rw, loc, one, v);
    kl_view_free(v);
    kl_rewriter_replace_all_uses(rw, raw[i], view);
    kl_rewriter_erase_op(rw, raw[i]->def);
  }
  return total * eb;
}

static kl_op *threadwise(kl_rewriter *rw, kl_loc loc, const char *name, kl_value *src, kl_value *dst, int nextra,
                         kl_value *const *extra, const kl_view *view, int64_t vlen, const char *store,
                         const kl_attr *scale) {
  kl_ctx *ctx = kl_rewriter_ctx(rw);
  kl_value *o[8] = { src, dst };
  for (int i = 0; i < nextra; i++) o[2 + i] = extra[i];
  kl_named_attr a[4] = { { "view", kl_attr_from_view(ctx, view) }, { "vector_len", kl_attr_int(ctx, vlen) } };
  int na = 2;
  if (store) a[na++] = (kl_named_attr){ "store", kl_attr_str(ctx, store) };
  if (scale) a[na++] = (kl_named_attr){ "store_scale", scale }; /* GEMM + reduce_mean: 1 / count */
  return kl_rewriter_create(rw, name, loc, 2 + nextra, o, 0, NULL, na, a, 0);
}

/* The pieces of the K loop (see the header comment). */
typedef struct {
  kl_rewriter *rw;
  kl_loc loc;
  const tiles *t;
  kl_op *gw;
  kl_value *a, *b, *copy_a, *copy_b, *acc, *bid, *tid;
  const kl_view *ga, *gb, *wa, *wb;
  int64_t vla, vlb;
  bool wg_fence_late; /* opts.wg_fence_late */
  kl_value *tacc;     /* fp8 wgmma with promotion (attribute fp8_promote): the temporary accumulator, else NULL */
  int64_t np;         /* ... promoted every np K steps (fp8_promote / kPerBlock) */
} kloop;
static void kl_read(const kloop *k, kl_value *kidx) { /* global tiles of K step kidx -> private copies */
  kl_value *ex[3] = { k->bid, k->tid, kidx };
  threadwise(k->rw, k->loc, "rock.threadwise_read_into", k->a, k->copy_a, 3, ex, k->ga, k->vla, NULL, NULL);
  threadwise(k->rw, k->loc, "rock.threadwise_read_into", k->b, k->copy_b, 3, ex, k->gb, k->vlb, NULL, NULL);
}
static void kl_write(const kloop *k, kl_value *la, kl_value *lb) { /* private copies -> LDS tiles */
  threadwise(k->rw, k->loc, "rock.threadwise_write_all", k->copy_a, la, 1, &k->tid, k->wa,
             kl_tile_vector_len(k->wa, la, 1), "set", NULL);
  threadwise(k->rw, k->loc, "rock.threadwise_write_all", k->copy_b, lb, 1, &k->tid, k->wb,
             kl_tile_vector_len(k->wb, lb, 1), "set", NULL);
}
static void wg_proxy_fence(const kloop *k) { /* LDS stores -> the async proxy of wgmma (passes/rock_wgmma.h) */
  kl_named_attr a = { "step", kl_attr_str(kl_rewriter_ctx(k->rw), "proxy_fence") };
  kl_rewriter_create(k->rw, "rock.wgmma_sync", k->loc, 0, NULL, 0, NULL, 1, &a, 0);
}
static void kl_barrier(const kloop *k) {
  const char *accel = kl_op_attr_string(k->gw, "accel");
  if (accel && !strcmp(accel, "wgmma")) wg_proxy_fence(k);
  kl_rewriter_create(k->rw, "rock.barrier", k->loc, 0, NULL, 0, NULL, 0, NULL, 0);
}
static kl_op *kl_gemm(const kloop *k, kl_value *la, kl_value *lb) {
  kl_ctx *ctx = kl_rewriter_ctx(k->rw);
  const tiles *t = k->t;
  kl_value *bg[4] = { la, lb, k->tacc ? k->tacc : k->acc, k->tid };
  kl_named_attr ba[7] = {
    { "m_per_block", kl_attr_int(ctx, t->MB) },  { "n_per_block", kl_attr_int(ctx, t->NB) },
    { "k_per_block", kl_attr_int(ctx, t->KB) },  { "m_per_thread", kl_attr_int(ctx, t->MT) },
    { "n_per_thread", kl_attr_int(ctx, t->NT) }, { "kpack", kl_attr_int(ctx, t->kpack) },
    { "block_size", kl_attr_int(ctx, t->BS) },
  };
  kl_op *bw = kl_rewriter_create(k->rw, "rock.blockwise_gemm", k->loc, 4, bg, 0, NULL, 7, ba, 0);
  kl_accel_copy_attrs(k->gw, bw); /* accel GEMMs: m_per_wave, n_per_wave, accel_instr, accel */
  return bw;
}
/* (kl + off) mod nk */
static kl_value *kl_next(const kloop *k, kl_value *kl, int64_t off, int64_t nk) {
  kl_emitter e = { k->rw, k->loc };
  return kl_emit_remi(&e, kl_emit_add(&e, kl, kl_tile_index(k->rw, k->loc, off)), nk);
}
/* fp8 wgmma promotion (passes/rock_wgmma.h: kl_wgmma_emit_promote): wait for every group,
 * main += temporary, temporary = 0 */
static void wg_promote(const kloop *k) {
  kl_wgmma_emit_promote(k->rw, k->loc, k->acc, k->tacc, kl_op_attr_string(k->gw, "accel_instr"));
}
/* after K step kidx: the promotion where kidx + 1 ends an interval (np steps), not after the
 * last step (the loop's end promotes); a dynamic kidx with np > 1 tests it in an scf.if */
static kl_op *if_begin(kl_rewriter *rw, kl_loc loc, kl_value *cond);
static void promote_after(const kloop *k, kl_value *kidx, int64_t nk) {
  int64_t c;
  if (!k->tacc) return;
  if (kl_emit_const_of(kidx, &c)) {
    if ((c + 1) % k->np == 0 && c + 1 < nk) wg_promote(k);
    return;
  }
  if (k->np == 1) {
    wg_promote(k);
    return;
  }
  kl_emitter e = { k->rw, k->loc };
  kl_value *r = kl_emit_remi(&e, kl_emit_add(&e, kidx, kl_tile_index(k->rw, k->loc, 1)), k->np);
  kl_op *ifop = if_begin(k->rw, k->loc, kl_emit_cmp(&e, "eq", r, kl_emit_index(&e, 0)));
  wg_promote(k);
  kl_rewriter_set_insertion_after(k->rw, ifop);
}
/* the end of the K loop: every group retired, the accumulators through the wait (promoted) */
static void acc_final(const kloop *k) {
  if (k->tacc)
    wg_promote(k);
  else
    kl_wgmma_emit_acc_wait(k->rw, k->loc, k->acc, kl_op_attr_string(k->gw, "accel_instr"), 0);
}
/* ---- wgmma (passes/rock_wgmma.h): W LDS buffers, each step's MMAs in flight across the
 * next step's copies (see the header comment) ---- */
static void wg_wait(const kloop *k, int64_t pending) {
  kl_ctx *ctx = kl_rewriter_ctx(k->rw);
  kl_named_attr a[2] = { { "step", kl_attr_str(ctx, "wait") }, { "pending", kl_attr_int(ctx, pending) } };
  kl_rewriter_create(k->rw, "rock.wgmma_sync", k->loc, 0, NULL, 0, NULL, 2, a, 0);
}
/* K step kidx, its tiles in buffer s; the private copies hold step kidx + 1. `left`: the
 * steps after this one when known (the peeled remainder), else -1 (in the loop). The
 * loop's last two steps reload steps 0, 1 (in bounds, unused); the peeled steps skip the
 * write of a step past the end (left 0) and the read of one (left <= 1): their constant
 * reloads of steps 0 / 1 were merged with the prologue's loads by LLVM, which kept those
 * copies live across the whole loop (ptxas sm_90a, 128x256x64, 8192^3: 72 spilled bytes) */
static void wg_step(const kloop *k, kl_value *const *la, kl_value *const *lb, int W, int s, kl_value *kidx, int64_t nk,
                    int64_t left) {
  kl_op *g = kl_gemm(k, la[s], lb[s]); /* fence, MMAs, commit: group kidx */
  kl_rewriter_set_attr(k->rw, g, "wgmma_wait", kl_attr_str(kl_rewriter_ctx(k->rw), "deferred"));
  if (left != 0) kl_write(k, la[(s + 1) % W], lb[(s + 1) % W]); /* last read by group kidx + 1 - W: retired */
  /* the proxy fence before the global loads: its SASS (MEMBAR.ALL.CTA, FENCE.VIEW.ASYNC.S)
   * then waits for this thread's LDS stores only, not for the loads of step kidx + 2 (they
   * complete while the barrier and the next step's MMAs issue); wgmma-fence=late: after */
  if (!k->wg_fence_late) wg_proxy_fence(k);
  if (left < 0 || left > 1) kl_read(k, kl_next(k, kidx, 2, nk));
  wg_wait(k, W - 2);          /* retires group kidx + 2 - W ... */
  promote_after(k, kidx, nk); /* fp8 promotion: wait 0, main += temporary */
  /* ... in every warpgroup (its buffer is written next step); the writes above fenced and visible */
  if (k->wg_fence_late)
    kl_barrier(k);
  else
    kl_rewriter_create(k->rw, "rock.barrier", k->loc, 0, NULL, 0, NULL, 0, NULL, 0);
}
static void wg_emit(const kloop *k, kl_value *const *la, kl_value *const *lb, int W, int64_t nk) {
  kl_rewriter *rw = k->rw;
  kl_ctx *ctx = kl_rewriter_ctx(rw);
  kl_read(k, kl_tile_index(rw, k->loc, 0));
  kl_write(k, la[0], lb[0]);
  kl_barrier(k);
  kl_read(k, kl_tile_index(rw, k->loc, 1 % nk));
  int64_t r = nk % W, main = nk - r;
  if (main > 0) {
    kl_value *bnd[3] = { kl_tile_index(rw, k->loc, 0), kl_tile_index(rw, k->loc, main), kl_tile_index(rw, k->loc, W) };
    kl_op *loop = kl_rewriter_create(rw, "scf.for", k->loc, 3, bnd, 0, NULL, 0, NULL, 1);
    kl_block *body = kl_block_create(ctx);
    kl_value *kl = kl_block_add_arg(ctx, body, kl_type_index(ctx));
    kl_region_push_block(&loop->regions[0], body);
    kl_rewriter_set_insertion_end(rw, body);
    for (int j = 0; j < W; j++) {
      kl_emitter e = { rw, k->loc };
      wg_step(k, la, lb, W, j, j ? kl_emit_add(&e, kl, kl_tile_index(rw, k->loc, j)) : kl, nk, -1);
    }
    kl_rewriter_create(rw, "scf.yield", k->loc, 0, NULL, 0, NULL, 0, NULL, 0);
    kl_rewriter_set_insertion_after(rw, loop);
  }
  for (int64_t j = 0; j < r; j++) wg_step(k, la, lb, W, (int)j, kl_tile_index(rw, k->loc, main + j), nk, r - 1 - j);
  /* every group retired, the accumulators through the wait; no warpgroup reads the LDS the
   * epilogue may reuse */
  acc_final(k);
  kl_rewriter_create(rw, "rock.barrier", k->loc, 0, NULL, 0, NULL, 0, NULL, 0);
}
/* Buffers for the wgmma loop: 3 (a group always in flight across the barrier) where they
 * fit the target's LDS, else 2, else 0 (the plain loop: its blockwise GEMMs wait for their
 * own MMAs). One block per SM: the loop's registers (136 for 128x128 tiles, ptxas sm_90a)
 * leave no room for a second block of 256 threads anyway. */
static int wg_buffers(const kl_target *tg, int64_t nk, int64_t tile_bytes) {
  int64_t lds = tg ? tg->lds_bytes : 48 * 1024, stage = (tile_bytes + 255) / 128 * 128;
  if (nk < 2) return 0;
  if (nk >= 3 && 3 * stage <= lds) return 3;
  return 2 * stage <= lds ? 2 : 0;
}

/* ---- thread-block clusters (passes/rock_tma.h: cluster) ---- */
/* Whether the shared operand's tile splits into C multicast slices: K-major rows DB / C a
 * multiple of 8 (the swizzle atom, each slice at a multiple of 8 rows), MN-major panels a
 * multiple of C. */
static bool cluster_split(const kl_tma_map *m, int64_t DB, int64_t C) {
  if (m->im2col) return false; /* a slice's first pixel is no coordinate offset of the walk */
  if (m->mn) return m->swizzle > 0 && DB % (m->swizzle / 2) == 0 && (DB / (m->swizzle / 2)) % C == 0;
  return DB % (8 * C) == 0;
}
/* The cluster's shape for option cluster = o->cluster (> 1): NULL and *share_b (C x 1: C
 * m-tiles share B's tile; else 1 x C: C n-tiles share A's), or why not. Auto shape: the one
 * whose tiles need no padding, else the one sharing the larger tile (B where NB >= MB). */
static const char *cluster_shape(const opts *o, const tiles *t, const kl_target *tg, kl_op *fn, const char *persist_why,
                                 bool tma_a, bool tma_b, const kl_tma_map *ma, const kl_tma_map *mb, bool *share_b) {
  int64_t C = o->cluster, nM = t->Mp / t->MB, nN = t->Np / t->NB;
  if (!fn) return "no kernel func";
  if (!tg || tg->arch != KL_ARCH_NVPTX) return "not an NVIDIA target";
  if (!persist_why)
    return "persistent tiles are not combined with clusters (the tile loop would have to keep a cluster's CTAs on "
           "paired tiles)";
  if (t->G * nM * nN < 2) return "one tile";
  bool okb = tma_b && nM >= 2 && cluster_split(mb, t->NB, C), oka = tma_a && nN >= 2 && cluster_split(ma, t->MB, C);
  if (o->cluster_dir == 1 && !okb)
    return !tma_b ? "C x 1 shares B, which does not load through TMA"
        : nM < 2  ? "C x 1 needs 2 m-tiles or more"
                  : "B's tile does not split into C multicast slices (rows / 8 or panels not a multiple of C)";
  if (o->cluster_dir == 2 && !oka)
    return !tma_a ? "1 x C shares A, which does not load through TMA"
        : nN < 2  ? "1 x C needs 2 n-tiles or more"
                  : "A's tile does not split into C multicast slices (rows / 8 or panels not a multiple of C)";
  if (!oka && !okb) return "neither operand's tile can be shared (TMA, 2 tiles along it, C multicast slices)";
  if (o->cluster_dir) {
    *share_b = o->cluster_dir == 1;
  } else if (oka && okb) {
    bool padm = nM % C != 0, padn = nN % C != 0;
    *share_b = padm != padn ? !padm : t->NB >= t->MB;
  } else
    *share_b = okb;
  if (kl_gemm_cluster_grid(t->G, nM, nN, C, *share_b) > INT32_MAX) return "the grid exceeds 2^31 - 1 workgroups";
  return NULL;
}

/* ---- the TMA + mbarrier K loop of wgmma GEMMs (passes/rock_tma.h) ---- */
typedef struct {
  const kloop *k;
  int W;
  int64_t nk;
  bool ta, tb; /* which operands load through TMA */
  kl_tma_map ma, mb;
  kl_value *bars, *elect; /* LDS buffer<W x i64> (warp-specialized: 2W, full then empty); tid == 0 */
  kl_value *la[TMA_MAX_STAGES], *lb[TMA_MAX_STAGES];
  int64_t nc; /* warp-specialized (ws_emit): the consumer threads (the tiles' block size), else 0 */
  /* persistent tiles (passes/rock_tma.h): h0 the workgroup id, ng the workgroup count (NULL h0:
   * one tile per workgroup); the tiles G x nM x nN in raster order gm (passes/gemm_raster.h);
   * fill the accumulator's zero fill (moved into the tile loop) */
  kl_value *h0, *ng;
  int64_t G, nM, nN, gm;
  kl_op *fill;
  kl_value *tile_bid; /* out (persistent): the tile's block id, for the epilogue */
  /* thread-block clusters (passes/rock_tma.h: cluster): mc CTAs (1: none) share the tile of
   * operand B (mc_b) or A, multicast in mc slices; valid (NULL: always) whether the CTA's tile is
   * in the grid (a padding CTA of the last cluster skips the epilogue) */
  int64_t mc;
  bool mc_b;
  kl_value *valid;
  /* cmb: the clustered loop's slot reuse through per-stage empty mbarriers (W + s) with remote
   * arrives (both operands through TMA; else the K loop's cluster barrier) */
  bool cmb;
} tpipe;
/* rock.barrier over the block, or (clusters) over the cluster: barrier.cluster.arrive.release +
 * wait.acquire on NVIDIA, the block barrier elsewhere (passes/lower_barrier.c) */
static void tbarrier(const tpipe *p) {
  kl_rewriter *rw = p->k->rw;
  kl_named_attr a = { "scope", kl_attr_str(kl_rewriter_ctx(rw), "cluster") };
  kl_rewriter_create(rw, "rock.barrier", p->k->loc, 0, NULL, 0, NULL, p->mc > 1 ? 1 : 0, &a, 0);
}
static void mbar(const tpipe *p, const char *step, int s, kl_value *parity, const char *an, int64_t av) {
  kl_rewriter *rw = p->k->rw;
  kl_ctx *ctx = kl_rewriter_ctx(rw);
  kl_value *o[3] = { p->bars, kl_tile_index(rw, p->k->loc, s), parity };
  kl_named_attr a[2] = { { "step", kl_attr_str(ctx, step) }, { an, kl_attr_int(ctx, av) } };
  kl_rewriter_create(rw, "rock.mbarrier", p->k->loc, parity ? 3 : 2, o, 0, NULL, an ? 2 : 1, a, 0);
}
/* clusters (cmb): the release of stage s's readers in this warpgroup to every CTA of the
 * cluster: lanes 0 .. mc - 1 of each warpgroup (after its wait_group retired them) arrive on
 * empty[s] = W + s of the CTA of rank tid % 128 (rock.mbarrier arrive_remote) */
static kl_op *if_begin(kl_rewriter *rw, kl_loc loc, kl_value *cond);
static void cl_release(const tpipe *p, int s) {
  kl_rewriter *rw = p->k->rw;
  kl_emitter e = { rw, p->k->loc };
  kl_value *lane = kl_emit_remi(&e, p->k->tid, 128);
  kl_op *ifop = if_begin(rw, p->k->loc, kl_emit_cmp(&e, "lt", lane, kl_emit_index(&e, p->mc)));
  mbar(p, "arrive_remote", p->W + s, lane, NULL, 0);
  kl_rewriter_set_insertion_after(rw, ifop);
}
/* clusters (cmb): the issuing thread waits for empty[s]'s phase of K step kidx's fill (every
 * CTA's warpgroups released the stage's fill kidx - W; parity (kidx / W + 1) mod 2: the first
 * lap passes, phase 0 open) */
static void cl_wait_empty(const tpipe *p, kl_value *kidx, int s) {
  kl_rewriter *rw = p->k->rw;
  kl_emitter e = { rw, p->k->loc };
  int64_t c;
  kl_value *par = kl_emit_const_of(kidx, &c)
      ? kl_tile_index(rw, p->k->loc, (c / p->W + 1) % 2)
      : kl_emit_remi(&e, kl_emit_add(&e, kl_emit_divi(&e, kidx, p->W), kl_emit_index(&e, 1)), 2);
  mbar(p, "wait", p->W + s, par, NULL, 0);
}
static kl_op *if_begin(kl_rewriter *rw, kl_loc loc, kl_value *cond) {
  kl_ctx *ctx = kl_rewriter_ctx(rw);
  kl_op *ifop = kl_rewriter_create(rw, "scf.if", loc, 1, &cond, 0, NULL, 0, NULL, 2);
  kl_block *tb = kl_block_create(ctx), *eb = kl_block_create(ctx);
  kl_region_push_block(&ifop->regions[0], tb);
  kl_region_push_block(&ifop->regions[1], eb);
  kl_rewriter_set_insertion_end(rw, eb);
  kl_rewriter_create(rw, "scf.yield", loc, 0, NULL, 0, NULL, 0, NULL, 0);
  kl_rewriter_set_insertion_end(rw, tb);
  kl_op *y = kl_rewriter_create(rw, "scf.yield", loc, 0, NULL, 0, NULL, 0, NULL, 0);
  kl_rewriter_set_insertion_before(rw, y);
  return ifop;
}
/* the boxes of one TMA operand for K step kidx into LDS tile lds ([KB/8, DB, 8]; swizzled:
 * [KB/KS, DB, chunks, 8], one box per panel) */
static void tma_boxes(const tpipe *p, const kl_tma_map *m, const kl_view *g, kl_value *lds, kl_value *kidx, int s) {
  const kloop *k = p->k;
  kl_rewriter *rw = k->rw;
  kl_ctx *ctx = kl_rewriter_ctx(rw);
  kl_emitter e = { rw, k->loc };
  /* the tile origin: the copy view at tid 0, iter 0 (g, k0, d0) */
  kl_value *z = kl_tile_index(rw, k->loc, 0), *up[4] = { k->bid, z, kidx, z }, *lo[3], *valid = NULL;
  kl_view_emit(&e, g, up, lo, &valid);
  int nl = 0;
  kl_value *raw = kl_rock_underlying(lds, NULL, &nl, 0); /* the stage's tile [KB/8, DB, 8] */
  const kl_type *lt = raw->type;
  /* K-major: K elements per box 8 (16 bytes) or a swizzled panel's, KB / bk boxes; MN-major:
   * a panel of bk M / N elements by KB per box, one per panel of the tile */
  int64_t KB = p->k->t->KB, bk = m->box[0], nb = m->mn ? lt->shape[0] : KB / bk;
  /* the cluster's shared operand: each op stands for mc boxes (MN-major: mc consecutive panels;
   * K-major: mc slices of the panel's rows, the D entry of m->box = DB / mc), rank r of the
   * cluster issues box r multicast to every CTA (rock.tma_load {multicast}) */
  bool mcast = p->mc > 1 && (g == k->gb) == p->mc_b;
  int64_t jstep = mcast && m->mn ? p->mc : 1;
  int64_t mdim = m->mn ? 0 : (m->kdims > 1 ? m->kdims : 1); /* D's place among the map's dims */
  for (int64_t j = 0; j < nb; j += jstep) {
    kl_value *o[4 + KL_VIEW_MAX_DIMS + 8];
    int no = 0;
    o[no++] = m->buf;
    o[no++] = p->bars;
    o[no++] = kl_tile_index(rw, k->loc, s);
    o[no++] = raw;
    for (int i = 0; i < lt->rank; i++) o[no++] = kl_tile_index(rw, k->loc, i == 0 ? j : 0);
    /* {d, k(, g)} (MN-major) or {k's mixed radix..., d(, g)} (kl_tma_coords) */
    if (m->im2col) /* {c, w, h, n} and the im2col offsets {s dw, r dh} (passes/rock_tma_im2col.h) */
      no += kl_tma_im2col_coords(&e, m, lo[0], kl_emit_add(&e, lo[1], kl_tile_index(rw, k->loc, bk * j)), lo[2],
                                 o + no);
    else if (m->mn)
      no += kl_tma_coords(&e, m, lo[0], lo[1], kl_emit_add(&e, lo[2], kl_tile_index(rw, k->loc, bk * j)), o + no);
    else
      no += kl_tma_coords(&e, m, lo[0], kl_emit_add(&e, lo[1], kl_tile_index(rw, k->loc, bk * j)), lo[2], o + no);
    kl_named_attr a[7] = { { "dims", kl_attr_i64_array(ctx, m->rank, m->dims) },
                           { "strides", kl_attr_i64_array(ctx, m->rank - 1, m->strides) },
                           { "box", kl_attr_i64_array(ctx, m->rank, m->box) },
                           { "offset", kl_attr_int(ctx, m->offset) },
                           { "swizzle", kl_attr_int(ctx, m->swizzle) },
                           { "multicast", kl_attr_int(ctx, p->mc) },
                           { "multicast_dim", kl_attr_int(ctx, mdim) } };
    kl_op *ld = kl_rewriter_create(rw, "rock.tma_load", k->loc, no, o, 0, NULL, 4, a, 0);
    if (m->swizzle) kl_rewriter_set_attr(rw, ld, "swizzle", a[4].value);
    if (m->im2col) {
      int64_t ic[6] = { m->lo[0], m->lo[1], m->up[0], m->up[1], m->es[0], m->es[1] };
      kl_rewriter_set_attr(rw, ld, "im2col", kl_attr_i64_array(ctx, 6, ic));
    }
    if (mcast) {
      kl_rewriter_set_attr(rw, ld, "multicast", a[5].value);
      kl_rewriter_set_attr(rw, ld, "multicast_dim", a[6].value);
    }
  }
}
/* thread 0 (and kidx < nk where kidx is not a constant): arrive.expect_tx on stage s's
 * mbarrier, then the TMA operands' boxes of step kidx into stage s */
static void tma_issue(const tpipe *p, kl_value *kidx, int s) {
  const kloop *k = p->k;
  kl_rewriter *rw = k->rw;
  kl_emitter e = { rw, k->loc };
  int64_t c;
  kl_value *cond = p->elect;
  if (!kl_emit_const_of(kidx, &c))
    cond = kl_emit_and(&e, cond, kl_emit_cmp(&e, "lt", kidx, kl_emit_index(&e, p->nk)));
  else if (c >= p->nk)
    return;
  kl_op *ifop = if_begin(rw, k->loc, cond);
  int64_t eb = 2, bytes = ((p->ta ? k->t->MB : 0) + (p->tb ? k->t->NB : 0)) * k->t->KB * eb;
  if (p->cmb && !(kl_emit_const_of(kidx, &c) && c < p->W)) cl_wait_empty(p, kidx, s);
  mbar(p, "arrive_expect_tx", s, NULL, "bytes", bytes);
  if (p->ta) tma_boxes(p, &p->ma, k->ga, p->la[s], kidx, s);
  if (p->tb) tma_boxes(p, &p->mb, k->gb, p->lb[s], kidx, s);
  kl_rewriter_set_insertion_after(rw, ifop);
}
static void tma_reg_read(const tpipe *p, kl_value *kidx) {
  const kloop *k = p->k;
  kl_value *ex[3] = { k->bid, k->tid, kidx };
  if (!p->ta) threadwise(k->rw, k->loc, "rock.threadwise_read_into", k->a, k->copy_a, 3, ex, k->ga, k->vla, NULL, NULL);
  if (!p->tb) threadwise(k->rw, k->loc, "rock.threadwise_read_into", k->b, k->copy_b, 3, ex, k->gb, k->vlb, NULL, NULL);
}
static void tma_reg_write(const tpipe *p, int s) {
  const kloop *k = p->k;
  if (!p->ta)
    threadwise(k->rw, k->loc, "rock.threadwise_write_all", k->copy_a, p->la[s], 1, &k->tid, k->wa,
               kl_tile_vector_len(k->wa, p->la[s], 1), "set", NULL);
  if (!p->tb)
    threadwise(k->rw, k->loc, "rock.threadwise_write_all", k->copy_b, p->lb[s], 1, &k->tid, k->wb,
               kl_tile_vector_len(k->wb, p->lb[s], 1), "set", NULL);
}
static kl_value *tma_add(const tpipe *p, kl_value *kidx, int64_t off) {
  int64_t c;
  if (kl_emit_const_of(kidx, &c)) return kl_tile_index(p->k->rw, p->k->loc, c + off);
  kl_emitter e = { p->k->rw, p->k->loc };
  return kl_emit_add(&e, kidx, kl_tile_index(p->k->rw, p->k->loc, off));
}
/* K step kidx in stage s, mbarrier phase parity */
static void tma_step(const tpipe *p, kl_value *kidx, int s, kl_value *parity) {
  const kloop *k = p->k;
  int W = p->W;
  bool reg = !p->ta || !p->tb;
  mbar(p, "wait", s, parity, NULL, 0);
  kl_op *g = kl_gemm(k, p->la[s], p->lb[s]); /* fence, MMAs, commit: group kidx */
  kl_rewriter_set_attr(k->rw, g, "wgmma_wait", kl_attr_str(kl_rewriter_ctx(k->rw), "deferred"));
  if (reg) {
    tma_reg_write(p, (s + 1) % W); /* step kidx + 1, held in the copies; last read by group kidx + 1 - W */
    kl_emitter e = { k->rw, k->loc };
    int64_t c;
    kl_value *nx = kl_emit_const_of(kidx, &c) ? kl_tile_index(k->rw, k->loc, (c + 2) % p->nk)
                                              : kl_emit_remi(&e, tma_add(p, kidx, 2), p->nk);
    tma_reg_read(p, nx);
  }
  wg_wait(k, 1); /* group kidx - 1 retired: stage (kidx - 1) mod W is free in this warpgroup ... */
  if (reg) {
    kl_named_attr a = { "step", kl_attr_str(kl_rewriter_ctx(k->rw), "proxy_fence") };
    kl_rewriter_create(k->rw, "rock.wgmma_sync", k->loc, 0, NULL, 0, NULL, 1, &a, 0);
  }
  int64_t c;
  if (p->cmb) { /* clusters: release stage (kidx - 1) mod W to every CTA (not at step 0); no barrier */
    int prev = (s + W - 1) % W;
    if (!kl_emit_const_of(kidx, &c)) {
      kl_emitter e = { k->rw, k->loc };
      kl_op *ifop = if_begin(k->rw, k->loc, kl_emit_cmp(&e, "ne", kidx, kl_emit_index(&e, 0)));
      cl_release(p, prev);
      kl_rewriter_set_insertion_after(k->rw, ifop);
    } else if (c > 0)
      cl_release(p, prev);
  } else
    tbarrier(p); /* ... and in every one (clusters: in every CTA of the cluster, whose boxes land in this stage) */
  tma_issue(p, tma_add(p, kidx, W - 1), (s + W - 1) % W);
}
/* ---- persistent tiles (passes/rock_tma.h): for (t = h0; t < ntiles; t += ng) ---- */
static int64_t ntiles_of(const tpipe *p) { return p->G * p->nM * p->nN; }
/* The tile loop's body (insertion before its yield): *t the tile, *i the workgroup's count of
 * tiles before it ((t - h0) / ng); returns the loop. */
static kl_op *tile_for(const tpipe *p, kl_value **t, kl_value **i) {
  kl_rewriter *rw = p->k->rw;
  kl_ctx *ctx = kl_rewriter_ctx(rw);
  kl_loc loc = p->k->loc;
  kl_value *bnd[3] = { p->h0, kl_tile_index(rw, loc, ntiles_of(p)), p->ng };
  /* no_hoist (lower-to-llvm: llvm.licm.disable): LICM hoisted the epilogue's loop-invariant
   * addresses (the seed conv: 64 LDS addresses of the output swizzle, 64-bit each) out of the
   * tile loop, live across the K loop; ptxas sm_90a then had to rematerialize them (the
   * warp-specialized seed conv spilled 36 bytes with its block id also live across the K loop) */
  kl_named_attr nh = { "no_hoist", kl_attr_unit(ctx) };
  kl_op *loop = kl_rewriter_create(rw, "scf.for", loc, 3, bnd, 0, NULL, 1, &nh, 1);
  kl_block *body = kl_block_create(ctx);
  *t = kl_block_add_arg(ctx, body, kl_type_index(ctx));
  kl_region_push_block(&loop->regions[0], body);
  kl_rewriter_set_insertion_end(rw, body);
  kl_op *y = kl_rewriter_create(rw, "scf.yield", loc, 0, NULL, 0, NULL, 0, NULL, 0);
  kl_rewriter_set_insertion_before(rw, y);
  kl_emitter e = { rw, loc };
  kl_value *o[2] = { kl_emit_sub(&e, *t, p->h0), p->ng };
  *i = kl_op_result(kl_rewriter_create(rw, "arith.divsi", loc, 2, o, 1, &o[0]->type, 0, NULL, 0), 0);
  return loop;
}
/* The block id of tile t in the raster order (the order of today's workgroup ids). */
static kl_value *tile_bid(const tpipe *p, kl_value *t) {
  return kl_gemm_raster_bid(p->k->rw, p->k->loc, t, p->G, p->nM, p->nN, p->gm);
}
/* The accumulator's zero fill for this tile (the one before the loop moves here). */
static void tile_fill(const tpipe *p) {
  kl_rewriter *rw = p->k->rw;
  kl_named_attr fv = { "value", kl_op_attr(p->fill, "value") };
  kl_value *acc = p->k->acc;
  kl_rewriter_create(rw, "rock.fill", p->k->loc, 1, &acc, 0, NULL, 1, &fv, 0);
}
/* The phase parity of stage s at K step base + s of the workgroup's i-th tile (i NULL: the
 * first): the stage's fills before the tile (i x its fills per tile: nk / W, plus one where s <
 * nk mod W) plus base / W, mod 2. base is a multiple of W (the main loop's induction variable or
 * the remainder's first step). */
static kl_value *tile_parity(const tpipe *p, kl_value *i, int s, kl_value *base, int64_t add) {
  kl_rewriter *rw = p->k->rw;
  kl_emitter e = { rw, p->k->loc };
  int64_t W = p->W, per = p->nk / W + (s < p->nk % W), c;
  kl_value *ph = kl_emit_const_of(base, &c) ? kl_tile_index(rw, p->k->loc, c / W + add)
                                            : kl_emit_add(&e, kl_emit_divi(&e, base, W), kl_emit_index(&e, add));
  if (i) ph = kl_emit_add(&e, kl_emit_muli(&e, i, per), ph);
  return kl_emit_remi(&e, ph, 2);
}
static void tma_issue(const tpipe *p, kl_value *kidx, int s);
/* thread 0: the first W - 1 K steps of tile t (where t < ntiles) into stages 0 .. W - 2 */
static void tile_prefetch(const tpipe *p, kl_value *t) {
  kloop K = *p->k;
  tpipe P = *p;
  P.k = &K;
  K.bid = tile_bid(p, t);
  kl_emitter e = { K.rw, K.loc };
  P.elect = kl_emit_and(&e, p->elect, kl_emit_cmp(&e, "lt", t, kl_emit_index(&e, ntiles_of(p))));
  for (int j = 0; j < p->W - 1 && j < p->nk; j++) tma_issue(&P, kl_tile_index(K.rw, K.loc, j), j);
}
/* Returns the op the epilogue goes before (persistent: the tile loop's yield, p->tile_bid its
 * tile's block id), else NULL (after the loop, at the gridwise op). */
static kl_op *tma_emit(tpipe *p) {
  kl_rewriter *rw = p->k->rw;
  kl_ctx *ctx = kl_rewriter_ctx(rw);
  kl_loc loc = p->k->loc;
  int W = p->W;
  int64_t nk = p->nk;
  kl_op *ifop = if_begin(rw, loc, p->elect);
  for (int s = 0; s < W; s++) mbar(p, "init", s, NULL, "count", 1);
  /* clusters (cmb): empty[s], one arrival per warpgroup of each CTA of the cluster */
  for (int s = 0; p->cmb && s < W; s++) mbar(p, "init", W + s, NULL, "count", p->k->t->BS / 128 * p->mc);
  kl_rewriter_set_insertion_after(rw, ifop);
  tbarrier(p); /* clusters: every CTA's mbarriers initialized (and fenced) before a peer's boxes complete on them */
  /* persistent: the first tile's loads, then the tile loop; its own kloop / tpipe with the tile's bid */
  kloop K = *p->k;
  tpipe P = *p;
  P.k = &K;
  const kloop *k = &K;
  kl_value *t = NULL, *i = NULL;
  kl_op *tiles = NULL;
  if (p->h0) {
    tile_prefetch(p, p->h0);
    tiles = tile_for(p, &t, &i);
    K.bid = p->tile_bid = tile_bid(p, t);
    tile_fill(p);
  } else
    for (int j = 0; j < W - 1 && j < nk; j++) tma_issue(&P, kl_tile_index(rw, loc, j), j);
  if (!P.ta || !P.tb) {
    tma_reg_read(&P, kl_tile_index(rw, loc, 0));
    tma_reg_write(&P, 0);
    kl_barrier(k);
    tma_reg_read(&P, kl_tile_index(rw, loc, 1 % nk));
  }
  int64_t r = nk % W, main = nk - r;
  if (main > 0) {
    kl_value *bnd[3] = { kl_tile_index(rw, loc, 0), kl_tile_index(rw, loc, main), kl_tile_index(rw, loc, W) };
    kl_op *loop = kl_rewriter_create(rw, "scf.for", loc, 3, bnd, 0, NULL, 0, NULL, 1);
    kl_block *body = kl_block_create(ctx);
    kl_value *kl = kl_block_add_arg(ctx, body, kl_type_index(ctx));
    kl_region_push_block(&loop->regions[0], body);
    kl_rewriter_set_insertion_end(rw, body);
    kl_emitter e = { rw, loc };
    kl_value *parity = i ? NULL : kl_emit_remi(&e, kl_emit_divi(&e, kl, W), 2);
    for (int j = 0; j < W; j++) tma_step(&P, j ? tma_add(&P, kl, j) : kl, j, i ? tile_parity(p, i, j, kl, 0) : parity);
    kl_rewriter_create(rw, "scf.yield", loc, 0, NULL, 0, NULL, 0, NULL, 0);
    kl_rewriter_set_insertion_after(rw, loop);
  }
  for (int64_t j = 0; j < r; j++)
    tma_step(&P, kl_tile_index(rw, loc, main + j), (int)j,
             i ? tile_parity(p, i, (int)j, kl_tile_index(rw, loc, main), 0) : kl_tile_index(rw, loc, (main / W) % 2));
  kl_wgmma_emit_acc_wait(rw, loc, k->acc, kl_op_attr_string(k->gw, "accel_instr"), 0);
  tbarrier(p); /* clusters: no CTA leaves while a peer may still read its stages' arrivals */
  kl_op *anchor = NULL;
  if (tiles) {
    /* every stage is free (its readers retired, the barrier above): the next tile's first W - 1
     * steps load while this tile's epilogue runs (its LDS is not the stages': rock-output-swizzle
     * takes a buffer of its own in a persistent kernel) */
    kl_emitter e = { rw, loc };
    tile_prefetch(p, kl_emit_add(&e, t, p->ng));
    anchor = tiles->regions[0].first->last;
    kl_rewriter_set_insertion_after(rw, tiles);
  }
  ifop = if_begin(rw, loc, p->elect); /* the mbarriers' LDS may be reused (epilogue) */
  for (int s = 0; s < (p->cmb ? 2 * W : W); s++) mbar(p, "inval", s, NULL, NULL, 0);
  kl_rewriter_set_insertion_after(rw, ifop);
  if (tiles) kl_rewriter_erase_op(rw, p->fill);
  if (p->valid) { /* clusters: a padding CTA (its tile past the grid) skips the epilogue */
    ifop = if_begin(rw, loc, p->valid);
    anchor = ifop->regions[0].first->last;
    kl_rewriter_set_insertion_after(rw, ifop);
  }
  return anchor;
}

/* ---- the warp-specialized TMA K loop (passes/rock_tma.h: ws_emit) ---- */
static void setmaxnreg(const tpipe *p, const char *action, int64_t regs) {
  kl_ctx *ctx = kl_rewriter_ctx(p->k->rw);
  kl_named_attr a[2] = { { "action", kl_attr_str(ctx, action) }, { "regs", kl_attr_int(ctx, regs) } };
  kl_rewriter_create(p->k->rw, "rock.setmaxnreg", p->k->loc, 0, NULL, 0, NULL, 2, a, 0);
}
/* the body of an scf.for over [0, main) step W (insertion at its end); returns the induction variable */
static kl_value *ws_for(const tpipe *p, int64_t main) {
  kl_rewriter *rw = p->k->rw;
  kl_ctx *ctx = kl_rewriter_ctx(rw);
  kl_value *bnd[3] = { kl_tile_index(rw, p->k->loc, 0), kl_tile_index(rw, p->k->loc, main),
                       kl_tile_index(rw, p->k->loc, p->W) };
  kl_op *loop = kl_rewriter_create(rw, "scf.for", p->k->loc, 3, bnd, 0, NULL, 0, NULL, 1);
  kl_block *body = kl_block_create(ctx);
  kl_value *kl = kl_block_add_arg(ctx, body, kl_type_index(ctx));
  kl_region_push_block(&loop->regions[0], body);
  kl_rewriter_set_insertion_end(rw, body);
  kl_op *y = kl_rewriter_create(rw, "scf.yield", p->k->loc, 0, NULL, 0, NULL, 0, NULL, 0);
  kl_rewriter_set_insertion_before(rw, y);
  return kl;
}
/* producer, K step kidx into stage s: wait for the stage's empty phase (parity: its
 * (kidx / W)-th use, the first free), then arrive.expect_tx on full[s] and the boxes */
static void ws_produce(const tpipe *p, kl_value *kidx, int s, kl_value *parity) {
  mbar(p, "wait", p->W + s, parity, NULL, 0);
  int64_t eb = 2, bytes = (p->k->t->MB + p->k->t->NB) * p->k->t->KB * eb;
  mbar(p, "arrive_expect_tx", s, NULL, "bytes", bytes);
  tma_boxes(p, &p->ma, p->k->ga, p->la[s], kidx, s);
  tma_boxes(p, &p->mb, p->k->gb, p->lb[s], kidx, s);
}
/* consumers: release stage s on empty[s] (every consumer thread; clusters: lanes 0 .. mc - 1 of
 * each warpgroup, on every CTA's empty[s]: cl_release) */
static void ws_release(const tpipe *p, int s) {
  if (p->mc > 1)
    cl_release(p, s);
  else
    mbar(p, "arrive", p->W + s, NULL, NULL, 0);
}
/* consumers, K step kidx in stage s: wait for full[s] (parity), the MMAs (group kidx), retire
 * group kidx - 1 and release its stage (s - 1) mod W on empty (every consumer thread arrives;
 * not at step 0) */
static void ws_consume(const tpipe *p, kl_value *kidx, int s, kl_value *parity) {
  const kloop *k = p->k;
  mbar(p, "wait", s, parity, NULL, 0);
  kl_op *g = kl_gemm(k, p->la[s], p->lb[s]);
  kl_rewriter_set_attr(k->rw, g, "wgmma_wait", kl_attr_str(kl_rewriter_ctx(k->rw), "deferred"));
  wg_wait(k, 1);
  int64_t c;
  int prev = (s + p->W - 1) % p->W;
  if (kl_emit_const_of(kidx, &c)) {
    if (c > 0) ws_release(p, prev);
    return;
  }
  kl_emitter e = { k->rw, k->loc };
  kl_op *ifop = if_begin(k->rw, k->loc, kl_emit_cmp(&e, "ne", kidx, kl_emit_index(&e, 0)));
  ws_release(p, prev);
  kl_rewriter_set_insertion_after(k->rw, ifop);
}
/* The warp-specialized loop; returns the op the epilogue goes before: the consumer region's
 * yield, or (persistent) the consumers' tile loop's yield (p->tile_bid its tile's block id). */
static kl_op *ws_emit(tpipe *p) {
  kl_rewriter *rw = p->k->rw;
  kl_ctx *ctx = kl_rewriter_ctx(rw);
  kl_loc loc = p->k->loc;
  int W = p->W;
  int64_t nk = p->nk, nc = p->nc, r = nk % W, main = nk - r;
  kl_emitter e = { rw, loc };
  kl_op *ifop = if_begin(rw, loc, p->elect);
  for (int s = 0; s < W; s++) mbar(p, "init", s, NULL, "count", 1);
  /* empty[s]: every consumer thread arrives; clusters: one arrival per consumer warpgroup of each CTA */
  for (int s = 0; s < W; s++) mbar(p, "init", W + s, NULL, "count", p->mc > 1 ? nc / 128 * p->mc : nc);
  kl_rewriter_set_insertion_after(rw, ifop);
  tbarrier(p); /* clusters: every CTA's mbarriers initialized before a peer's boxes or arrives reach them */
  /* the role split: consumers (tid < nc) in region 0, the producer warpgroup in region 1 */
  kl_op *split = if_begin(rw, loc, kl_emit_cmp(&e, "lt", p->k->tid, kl_emit_index(&e, nc)));
  kl_rewriter_set_attr(rw, split, "ws_consumers", kl_attr_int(ctx, nc));
  kl_op *cy = split->regions[0].first->last; /* the consumer region's yield */
  kl_rewriter_set_insertion_before(rw, cy);
  setmaxnreg(p, "inc", kl_ws_consumer_regs(nc));
  /* persistent: each role loops over the tiles (its own kloop / tpipe with the tile's bid) */
  kloop K = *p->k;
  tpipe P = *p;
  P.k = &K;
  kl_value *t = NULL, *i = NULL;
  kl_op *tiles = NULL;
  if (p->h0) { /* the consumers' K steps take no block id: the epilogue's is computed after them */
    tiles = tile_for(p, &t, &i);
    tile_fill(p);
    cy = tiles->regions[0].first->last;
  }
  if (main > 0) {
    kl_value *kl = ws_for(&P, main);
    kl_value *parity = i ? NULL : kl_emit_remi(&e, kl_emit_divi(&e, kl, W), 2);
    for (int j = 0; j < W; j++)
      ws_consume(&P, j ? tma_add(&P, kl, j) : kl, j, i ? tile_parity(p, i, j, kl, 0) : parity);
    kl_rewriter_set_insertion_before(rw, cy);
  }
  for (int64_t j = 0; j < r; j++)
    ws_consume(&P, kl_tile_index(rw, loc, main + j), (int)j,
               i ? tile_parity(p, i, (int)j, kl_tile_index(rw, loc, main), 0) : kl_tile_index(rw, loc, (main / W) % 2));
  kl_wgmma_emit_acc_wait(rw, loc, K.acc, kl_op_attr_string(K.gw, "accel_instr"), 0);
  ws_release(p, (int)((nk - 1) % W));      /* the last stage's readers retired */
  if (tiles) p->tile_bid = tile_bid(p, t); /* not live across the K loop */
  if (p->valid) {                          /* clusters: a padding CTA (its tile past the grid) skips the epilogue */
    kl_op *vif = if_begin(rw, loc, p->valid);
    kl_rewriter_set_insertion_after(rw, vif);
    cy = vif->regions[0].first->last;
  }
  /* the producer warpgroup: one thread issues (persistent: every tile's steps in turn, so it
   * fills the next tile's stages while the consumers run this one's epilogue) */
  kl_rewriter_set_insertion_before(rw, split->regions[1].first->last);
  setmaxnreg(p, "dec", KL_WS_PRODUCER_REGS);
  kl_op *one = if_begin(rw, loc, kl_emit_cmp(&e, "eq", p->k->tid, kl_emit_index(&e, nc)));
  kl_op *py = one->regions[0].first->last;
  kl_value *pi = NULL;
  if (p->h0) {
    kl_op *ptiles = tile_for(p, &t, &pi);
    K.bid = tile_bid(p, t);
    py = ptiles->regions[0].first->last;
  }
  if (main > 0) {
    kl_value *kl = ws_for(&P, main);
    kl_value *parity = pi ? NULL : kl_emit_remi(&e, kl_emit_add(&e, kl_emit_divi(&e, kl, W), kl_emit_index(&e, 1)), 2);
    for (int j = 0; j < W; j++)
      ws_produce(&P, j ? tma_add(&P, kl, j) : kl, j, pi ? tile_parity(p, pi, j, kl, 1) : parity);
    kl_rewriter_set_insertion_before(rw, py);
  }
  for (int64_t j = 0; j < r; j++)
    ws_produce(&P, kl_tile_index(rw, loc, main + j), (int)j,
               pi ? tile_parity(p, pi, (int)j, kl_tile_index(rw, loc, main), 1)
                  : kl_tile_index(rw, loc, (main / W + 1) % 2));
  /* the join: every thread, every load landed and every MMA retired (clusters: in every CTA, whose
   * remote arrives reach this CTA's empty mbarriers); then inval */
  kl_rewriter_set_insertion_after(rw, split);
  tbarrier(p);
  ifop = if_begin(rw, loc, p->elect);
  for (int s = 0; s < 2 * W; s++) mbar(p, "inval", s, NULL, NULL, 0);
  kl_rewriter_set_insertion_after(rw, ifop);
  if (tiles) kl_rewriter_erase_op(rw, p->fill);
  return cy;
}

/* ---- the multi-stage (cp.async) pipeline, see the header comment ---- */
typedef struct {
  const kloop *k;
  int S;
  bool async_a, async_b;
  const kl_view *da, *db; /* (bid, tid, kl, iter) -> LDS tile of A / B */
  kl_value *la[KL_MAX_STAGES], *lb[KL_MAX_STAGES];
} pipe;
static void async_copy(const kloop *k, kl_value *src, kl_value *dst, kl_value *kidx, const kl_view *g, const kl_view *d,
                       int64_t vlen) {
  kl_ctx *ctx = kl_rewriter_ctx(k->rw);
  kl_value *o[5] = { src, dst, k->bid, k->tid, kidx };
  kl_named_attr a[3] = { { "view", kl_attr_from_view(ctx, g) },
                         { "dst_view", kl_attr_from_view(ctx, d) },
                         { "vector_len", kl_attr_int(ctx, vlen) } };
  kl_rewriter_create(k->rw, "rock.threadwise_copy_async", k->loc, 5, o, 0, NULL, 3, a, 0);
}
/* the asynchronous operands' tiles of K step kidx into stage s, then commit_group */
static void pipe_issue(const pipe *p, kl_value *kidx, int s) {
  const kloop *k = p->k;
  if (p->async_a) async_copy(k, k->a, p->la[s], kidx, k->ga, p->da, k->vla);
  if (p->async_b) async_copy(k, k->b, p->lb[s], kidx, k->gb, p->db, k->vlb);
  kl_rewriter_create(k->rw, "rock.async_commit", k->loc, 0, NULL, 0, NULL, 0, NULL, 0);
}
/* the register-path operands: global -> private copies of step kidx, private -> stage s */
static void pipe_reg_read(const pipe *p, kl_value *kidx) {
  const kloop *k = p->k;
  kl_value *ex[3] = { k->bid, k->tid, kidx };
  if (!p->async_a)
    threadwise(k->rw, k->loc, "rock.threadwise_read_into", k->a, k->copy_a, 3, ex, k->ga, k->vla, NULL, NULL);
  if (!p->async_b)
    threadwise(k->rw, k->loc, "rock.threadwise_read_into", k->b, k->copy_b, 3, ex, k->gb, k->vlb, NULL, NULL);
}
static void pipe_reg_write(const pipe *p, int s) {
  const kloop *k = p->k;
  if (!p->async_a)
    threadwise(k->rw, k->loc, "rock.threadwise_write_all", k->copy_a, p->la[s], 1, &k->tid, k->wa,
               kl_tile_vector_len(k->wa, p->la[s], 1), "set", NULL);
  if (!p->async_b)
    threadwise(k->rw, k->loc, "rock.threadwise_write_all", k->copy_b, p->lb[s], 1, &k->tid, k->wb,
               kl_tile_vector_len(k->wb, p->lb[s], 1), "set", NULL);
}
static void pipe_wait(const pipe *p, int64_t pending) {
  kl_named_attr a = { "pending", kl_attr_int(kl_rewriter_ctx(p->k->rw), pending) };
  kl_rewriter_create(p->k->rw, "rock.async_wait", p->k->loc, 0, NULL, 0, NULL, 1, &a, 0);
}
/* One K step: the tiles of step kidx sit in stage s (static); the loads of step
 * kidx + S - 1 (mod nk: the last S - 1 steps reload early steps, in bounds and unused)
 * go to stage (s + S - 1) mod S, whose last reader was the previous step's GEMM. */
static void pipe_step(const pipe *p, kl_value *kidx, int s, int64_t nk) {
  const kloop *k = p->k;
  int S = p->S, slot = (s + S - 1) % S;
  pipe_wait(p, S - 2); /* the group of step kidx has landed (this thread's copies) */
  kl_barrier(k);       /* ... every thread's; and every wave is done with the GEMM of kidx - 1 */
  kl_value *nx;
  int64_t c;
  if (kl_emit_const_of(kidx, &c))
    nx = kl_tile_index(k->rw, k->loc, (c + S - 1) % nk);
  else {
    kl_emitter e = { k->rw, k->loc };
    nx = kl_emit_remi(&e, kl_emit_add(&e, kidx, kl_tile_index(k->rw, k->loc, S - 1)), nk);
  }
  pipe_issue(p, nx, slot);
  pipe_reg_read(p, nx);
  kl_gemm(k, p->la[s], p->lb[s]);
  pipe_reg_write(p, slot);
}
/* The whole pipelined K loop at the insertion point. */
static void pipe_emit(const pipe *p, int64_t nk) {
  const kloop *k = p->k;
  kl_rewriter *rw = k->rw;
  int S = p->S;
  for (int j = 0; j < S - 1; j++) { /* prologue: steps 0 .. S-2 into stages 0 .. S-2 */
    kl_value *kj = kl_tile_index(rw, k->loc, j % nk);
    pipe_issue(p, kj, j);
    pipe_reg_read(p, kj);
    pipe_reg_write(p, j);
  }
  int64_t r = nk % S, main = nk - r;
  if (main > 0) {
    kl_ctx *ctx = kl_rewriter_ctx(rw);
    kl_value *bnd[3] = { kl_tile_index(rw, k->loc, 0), kl_tile_index(rw, k->loc, main), kl_tile_index(rw, k->loc, S) };
    kl_op *loop = kl_rewriter_create(rw, "scf.for", k->loc, 3, bnd, 0, NULL, 0, NULL, 1);
    kl_block *body = kl_block_create(ctx);
    kl_value *kl = kl_block_add_arg(ctx, body, kl_type_index(ctx));
    kl_region_push_block(&loop->regions[0], body);
    kl_rewriter_set_insertion_end(rw, body);
    for (int j = 0; j < S; j++) {
      kl_emitter e = { rw, k->loc };
      pipe_step(p, j ? kl_emit_add(&e, kl, kl_tile_index(rw, k->loc, j)) : kl, j, nk);
    }
    kl_rewriter_create(rw, "scf.yield", k->loc, 0, NULL, 0, NULL, 0, NULL, 0);
    kl_rewriter_set_insertion_after(rw, loop);
  }
  for (int64_t j = 0; j < r; j++) pipe_step(p, kl_tile_index(rw, k->loc, main + j), (int)j, nk);
  pipe_wait(p, 0); /* nothing in flight into the LDS the epilogue (output swizzle) may reuse */
  kl_barrier(k);
}

/* Stages of the pipeline for this GEMM: option cp (-1: auto, mma.sync GEMMs on NVIDIA
 * only, KL_MAX_STAGES where the grid is narrow (at most KL_CP_ASYNC_NARROW block tiles along
 * M or N), else 3; 0 / 1: off; 2..KL_MAX_STAGES: every GEMM), capped so that
 * S copies of the stage (stage_bytes, with 128-byte alignment per tile) fit the target's
 * LDS (NVIDIA: above 48 KiB as dynamic shared memory, core/target.h) and by the number
 * of K steps (auto: so that two blocks fit, one for blocks of block_size >= 256 threads);
 * 1 = no pipeline. */
static int choose_stages(int64_t cp, const kl_target *tg, const char *accel, int64_t nk, int64_t stage_bytes,
                         bool narrow, int64_t block_size) {
  int64_t s = cp;
  /* the cp.async pipeline feeds mma.sync (and the FMA / MFMA loops on request); a wgmma
   * GEMM takes its own multi-buffered loop (wg_emit): cp.async into its LDS would also need
   * the async-proxy fence after each wait, which that loop does not emit */
  if (accel && !strcmp(accel, "wgmma")) return 1;
  /* auto: 3 stages, 4 for a narrow grid (KL_CP_ASYNC_NARROW, passes/perf_config.h) */
  if (s < 0)
    s = !(tg && tg->arch == KL_ARCH_NVPTX && accel && !strcmp(accel, "mma_sync")) ? 1 : narrow ? KL_MAX_STAGES : 3;
  if (s > KL_MAX_STAGES) s = KL_MAX_STAGES;
  if (s < 2 || nk < 2) return 1;
  if (tg && tg->arch != KL_ARCH_HOST) /* NVIDIA above 48 KiB: dynamic shared memory (core/target.h) */
    while (s >= 2 && s * stage_bytes > tg->lds_bytes) s--;
  /* auto: two blocks per SM still fit (the register-staged loop's occupancy for the 128x128
   * tiles; one block of four warps per SM cannot hide the MMA latencies); a block of 8 or
   * more warps (128x256 / 256x128 tiles: ~230-250 registers a thread) is alone on its SM
   * by registers anyway, so its stages need fit only once */
  if (cp < 0 && tg)
    while (s >= 2 && (block_size >= 256 ? 1 : 2) * s * stage_bytes > tg->lds_bytes) s--;
  if (s > nk) s = nk;
  return s < 2 ? 1 : (int)s;
}

/* Whether operand v can be copied global -> LDS asynchronously: a kernel argument (no
 * prologue, no intermediate) of bytes-wide elements whose copy vectors are 4, 8 or 16
 * bytes on both sides (cp.async's sizes; the destination view proves the LDS side). */
static bool async_operand(kl_value *v, const kl_view *d, kl_value *lds, int64_t vlen) {
  int nc;
  kl_value *u = kl_rock_underlying(v, NULL, &nc, 0);
  if (u->def || prologue_of(v) || u->type->kind != KL_TY_BUFFER || u->type->space == KL_SPACE_LDS) return false;
  int64_t bits = kl_type_bits(v->type->elem), bytes = vlen * bits / 8;
  if (bits < 8 || bits % 8 || (bytes != 4 && bytes != 8 && bytes != 16)) return false;
  return kl_tile_vector_len(d, lds, 3) >= vlen;
}
static int64_t tile_skews(kl_op *op, const tiles *t, const kl_perf_config *pc, const char *accel, int64_t eb, bool wmma,
                          int *skew_a, int *skew_b);
static void erase_tile(kl_rewriter *rw, kl_value *tile);
/* The cp-async-layout of a GEMM's async stages: 0 kgroup, 1 krow, 2 xor (the option; auto:
 * xor where the K tile is one 64-byte panel, else kgroup: K 64 f16 tiles spilled 32-72
 * bytes at S = 3 on sm_80 in xor, none in kgroup). */
static int layout_of(const opts *o, const tiles *t, int64_t eb) {
  return o->layout == 3 ? (t->KB * eb <= 64 ? 2 : 0) : o->layout;
}
/* Whether an operand's stages can take the xor layout (xor_tile_view): K-major tiles of
 * K in 16-byte chunks of a power-of-two count, rows (M / N) a multiple of 8; mn: M / N
 * in 2 or a multiple of 4 chunks, K a multiple of 8. */
static bool xor_fits(const tiles *t, int64_t DB, bool mn) {
  int64_t nc = (mn ? DB : t->KB) / t->kpack;
  if (t->kpack <= 1 || (mn ? DB : t->KB) % t->kpack) return false;
  return mn ? (nc == 2 || (nc >= 4 && nc % 4 == 0)) && t->KB % 8 == 0 : nc >= 2 && !(nc & (nc - 1)) && DB % 8 == 0;
}
/* Bytes of one pipeline stage for choose_stages: each tile 128-byte aligned (join_lds),
 * the register path's tiles (ta, tb: lds_tile's bytes) or, where larger, the krow stages
 * (krow && !xr: [DB, KB + kpack]) or an M / N-major operand's xor stages (mxa, mxb). */
static int64_t stage_bytes_of(const tiles *t, int64_t eb, int64_t ta, int64_t tb, bool krow, bool xr, bool mxa,
                              bool mxb) {
  if (krow && !xr) {
    int64_t ka = t->MB * (t->KB + t->kpack) * eb, kb = t->NB * (t->KB + t->kpack) * eb;
    if (ka > ta) ta = ka;
    if (kb > tb) tb = kb;
  }
  int64_t xa = mxa ? xor_tile_bytes(t, t->MB, true, eb) : 0, xb = mxb ? xor_tile_bytes(t, t->NB, true, eb) : 0;
  if (xa > ta) ta = xa;
  if (xb > tb) tb = xb;
  return (ta + 127) / 128 * 128 + (tb + 127) / 128 * 128;
}
/* The cp.async plan of a GEMM, made once before the copy layouts are chosen (they are ranked
 * for the stages it takes). kl_gemm_async_major (passes/gemm_shape.h) says per operand
 * whether it can take cp.async and whether K- or M / N-contiguous; xr / mxa / mxb whether
 * the xor stages fit (K-major: both tiles, as lds_tile_xor; M / N-major: the operand's
 * own); krow whether the NVIDIA mma.sync tiles can take krow / xor stages at all.
 * cp-async=-1 (auto) decides S here: choose_stages over the stage bytes of the tiles the
 * pipeline would take, kept only with both operands async in xor stages and S >= 3 (two
 * stages, one operand async or other layouts measured slower than the register-staged
 * loop: docs/ARCHITECTURE.md), else 1 (the register-staged loop, its copy layouts not
 * ranked for xor stores: sm_90 4096^3 f16 with B [K, N] ran 208 TFLOP/s against 302 when
 * they were). An explicit S (>= 2) is capped later (lower_gridwise). xa / xb: rank the
 * operand's copy layouts for the K-major (1) or M / N-major (2) xor stages, 0 not. */
typedef struct {
  int S; /* auto: the stages (1: no pipeline); explicit: 0 (lower_gridwise caps the option) */
  kl_async_major ma, mb;
  bool krow, xr, mxa, mxb;
  int xa, xb;
} aplan;
static aplan async_plan(const opts *o, kl_op *op, const tiles *t, const kl_perf_config *pc, const char *accel,
                        int64_t eb, kl_value *a, kl_value *b) {
  aplan p = { 0 };
  p.ma = kl_gemm_async_major(a), p.mb = kl_gemm_async_major(b);
  bool mma = accel && !strcmp(accel, "mma_sync") && t->kpack > 1 && t->kpack * eb == 16;
  const kl_target *tg = kl_perf_resolve_target(op, NULL, NULL, 0);
  bool nv = tg && tg->arch == KL_ARCH_NVPTX;
  int lay = layout_of(o, t, eb);
  /* the host with the layout named (cp-async-layout=krow / xor) and 16-byte kpack rows (kpack-8
   * f16 FMA configs): the same stages with plain copies, so that the specs run their index
   * arithmetic against g:eval */
  bool host = tg && tg->arch == KL_ARCH_HOST && (o->layout == 1 || o->layout == 2) && t->kpack > 1 &&
      t->kpack * eb == 16;
  p.krow = lay > 0 && ((mma && nv) || host) && t->KB % (2 * t->kpack) == 0;
  p.xr = lay == 2 && xor_fits(t, t->MB, false) && xor_fits(t, t->NB, false);
  p.mxa = p.krow && lay == 2 && p.ma == KL_ASYNC_MN && xor_fits(t, t->MB, true);
  p.mxb = p.krow && lay == 2 && p.mb == KL_ASYNC_MN && xor_fits(t, t->NB, true);
  /* the xor stages each operand would take: K-major (xr) or M / N-major (mx) */
  int xa = p.krow && p.xr && p.ma == KL_ASYNC_K ? 1 : p.mxa ? 2 : 0;
  int xb = p.krow && p.xr && p.mb == KL_ASYNC_K ? 1 : p.mxb ? 2 : 0;
  if (o->cp_async >= 2) { /* explicit: rank for the xor stages the operands will take */
    p.xa = xa, p.xb = xb;
    return p;
  }
  p.S = 1;
  if (o->cp_async != -1 || !xa || !xb) return p;
  int sa, sb;
  tile_skews(op, t, pc, accel, eb, false, &sa, &sb);
  int64_t ta = (t->KB / t->kpack) * lds_rows(t->MB, sa) * t->kpack * eb,
          tb = (t->KB / t->kpack) * lds_rows(t->NB, sb) * t->kpack * eb;
  bool narrow = t->Mp / t->MB <= KL_CP_ASYNC_NARROW || t->Np / t->NB <= KL_CP_ASYNC_NARROW;
  int S = choose_stages(-1, tg, accel, t->Kp / t->KB, stage_bytes_of(t, eb, ta, tb, p.krow, p.xr, p.mxa, p.mxb), narrow,
                        t->BS);
  if (S >= 3) p.S = S, p.xa = xa, p.xb = xb;
  return p;
}

/* One operand's stages of the cp.async pipeline (lower_gridwise, after the copy layouts):
 * async: copied with cp.async; kind: 0 the register path's tile (lds_tile), 1 krow
 * (lds_tile_krow), 2 xor (lds_tile_xor, K-major), 3 xor M / N-major; perm: the xor tile's
 * row permutation (xor_perm); tile: the stage-0 tile of kind > 0, made here (it replaces
 * the register path's tile where the pipeline is taken, else it is erased). */
typedef struct {
  bool async;
  int kind, perm;
  kl_value *tile;
} stage_pick;
/* An M / N-contiguous operand (the plan's mxa / mxb) goes into the M / N-major xor stages
 * where its copy's vectors land whole there; else (and for every other operand) it is
 * async where its vectors land whole in the register path's tile `lds` (async_operand), and
 * with krow into krow or (xr) K-major xor stages where they land whole there too. */
static kl_value *stage_tile(kl_rewriter *rw, kl_loc loc, const kl_type *elem, const tiles *t, bool is_a, int kind,
                            int perm, int skew, char *err, size_t n);
static stage_pick stage_plan(kl_rewriter *rw, kl_loc loc, const kl_type *elem, const tiles *t, bool is_a, kl_value *v,
                             const kl_view *dv, int64_t vlen, const aplan *ap, kl_value *lds, int64_t eb) {
  stage_pick sp = { 0 };
  int64_t DB = is_a ? t->MB : t->NB;
  const char *d = is_a ? "m" : "n";
  char err[256];
  if (is_a ? ap->mxa : ap->mxb) {
    int pm = xor_perm(t, DB, d, true, dv, vlen, eb, NULL);
    kl_value *x = pm < 0 ? NULL : lds_tile_xor(rw, loc, elem, t, DB, d, pm, true, err, sizeof err);
    if (x && async_operand(v, dv, x, vlen)) return (stage_pick){ true, 3, pm, x };
    if (x) erase_tile(rw, x);
  }
  if (!async_operand(v, dv, lds, vlen)) return sp;
  sp.async = true;
  if (!ap->krow) return sp;
  int pm = ap->xr ? xor_perm(t, DB, d, false, dv, vlen, eb, NULL) : 0;
  kl_value *x = !ap->xr ? lds_tile_krow(rw, loc, elem, t, DB, d, err, sizeof err)
      : pm < 0          ? NULL
                        : lds_tile_xor(rw, loc, elem, t, DB, d, pm, false, err, sizeof err);
  if (x && kl_tile_vector_len(dv, x, 3) >= vlen)
    sp.kind = ap->xr ? 2 : 1, sp.perm = pm, sp.tile = x;
  else if (x)
    erase_tile(rw, x);
  return sp;
}
/* A stage tile of kind `kind` (stage_pick) for operand A (is_a) or B. */
static kl_value *stage_tile(kl_rewriter *rw, kl_loc loc, const kl_type *elem, const tiles *t, bool is_a, int kind,
                            int perm, int skew, char *err, size_t n) {
  int64_t DB = is_a ? t->MB : t->NB;
  const char *d = is_a ? "m" : "n";
  return kind >= 2 ? lds_tile_xor(rw, loc, elem, t, DB, d, perm, kind == 3, err, n)
      : kind == 1  ? lds_tile_krow(rw, loc, elem, t, DB, d, err, n)
                   : lds_tile(rw, loc, elem, t, DB, skew, d, err, n);
}

/* LDS tile [KB, DB]: perm < 0 lds_tile of skew `skew`, else lds_tile_xor with row
 * permutation perm. */
static kl_value *any_tile(kl_rewriter *rw, kl_loc loc, const kl_type *elem, const tiles *t, int64_t DB, int skew,
                          int perm, const swz1 *sw, const char *d, char *err, size_t n) {
  if (sw && sw->m) return lds_tile_x1(rw, loc, elem, t, DB, d, sw, err, n);
  return perm >= 0 ? lds_tile_xor(rw, loc, elem, t, DB, d, perm, false, err, n)
                   : lds_tile(rw, loc, elem, t, DB, skew, d, err, n);
}
/* Bytes of one xor tile pair (xor_tile_view: P panels of DB (+ 1 pad row with P > 1) rows
 * of min(KB / kpack, 4) 16-byte chunks), each tile rounded up to 128 bytes (join_lds). */
static int64_t xor_pair_bytes(const tiles *t, int64_t eb) {
  int64_t nc = t->KB / t->kpack, ncp = nc < 4 ? nc : 4, P = nc / ncp, row = ncp * t->kpack * eb;
  int64_t a = P * (t->MB + (P > 1)) * row, b = P * (t->NB + (P > 1)) * row;
  return (a + 127) / 128 * 128 + (b + 127) / 128 * 128;
}
/* Whether both LDS tiles of the GEMM `op` take the xor layout (xor_tile_view: unpadded,
 * 16-byte chunks XOR-swizzled by the row) so that the AMDGPU K loop can double-buffer
 * them: option amd-lds-layout = xor forces it on any kpack > 1 tile outside mma.sync /
 * wgmma (the host runs it), skew never; auto (the default) takes it for MFMA / WMMA tiles
 * with 16-byte kpack rows (amd16) and several K steps whose skewed pair fits the LDS
 * once but not twice (so the CU runs one workgroup either way: no occupancy lost) and
 * whose xor pair fits twice, e.g. gfx942's 256x256x32 f16 (36 KiB skewed, 32 KiB xor, 64
 * KiB of LDS). 1 yes, 0 no, -1 (err) when forced on a tile it cannot describe. */
static int amd_lds_xor(const opts *o, kl_op *op, const tiles *t, const char *accel, int64_t eb, bool amd16, bool wmma,
                       char *err, size_t n) {
  int64_t nc = t->KB / t->kpack, nk = t->Kp / t->KB;
  bool can = t->kpack > 1 && t->KB % t->kpack == 0 && nc >= 2 && !(nc & (nc - 1)) && t->MB % 8 == 0 && t->NB % 8 == 0;
  if (o->amd_lds == 1) return 0;
  if (o->amd_lds == 2) {
    if (accel && (!strcmp(accel, "mma_sync") || !strcmp(accel, "wgmma"))) return 0;
    if (can) return 1;
    if (t->kpack == 1) return 0; /* the xor1 tiles (amd_lds_x1) */
    snprintf(err, n,
             "amd-lds-layout=xor needs kpack > 1 with kPerBlock / kpack a power of two >= 2 and mPerBlock, nPerBlock "
             "multiples of 8 (got %lldx%lldx%lld, kpack %lld)",
             (long long)t->MB, (long long)t->NB, (long long)t->KB, (long long)t->kpack);
    return -1;
  }
  if (!amd16 || !can || nk < 2 || o->amd_loop == 1) return 0;
  const kl_target *tg = kl_perf_resolve_target(op, NULL, NULL, 0);
  if (!tg || tg->arch != KL_ARCH_AMDGPU) return 0;
  int sa = tile_skew(t->MB, wmma), sb = tile_skew(t->NB, wmma);
  int64_t base = t->KB * (t->MB + t->NB) * eb, lds = tg->lds_bytes;
  int64_t padded = base +
      (t->KB / t->kpack) * (lds_rows(t->MB, sa) - t->MB + lds_rows(t->NB, sb) - t->NB) * t->kpack * eb;
  if (padded > lds) padded = base; /* lower_gridwise drops the skew */
  bool mfma = accel && !strcmp(accel, "mfma");
  if (mfma && 4 * padded <= lds) return 0; /* two workgroups double-buffer the skewed tiles */
  return 2 * padded > lds && 2 * xor_pair_bytes(t, eb) <= lds;
}

/* Whether the kpack-1 LDS tiles of the GEMM `op` take the xor1 swizzle (x1_tile_view):
 * AMDGPU tiles of f32 MFMA (gfx908 / gfx90a / gfx942) and of the no-matrix (FMA) path
 * (gfx1030; f32 on gfx1100) under amd-lds-layout = auto or xor, and any kpack-1 tile
 * outside mma.sync / wgmma / WMMA under xor (the host runs it). Returns the smallest
 * granule in elements (MFMA f32 reads one element per lane: 1; the FMA path reads
 * 16-byte vectors along M / N: 16 bytes), negated under xor (a swizzle wherever one
 * exists: x1_pick's force), 0 for none. */
static int64_t amd_lds_x1(const opts *o, kl_op *op, const tiles *t, const char *accel, int64_t eb) {
  if (t->kpack != 1 || o->amd_lds == 1) return 0;
  bool mfma = accel && !strcmp(accel, "mfma");
  if (accel && !mfma && kl_accel_is_accel(op)) return 0;
  if (o->amd_lds != 2) {
    const kl_target *tg = kl_perf_resolve_target(op, NULL, NULL, 0);
    if (!tg || tg->arch != KL_ARCH_AMDGPU) return 0;
  }
  int64_t l = mfma ? 1 : (16 + eb - 1) / eb;
  return o->amd_lds == 2 ? -l : l;
}

/* Whether the AMDGPU K loop of the MFMA / WMMA GEMM `op` (tile pair of tile_bytes in
 * LDS) double-buffers by default: kl_accel_amd_dbuf (passes/rock_accel.h; the heuristic's
 * cost charges the same rule), e.g. gfx1100's 128x64x64 seed conv and the K-32 tiles
 * 256x64x32 (gfx1100) / 256x128x32 (gfx90a) of 4096^3 f16. */
static bool amd_dbuf(kl_op *op, const kl_target *tg, const char *accel, const tiles *t, int64_t eb,
                     int64_t tile_bytes) {
  bool mfma = accel && !strcmp(accel, "mfma"), wmma = accel && !strcmp(accel, "wmma");
  if (!tg || !(mfma || wmma) || tile_bytes <= 0) return false;
  const kl_accel_desc *d = kl_accel_desc_by_intrinsic(kl_op_attr_string(op, "accel_instr"));
  kl_accel_config c = { t->MB, t->NB, t->KB, 0, 0, t->kpack, 1 };
  if (!d || !kl_op_attr_i64(op, "m_per_wave", &c.m_per_wave) || !kl_op_attr_i64(op, "n_per_wave", &c.n_per_wave))
    return false;
  return kl_accel_amd_dbuf(&c, tg, d, (int)eb, tile_bytes);
}

/* The K loop of an AMDGPU accel GEMM (nk > 1 K steps; the copies hold a step's tiles
 * between its global loads and its LDS stores). With a second pair of LDS tiles (la2 /
 * lb2 non-NULL: both pairs fit the target's LDS) double-buffered, one barrier per K step:
 *   read(0); write(L0); read(1)
 *   scf.for %kl = 0 to nk - nk % 2 step 2 {
 *     barrier; write(L1); read((kl + 2) mod nk); blockwise_gemm(L0)
 *     barrier; write(L0); read((kl + 3) mod nk); blockwise_gemm(L1) }
 *   [nk odd: barrier; blockwise_gemm(L0)]   barrier
 * (each write follows the barrier after every wave's last read of that tile, each
 * gemm the barrier after the write of its tile; the last steps write and read tiles
 * that are never used, in bounds). Else one pair, two barriers per step:
 *   read(0)
 *   scf.for %kl = 0 to nk step 1 { barrier; write(L0); barrier; read((kl + 1) mod nk);
 *                                  blockwise_gemm(L0) }
 *   barrier
 * In both the next step's global loads are issued before the step's matrix
 * instructions and consumed (by the LDS writes) only after the back-edge, and in the
 * double-buffered loop only after the next barrier: that barrier waits for LDS only
 * (passes/lower_barrier.h: inline assembly on gfx11 / gfx908, where LLVM 19's s_barrier
 * would first wait for every load in flight), so the loads of step kl + 2 stay in flight
 * across step kl's matrix instructions and the barrier. */
static void amd_k_loop(const kloop *k, int64_t nk, kl_value *la, kl_value *lb, kl_value *la2, kl_value *lb2) {
  kl_rewriter *rw = k->rw;
  kl_ctx *ctx = kl_rewriter_ctx(rw);
  bool db = la2 && lb2;
  int64_t main = db ? nk - nk % 2 : nk;
  kl_read(k, kl_tile_index(rw, k->loc, 0));
  if (db) {
    kl_write(k, la, lb);
    kl_read(k, kl_tile_index(rw, k->loc, 1));
  }
  kl_value *bnd[3] = { kl_tile_index(rw, k->loc, 0), kl_tile_index(rw, k->loc, main),
                       kl_tile_index(rw, k->loc, db ? 2 : 1) };
  kl_op *loop = kl_rewriter_create(rw, "scf.for", k->loc, 3, bnd, 0, NULL, 0, NULL, 1);
  kl_block *body = kl_block_create(ctx);
  kl_value *kl = kl_block_add_arg(ctx, body, kl_type_index(ctx));
  kl_region_push_block(&loop->regions[0], body);
  kl_rewriter_set_insertion_end(rw, body);
  if (db) {
    kl_barrier(k);
    kl_write(k, la2, lb2);
    kl_read(k, kl_next(k, kl, 2, nk));
    kl_gemm(k, la, lb);
    kl_barrier(k);
    kl_write(k, la, lb);
    kl_read(k, kl_next(k, kl, 3, nk));
    kl_gemm(k, la2, lb2);
  } else {
    kl_barrier(k);
    kl_write(k, la, lb);
    kl_barrier(k);
    kl_read(k, kl_next(k, kl, 1, nk)); /* the last step reloads step 0: in bounds, unused */
    kl_gemm(k, la, lb);
  }
  kl_rewriter_create(rw, "scf.yield", k->loc, 0, NULL, 0, NULL, 0, NULL, 0);
  kl_rewriter_set_insertion_after(rw, loop);
  if (db && nk % 2) {
    kl_barrier(k);
    kl_gemm(k, la, lb);
  }
  kl_barrier(k); /* every wave's last LDS read before the epilogue may reuse the LDS */
}

/* The row skews of the kpack tiles (lds_tile_view) of an accel GEMM with 16-byte kpack
 * rows (mma.sync, wgmma, MFMA / WMMA; else none) and the bytes they add: tile_skew per
 * operand while both tiles stay within the LDS limit (48 KiB of static shared memory on
 * NVIDIA, wgmma and AMD the target's), else none (see lower_gridwise). */
static int64_t tile_skews(kl_op *op, const tiles *t, const kl_perf_config *pc, const char *accel, int64_t eb, bool wmma,
                          int *skew_a, int *skew_b) {
  *skew_a = *skew_b = 0;
  bool mfma16 = accel && (!strcmp(accel, "mfma") || !strcmp(accel, "wmma"));
  bool nv16 = accel && (!strcmp(accel, "mma_sync") || !strcmp(accel, "wgmma"));
  if (!(nv16 || mfma16) || t->kpack <= 1 || t->kpack * eb != 16) return 0;
  const kl_target *tt = mfma16 ? kl_perf_resolve_target(op, NULL, NULL, 0) : NULL;
  int64_t lim = tt ? tt->lds_bytes : 48 * 1024;
  const kl_target *tw = mfma16 || strcmp(accel, "wgmma") ? NULL : kl_perf_resolve_target(op, NULL, NULL, 0);
  if (tw) lim = tw->lds_bytes; /* wgmma: its multi-buffered loop is past 48 KiB (dynamic shared memory) anyway */
  int sa = tile_skew(t->MB, wmma), sb = tile_skew(t->NB, wmma);
  int64_t extra = (t->KB / t->kpack) * (lds_rows(t->MB, sa) - t->MB + lds_rows(t->NB, sb) - t->NB) * t->kpack * eb;
  if (kl_perf_config_lds_bytes(pc, (int)eb) + extra > lim) return 0;
  *skew_a = sa, *skew_b = sb;
  return extra;
}

static bool get_attr(kl_rewriter *rw, kl_op *op, const char *name, int64_t *out) {
  if (kl_op_attr_i64(op, name, out) && *out >= 1) return true;
  kl_rewriter_fail(rw, op->loc, "rock.gridwise_gemm: missing or non-positive integer attribute '%s'", name);
  return false;
}

static bool lower_gridwise(const kl_pattern *pat, kl_op *op, kl_rewriter *rw) {
  const opts *o = pat->user;
  kl_ctx *ctx = op->ctx;
  kl_loc loc = op->loc;
  char err[512];
  if (op->nopnds != 3) {
    kl_rewriter_fail(rw, loc, "rock.gridwise_gemm needs 3 operands");
    return false;
  }
  kl_value *a = op->opnds[0].value, *b = op->opnds[1].value, *c = op->opnds[2].value;
  const kl_type *ta = a->type, *tb = b->type, *tc = c->type;
  if (ta->kind != KL_TY_BUFFER || tb->kind != KL_TY_BUFFER || tc->kind != KL_TY_BUFFER || ta->rank != 3 ||
      tb->rank != 3 || tc->rank != 3) {
    kl_rewriter_fail(rw, loc, "rock.gridwise_gemm needs rank-3 buffers a [G,K,M], b [G,K,N], c [G,M,N]");
    return false;
  }
  tiles t = { .G = ta->shape[0], .Kp = ta->shape[1], .Mp = ta->shape[2], .Np = tb->shape[2] };
  if (!get_attr(rw, op, "m_per_block", &t.MB) || !get_attr(rw, op, "n_per_block", &t.NB) ||
      !get_attr(rw, op, "k_per_block", &t.KB) || !get_attr(rw, op, "m_per_thread", &t.MT) ||
      !get_attr(rw, op, "n_per_thread", &t.NT) || !get_attr(rw, op, "kpack", &t.kpack))
    return false;
  kl_perf_config pc = { t.MB, t.NB, t.KB, t.MT, t.NT, t.kpack, 1 };
  if (!kl_perf_config_validate(&pc, NULL, 1, err, sizeof err)) {
    kl_rewriter_fail(rw, loc, "rock.gridwise_gemm: %s", err);
    return false;
  }
  t.BS = kl_perf_config_block_size(&pc);
  int64_t bs_attr;
  if (kl_op_attr_i64(op, "block_size", &bs_attr) && bs_attr != t.BS) {
    kl_rewriter_fail(rw, loc, "rock.gridwise_gemm: block_size %lld does not match the tiles (%lld)", (long long)bs_attr,
                     (long long)t.BS);
    return false;
  }
  if (t.Kp % t.KB || t.Mp % t.MB || t.Np % t.NB || tb->shape[0] != t.G || tb->shape[1] != t.Kp || tc->shape[0] != t.G ||
      tc->shape[1] != t.Mp || tc->shape[2] != t.Np) {
    kl_rewriter_fail(rw, loc,
                     "rock.gridwise_gemm: operands a %s, b %s, c %s are not padded to the %lldx%lldx%lld tiles",
                     ta->text, tb->text, tc->text, (long long)t.MB, (long long)t.NB, (long long)t.KB);
    return false;
  }
  kl_op *fn = kl_tile_func_of(op);
  const char *store = kl_op_attr_string(op, "store");
  if (!store) store = "set";
  const kl_type *idx = kl_type_index(ctx), *acc_t = kl_gemm_acc_type(ctx, ta->elem);

  layout la, lb;
  bool bad = false;
  kl_value *pa = load_driver(rw, a, &bad), *pb = bad ? NULL : load_driver(rw, b, &bad);
  if (bad) return false;
  /* AMD MFMA with 16-byte kpack rows (see below): the copies' LDS conflicts rank the layouts */
  const char *acc_kind = kl_op_attr_string(op, "accel");
  int64_t ebytes = (kl_type_bits(ta->elem) + 7) / 8;
  bool amd_wmma = acc_kind && !strcmp(acc_kind, "wmma");
  bool amd16 = acc_kind && (!strcmp(acc_kind, "mfma") || !strcmp(acc_kind, "wmma")) && t.kpack > 1 &&
      t.kpack * ebytes == 16;
  int sk_a = !amd16 ? -1 : tile_skew(t.MB, amd_wmma), sk_b = !amd16 ? -1 : tile_skew(t.NB, amd_wmma);
  /* the cp.async plan, made once here (async_plan): the copies of the operands it puts into
   * xor stages are ranked for their stores into them */
  aplan ap = async_plan(o, op, &t, &pc, acc_kind, ebytes, a, b);
  /* the unpadded xor LDS tiles of AMD's double-buffered K loop (amd_lds_xor) */
  int axor = amd_lds_xor(o, op, &t, acc_kind, ebytes, amd16, amd_wmma, err, sizeof err);
  if (axor < 0) {
    kl_rewriter_fail(rw, loc, "rock-gridwise-to-blockwise: %s", err);
    return false;
  }
  /* AMD kpack-1 tiles (f32 MFMA, the FMA path): the xor1 swizzle (x1_tile_view) with the
   * smallest granule |x1| (elements; 0: none; negative: forced, amd_lds_x1) */
  int64_t x1 = amd_lds_x1(o, op, &t, acc_kind, ebytes);
  if (!choose_layout(&t, true, a, pa, sk_a, axor, ap.xa, x1, ebytes, &la, err, sizeof err) ||
      !choose_layout(&t, false, b, pb, sk_b, axor, ap.xb, x1, ebytes, &lb, err, sizeof err)) {
    kl_rewriter_fail(rw, loc, "rock-gridwise-to-blockwise: %s", err);
    return false;
  }
  kl_view *ga = global_copy_view(&t, true, &la, err, sizeof err);
  kl_view *gb = ga ? global_copy_view(&t, false, &lb, err, sizeof err) : NULL;
  kl_view *wa = gb ? lds_copy_view(&t, true, &la, err, sizeof err) : NULL;
  kl_view *wb = wa ? lds_copy_view(&t, false, &lb, err, sizeof err) : NULL;
  /* accel GEMMs (passes/rock_accel.h): C is written in the matrix instruction's layout */
  kl_view *cv = !wb           ? NULL
      : kl_accel_is_accel(op) ? kl_accel_c_view(op, t.G, t.Mp, t.Np, err, sizeof err)
                              : output_view(&t, err, sizeof err);
  bool ok = cv != NULL;
  if (ok) {
    kl_rewriter_set_insertion_before(rw, op);
    kl_value *bid = kl_op_result(kl_rewriter_create(rw, "rock.workgroup_id", loc, 0, NULL, 1, &idx, 0, NULL, 0), 0);
    kl_value *hw = bid; /* the hardware workgroup id (persistent kernels: the first tile) */
    int64_t gm = o->raster_m;
    if (gm < 0) { /* auto: the order whose wave touches the fewest operand bytes (passes/gemm_raster.h) */
      const kl_target *tr = kl_perf_resolve_target(op, NULL, NULL, 0);
      gm = tr ? kl_gemm_raster_auto(t.Mp / t.MB, t.Np / t.NB, t.MB * t.Kp * ebytes,
                                    t.NB * t.Kp * ((kl_type_bits(tb->elem) + 7) / 8), tr->compute_units, tr->l2_bytes)
              : 0;
    }
    if (fn) kl_rewriter_set_attr(rw, fn, "raster_group_m", kl_attr_int(ctx, gm > 1 ? gm : 0));
    bid = kl_gemm_raster_bid(rw, loc, bid, t.G, t.Mp / t.MB, t.Np / t.NB, gm); /* the tile order */
    kl_value *tid = kl_op_result(kl_rewriter_create(rw, "rock.workitem_id", loc, 0, NULL, 1, &idx, 0, NULL, 0), 0);
    /* mma.sync LDS layout (kpack * element = 16 bytes: one row of K per M/N index). With
     * rows one after the other, the K groups of one index are 16 * DB bytes apart, a
     * multiple of 128: the 8 lanes of a quarter warp that write the 8 K groups of one
     * row (the coalesced copy of a K-contiguous operand) hit the same banks, and so do
     * the lanes of an M/N-contiguous operand that write 8 indices 8 apart. Skew 2 (DB a
     * multiple of 64) stores index d at row d + d/8 and pads each group by one row: K
     * groups 16 bytes apart modulo 128, indices 8 apart 144 bytes apart: both writes
     * conflict-free, and the fragment reads (8 consecutive indices d0..d0+7 of one group,
     * d0 a multiple of 8) stay 128 contiguous bytes. Skew 1 (one pad row) fixes the
     * first case only. Only while the tiles stay within the 48 KiB of static shared
     * memory. */
    int64_t eb = (kl_type_bits(ta->elem) + 7) / 8, extra = 0;
    int skew_a = 0, skew_b = 0;
    const char *accel = kl_op_attr_string(op, "accel");
    bool nv16 = accel && (!strcmp(accel, "mma_sync") || !strcmp(accel, "wgmma")); /* wgmma: passes/rock_wgmma.h */
    /* MFMA (AMD: 32 banks of 4 bytes, 16-byte accesses 8 lanes per phase, as on NVIDIA):
     * the same layout within the target's LDS */
    bool mfma16 = accel && (!strcmp(accel, "mfma") || !strcmp(accel, "wmma")) && t.kpack > 1 && t.kpack * eb == 16;
    if (nv16 || mfma16) extra = tile_skews(op, &t, &pc, accel, eb, amd_wmma, &skew_a, &skew_b);
    /* TMA operands of a wgmma GEMM (passes/rock_tma.h): LDS tiles with no row skew */
    bool tma_a = false, tma_b = false;
    kl_tma_map tm_a, tm_b;
    char why_a[192] = "", why_b[192] = "";
    /* fp8 wgmma promotion (attribute fp8_promote, passes/rock_wgmma.h): the register loop
     * (wg_emit) or the plain loop; fp8 operands take no TMA (16-bit types only) */
    int64_t promote = 0;
    if (kl_op_attr_i64(op, "fp8_promote", &promote) && promote > 0 &&
        (!accel || strcmp(accel, "wgmma") || !kl_wgmma_instr_is_fp8(kl_op_attr_string(op, "accel_instr")) ||
         promote % t.KB)) {
      snprintf(err, sizeof err, "fp8_promote %lld: only for the fp8 wgmma with a K tile (%lld) dividing it",
               (long long)promote, (long long)t.KB);
      ok = false;
      goto done;
    }
    if (o->tma && accel && !strcmp(accel, "wgmma") && t.Kp / t.KB <= 1)
      snprintf(why_a, sizeof why_a, "one K step"), snprintf(why_b, sizeof why_b, "one K step");
    if (o->tma && promote)
      snprintf(why_a, sizeof why_a, "fp8 promotion"), snprintf(why_b, sizeof why_b, "fp8 promotion");
    if (o->tma && accel && !strcmp(accel, "wgmma") && t.kpack * eb == 16 && t.Kp / t.KB > 1 && !promote) {
      tma_a = kl_tma_operand(a, prologue_of(a) != NULL, t.MB, &tm_a, why_a, sizeof why_a);
      tma_b = kl_tma_operand(b, prologue_of(b) != NULL, t.NB, &tm_b, why_b, sizeof why_b);
      /* K in runs (kdims > 1: a channel-sliced conv filter): each K-major box (the swizzled
       * panel, else 8 elements) inside one run */
      int64_t kbox = tma_swizzle_of(o->tma_sw, t.KB * eb) / eb;
      if (kbox < 8) kbox = 8;
      kl_tma_map *tms[2] = { &tm_a, &tm_b };
      bool *tks[2] = { &tma_a, &tma_b };
      char *whys[2] = { why_a, why_b };
      for (int i = 0; i < 2; i++) {
        kl_tma_map probe = *tms[i];
        probe.box[0] = kbox;
        if (*tks[i] && !kl_tma_box_fits(&probe)) {
          *tks[i] = false;
          snprintf(whys[i], sizeof why_a, "K runs of %lld elements are not whole boxes of %lld",
                   (long long)probe.dims[0], (long long)kbox);
        }
      }
      /* im2col mode (tma-im2col=1, passes/rock_tma_im2col.h) for an operand that is not a box */
      kl_value *ops2[2] = { a, b };
      int64_t dbs[2] = { t.MB, t.NB };
      for (int i = 0; i < 2 && o->im2col; i++) {
        char w2[192];
        if (*tks[i]) continue;
        if (kl_tma_im2col_operand(ops2[i], prologue_of(ops2[i]) != NULL, dbs[i], kbox, tms[i], w2, sizeof w2))
          *tks[i] = true;
        else
          snprintf(whys[i] + strlen(whys[i]), sizeof why_a - strlen(whys[i]), "; %s", w2);
      }
      /* MN-major operands: the swizzled MN-major layout only (tma_mn_swizzle) */
      const kl_accel_desc *wd = kl_wgmma_desc_by_name(kl_op_attr_string(op, "accel_instr"));
      int64_t mpw = 0, npw = 0;
      kl_op_attr_i64(op, "m_per_wave", &mpw);
      kl_op_attr_i64(op, "n_per_wave", &npw);
      if (tma_a && tm_a.mn && !(tm_a.swizzle = tma_mn_swizzle(o->tma_sw, eb, t.MB, mpw, wd ? wd->m : 0, t.KB))) {
        tma_a = false;
        snprintf(
            why_a, sizeof why_a,
            "MN-major: needs a swizzled layout whose panel divides the M tile, wave and instruction (tma-swizzle %lld)",
            (long long)o->tma_sw);
      }
      if (tma_b && tm_b.mn && !(tm_b.swizzle = tma_mn_swizzle(o->tma_sw, eb, t.NB, npw, wd ? wd->n : 0, t.KB))) {
        tma_b = false;
        snprintf(
            why_b, sizeof why_b,
            "MN-major: needs a swizzled layout whose panel divides the N tile, wave and instruction (tma-swizzle %lld)",
            (long long)o->tma_sw);
      }
      if (tma_a) skew_a = 0;
      if (tma_b) skew_b = 0;
      extra = (t.KB / t.kpack) * (lds_rows(t.MB, skew_a) - t.MB + lds_rows(t.NB, skew_b) - t.NB) * t.kpack * eb;
    }
    /* amd_lds_xor: the xor tiles, no skew; the row permutations from choose_layout (AMD
     * MFMA / WMMA: the copies' wavefronts), else from the copies' stores (xor_perm) */
    int perm_a = -1, perm_b = -1;
    if (axor) {
      skew_a = skew_b = 0;
      extra = xor_pair_bytes(&t, eb) - kl_perf_config_lds_bytes(&pc, (int)eb);
      perm_a = la.perm, perm_b = lb.perm;
      if (sk_a < 0) {
        kl_view *fa = lds_copy_view_ex(&t, true, &la, true, err, sizeof err);
        kl_view *fb = lds_copy_view_ex(&t, false, &lb, true, err, sizeof err);
        perm_a = fa ? xor_perm(&t, t.MB, "m", false, fa, la.vlen, eb, NULL) : -1;
        perm_b = fb ? xor_perm(&t, t.NB, "n", false, fb, lb.vlen, eb, NULL) : -1;
        kl_view_free(fa);
        kl_view_free(fb);
        if (perm_a < 0) perm_a = 0;
        if (perm_b < 0) perm_b = 0;
      }
      if (fn) kl_rewriter_set_attr(rw, fn, "amd_lds_layout", kl_attr_str(ctx, "xor"));
    }
    if (fn && (la.sw.m || lb.sw.m)) kl_rewriter_set_attr(rw, fn, "amd_lds_layout", kl_attr_str(ctx, "xor1"));
    kl_value *lds_a = any_tile(rw, loc, ta->elem, &t, t.MB, skew_a, perm_a, &la.sw, "m", err, sizeof err);
    kl_value *lds_b = lds_a ? any_tile(rw, loc, tb->elem, &t, t.NB, skew_b, perm_b, &lb.sw, "n", err, sizeof err)
                            : NULL;
    ok = lds_b != NULL;
    if (ok) {
      int64_t na = t.KB * t.MB / t.BS, nb = t.KB * t.NB / t.BS, nacc = t.MT * t.NT;
      kl_value *copy_a = alloc(rw, loc, ta->elem, 1, &na, KL_SPACE_PRIVATE);
      kl_value *copy_b = alloc(rw, loc, tb->elem, 1, &nb, KL_SPACE_PRIVATE);
      kl_value *acc = alloc(rw, loc, acc_t, 1, &nacc, KL_SPACE_PRIVATE);
      kl_named_attr fv = { "value", kl_const_attr_for(ctx, acc_t, 0) };
      kl_op *fill = kl_rewriter_create(rw, "rock.fill", loc, 1, &acc, 0, NULL, 1, &fv, 0);
      int64_t nk = t.Kp / t.KB;
      kloop K = { rw,  loc, &t, op, a,  b,       copy_a,  copy_b,           acc,  bid,
                  tid, ga,  gb, wa, wb, la.vlen, lb.vlen, o->wg_fence_late, NULL, 0 };
      if (promote > 0) { /* fp8 wgmma promotion: the temporary accumulator (passes/rock_wgmma.h) */
        K.tacc = alloc(rw, loc, acc_t, 1, &nacc, KL_SPACE_PRIVATE);
        kl_rewriter_create(rw, "rock.fill", loc, 1, &K.tacc, 0, NULL, 1, &fv, 0);
        K.np = promote / t.KB;
      }
      /* accel GEMMs with several K steps: software pipelined; mma.sync with an even number
       * of K steps and room for two tile pairs: double-buffered (see the header comment) */
      bool prefetch = kl_accel_is_accel(op) && nk > 1;
      int64_t tile_bytes = kl_perf_config_lds_bytes(&pc, (int)eb) + extra;
      const kl_target *tg = kl_perf_resolve_target(op, NULL, NULL, 0);
      /* the cp.async pipeline: S stages of both tiles (each tile 128-byte aligned in join_lds) */
      int64_t ta_bytes = kl_type_numel(kl_rock_underlying(lds_a, NULL, &(int){ 0 }, 0)->type) * eb;
      int64_t tb_bytes = kl_type_numel(kl_rock_underlying(lds_b, NULL, &(int){ 0 }, 0)->type) * eb;
      /* the stages: cp-async=-1 (auto) takes the plan's S (async_plan, decided before the copy
       * layouts); an explicit S is capped by the LDS and the K steps (choose_stages) */
      bool narrow = t.Mp / t.MB <= KL_CP_ASYNC_NARROW || t.Np / t.NB <= KL_CP_ASYNC_NARROW;
      int S = o->cp_async < 0
          ? ap.S
          : choose_stages(o->cp_async, tg, accel, nk,
                          stage_bytes_of(&t, eb, ta_bytes, tb_bytes, ap.krow, ap.xr, ap.mxa, ap.mxb), narrow, t.BS);
      pipe P = { .k = &K, .S = S };
      tpipe T = { .k = &K };
      kl_value **sla = P.la, **slb = P.lb;     /* the stages' tiles of the loop taken */
      int64_t bars_bytes = 0, lds_align = 128; /* join_lds */
      kl_op *ws_anchor = NULL; /* warp-specialized / persistent: the epilogue goes before it (ws_emit, tma_emit) */
      const char *persist_why = "the TMA loop is not taken"; /* persistent: NULL when taken */
      kl_view *da = NULL, *db = NULL;
      bool dbuf = false;
      kl_value *lds_a2 = NULL, *lds_b2 = NULL;
      stage_pick sp_a = { 0 }, sp_b = { 0 };
      if (S > 1) {
        da = lds_copy_view_ex(&t, true, &la, true, err, sizeof err);
        db = da ? lds_copy_view_ex(&t, false, &lb, true, err, sizeof err) : NULL;
        if (!db) {
          kl_view_free(da);
          ok = false;
          goto done;
        }
        P.da = da, P.db = db;
        sp_a = stage_plan(rw, loc, ta->elem, &t, true, a, da, la.vlen, &ap, lds_a, eb);
        sp_b = stage_plan(rw, loc, tb->elem, &t, false, b, db, lb.vlen, &ap, lds_b, eb);
        P.async_a = sp_a.async, P.async_b = sp_b.async;
        /* one operand on the register path: its copy stays live across the MMAs; with S > 2
         * (the extra unrolled steps) ptxas spilled 128x128 tiles (sm_90 4096^3: 48 / 8 bytes at
         * S = 3 / 4, none at S = 2), so S is capped at 2 */
        if (P.async_a != P.async_b && S > 2) S = P.S = 2;
        if (!P.async_a && !P.async_b) { /* both operands take the register path: today's loop */
          S = P.S = 1;
          if (fn) kl_rewriter_set_attr(rw, fn, "async_copy", kl_attr_str(ctx, "none"));
        } else if (o->cp_async < 0 && (!P.async_a || !P.async_b || sp_a.kind < 2 || sp_b.kind < 2)) {
          /* auto: the plan promised both operands in xor stages; where a copy's vectors do
           * not land whole in them after all, the register-staged loop */
          S = P.S = 1;
        }
        if (S == 1) { /* no pipeline after all: the register-staged loop below */
          kl_view_free(da);
          kl_view_free(db);
          da = db = NULL;
          if (sp_a.tile) erase_tile(rw, sp_a.tile);
          if (sp_b.tile) erase_tile(rw, sp_b.tile);
        }
      }
      if (S > 1) {
        /* krow / xor: the async operands' stages in the K-row or xor layouts (stage_plan) */
        if (sp_a.tile) erase_tile(rw, lds_a), lds_a = sp_a.tile;
        if (sp_b.tile) erase_tile(rw, lds_b), lds_b = sp_b.tile;
        kl_rewriter_set_insertion_before(rw, op);
        P.la[0] = lds_a, P.lb[0] = lds_b;
        for (int s = 1; s < S && ok; s++) {
          P.la[s] = stage_tile(rw, loc, ta->elem, &t, true, sp_a.kind, sp_a.perm, skew_a, err, sizeof err);
          P.lb[s] = P.la[s] ? stage_tile(rw, loc, tb->elem, &t, false, sp_b.kind, sp_b.perm, skew_b, err, sizeof err)
                            : NULL;
          ok = P.lb[s] != NULL;
        }
        if (fn && (ap.krow || ap.mxa || ap.mxb)) {
          static const char *const kn[4] = { "kgroup", "krow", "xor", "xor" };
          const char *na = kn[sp_a.kind], *nb = kn[sp_b.kind];
          char lv[32];
          if (sp_a.kind && sp_b.kind && strcmp(na, nb))
            snprintf(lv, sizeof lv, "%s:A,%s:B", na, nb);
          else
            snprintf(lv, sizeof lv, "%s:%s", sp_a.kind ? na : nb,
                     sp_a.kind && sp_b.kind ? "A,B"
                         : sp_a.kind        ? "A"
                                            : "B");
          kl_rewriter_set_attr(rw, fn, "async_lds_layout", kl_attr_str(ctx, sp_a.kind || sp_b.kind ? lv : "kgroup"));
        }
        if (ok) pipe_emit(&P, nk);
        kl_view_free(da);
        kl_view_free(db);
        if (!ok) goto done;
        extra += (S - 1) * tile_bytes;
        const char *which = P.async_a && P.async_b ? "A,B" : P.async_a ? "A" : "B";
        if (fn) {
          kl_rewriter_set_attr(rw, fn, "async_copy", kl_attr_str(ctx, which));
          kl_rewriter_set_attr(rw, fn, "pipeline_stages", kl_attr_int(ctx, S));
        }
        goto after_loop;
      }
      if (tma_a || tma_b) { /* the TMA + mbarrier loop (tma_emit) where 3 stages fit */
        /* the TMA tiles' swizzle (tma-swizzle; MN-major tiles: tma_mn_swizzle, chosen above):
         * every tile of the loop at 8 x the widest */
        int64_t sw = tma_swizzle_of(o->tma_sw, t.KB * eb);
        int64_t sw_a = !tma_a ? 0 : tm_a.mn ? tm_a.swizzle : sw, sw_b = !tma_b ? 0 : tm_b.mn ? tm_b.swizzle : sw;
        int64_t swm = sw_a > sw_b ? sw_a : sw_b, al = swm ? 8 * swm : 128;
        int64_t a_bytes = (t.KB / t.kpack) * lds_rows(t.MB, skew_a) * t.kpack * eb,
                b_bytes = (t.KB / t.kpack) * lds_rows(t.NB, skew_b) * t.kpack * eb;
        int64_t stage = swm ? (a_bytes + al - 1) / al * al + (b_bytes + al - 1) / al * al
                            : (tile_bytes + 255) / 128 * 128;
        int64_t lds_cap = tg ? tg->lds_bytes : 48 * 1024;
        int W = kl_tma_stages(o->tma, lds_cap, stage);
        /* persistent tiles: the stages leave room for the output swizzle's own LDS (C's tile,
         * its rows padded, and the buffers' alignment), which must not alias them: the next
         * tile's loads run during the epilogue (kl_persist_reserve) */
        persist_why = !o->persistent                  ? "off"
            : !fn                                     ? "no kernel func"
            : !tg || tg->arch != KL_ARCH_NVPTX        ? "not an NVIDIA target"
            : t.G * (t.Mp / t.MB) * (t.Np / t.NB) < 2 ? "one tile"
                                                      : NULL;
        if (!persist_why) {
          int64_t ceb = (kl_type_bits(tc->elem) + 7) / 8;
          int Wp = kl_tma_stages(o->tma, lds_cap - kl_persist_reserve(t.MB, t.NB, ceb), stage);
          if (Wp >= 3) W = Wp;
        }
        if (W > TMA_MAX_STAGES) W = TMA_MAX_STAGES;
        if (W >= 3) {
          if (swm) { /* the swizzled tiles replace stage 0's (no op uses them yet) */
            if (sw_a) {
              erase_tile(rw, lds_a);
              lds_a = tm_a.mn ? lds_tile_swz_mn(rw, loc, ta->elem, &t, t.MB, "m", sw_a, err, sizeof err)
                              : lds_tile_swz(rw, loc, ta->elem, &t, t.MB, "m", sw_a, err, sizeof err);
              tm_a.box[0] = sw_a / eb, tm_a.swizzle = sw_a;
              if (tm_a.mn) tm_a.box[1] = t.KB;
            }
            if (sw_b && lds_a) {
              erase_tile(rw, lds_b);
              lds_b = tm_b.mn ? lds_tile_swz_mn(rw, loc, tb->elem, &t, t.NB, "n", sw_b, err, sizeof err)
                              : lds_tile_swz(rw, loc, tb->elem, &t, t.NB, "n", sw_b, err, sizeof err);
              tm_b.box[0] = sw_b / eb, tm_b.swizzle = sw_b;
              if (tm_b.mn) tm_b.box[1] = t.KB;
            }
            if (!lds_a || !lds_b) {
              ok = false;
              goto done;
            }
            lds_align = al;
          }
          /* thread-block clusters (passes/rock_tma.h: cluster): the shape, the shared operand's
           * multicast slices (K-major: its box rows DB / C; MN-major: C panels per op) */
          const char *cl_why = o->cluster <= 1
              ? "off"
              : cluster_shape(o, &t, tg, fn, persist_why, tma_a, tma_b, &tm_a, &tm_b, &T.mc_b);
          if (!cl_why) {
            T.mc = o->cluster;
            kl_tma_map *sm = T.mc_b ? &tm_b : &tm_a;
            if (!sm->mn) sm->box[sm->kdims > 1 ? sm->kdims : 1] /= T.mc; /* D's box (tma_boxes) */
            int64_t nM = t.Mp / t.MB, nN = t.Np / t.NB, C = T.mc;
            int64_t gmc = T.mc_b && gm > 1 ? (gm + C - 1) / C : gm; /* the raster over cluster tiles */
            bid = K.bid = kl_gemm_cluster_bid(rw, loc, hw, t.G, nM, nN, gmc, C, T.mc_b, &T.valid);
            kl_rewriter_set_attr(rw, fn, "grid_size", kl_attr_int(ctx, kl_gemm_cluster_grid(t.G, nM, nN, C, T.mc_b)));
            kl_rewriter_set_attr(rw, fn, "cluster_size", kl_attr_int(ctx, C));
          }
          if (fn && o->cluster > 1) {
            char why[200];
            if (cl_why)
              snprintf(why, sizeof why, "off (%s)", cl_why);
            else
              snprintf(why, sizeof why, "%lldx%lld", (long long)(T.mc_b ? T.mc : 1), (long long)(T.mc_b ? 1 : T.mc));
            kl_rewriter_set_attr(rw, fn, "cluster", kl_attr_str(ctx, why));
          }
          T.W = W, T.nk = nk, T.ta = tma_a, T.tb = tma_b, T.ma = tm_a, T.mb = tm_b;
          T.la[0] = lds_a, T.lb[0] = lds_b;
          for (int s = 1; s < W && ok; s++) {
            T.la[s] = !sw_a ? lds_tile(rw, loc, ta->elem, &t, t.MB, skew_a, "m", err, sizeof err)
                : tm_a.mn   ? lds_tile_swz_mn(rw, loc, ta->elem, &t, t.MB, "m", sw_a, err, sizeof err)
                            : lds_tile_swz(rw, loc, ta->elem, &t, t.MB, "m", sw_a, err, sizeof err);
            T.lb[s] = !T.la[s] ? NULL
                : !sw_b        ? lds_tile(rw, loc, tb->elem, &t, t.NB, skew_b, "n", err, sizeof err)
                : tm_b.mn      ? lds_tile_swz_mn(rw, loc, tb->elem, &t, t.NB, "n", sw_b, err, sizeof err)
                               : lds_tile_swz(rw, loc, tb->elem, &t, t.NB, "n", sw_b, err, sizeof err);
            ok = T.lb[s] != NULL;
          }
          if (!ok) goto done;
          /* warp specialization (ws_emit): both operands through TMA, a producer warpgroup
           * after the tiles' block (ws=auto: KL_WS_AUTO, today off) */
          const char *ws_why = !fn              ? "no kernel func"
              : !tma_a || !tma_b                ? "not both operands through TMA"
              : t.BS % 128 || t.BS + 128 > 1024 ? "the block is not whole warpgroups within 1024 threads"
                                                : NULL;
          T.nc = o->ws && !ws_why ? t.BS : 0;
          /* clusters with both operands through TMA: empty mbarriers in place of the loop's
           * cluster barrier (tma_emit: cmb) */
          T.cmb = T.mc > 1 && tma_a && tma_b && t.BS % 128 == 0;
          int64_t nbar = T.nc || T.cmb ? 2 * W : W;
          T.bars = alloc(rw, loc, kl_type_i64(ctx), 1, &nbar, KL_SPACE_LDS);
          kl_emitter e = { rw, loc };
          T.elect = kl_emit_cmp(&e, "eq", tid, kl_emit_index(&e, 0));
          T.G = t.G, T.nM = t.Mp / t.MB, T.nN = t.Np / t.NB, T.gm = gm, T.fill = fill;
          if (!persist_why) {
            T.h0 = hw;
            T.ng = kl_op_result(kl_rewriter_create(rw, "rock.workgroup_count", loc, 0, NULL, 1, &idx, 0, NULL, 0), 0);
          }
          if (T.nc)
            ws_anchor = ws_emit(&T);
          else
            ws_anchor = tma_emit(&T);
          if (T.tile_bid) bid = T.tile_bid;
          S = P.S = W;
          sla = T.la, slb = T.lb;
          extra += (W - 1) * tile_bytes;
          bars_bytes = (8 * nbar + 15) / 16 * 16;
          if (fn && o->ws) {
            char why[160];
            snprintf(why, sizeof why, "off (%s)", ws_why ? ws_why : "?");
            kl_rewriter_set_attr(rw, fn, "ws", kl_attr_str(ctx, T.nc ? "on" : why));
          }
          if (fn && T.nc) {
            kl_rewriter_set_attr(rw, fn, "block_size", kl_attr_int(ctx, t.BS + 128));
            kl_rewriter_set_attr(rw, fn, "max_regs", kl_attr_int(ctx, kl_ws_launch_regs(t.BS)));
          }
          if (fn && !persist_why) { /* the launch takes min(tiles, SMs x resident workgroups) (driver/plan_exec.h) */
            kl_rewriter_set_attr(rw, fn, "grid_persistent", kl_attr_int(ctx, 1));
            kl_rewriter_set_attr(rw, fn, "persistent_tiles", kl_attr_int(ctx, T.G * T.nM * T.nN));
          }
          if (fn) {
            char tw[40];
            snprintf(tw, sizeof tw, "%s%s%s%s%s", tma_a ? "A" : "", tma_a && tm_a.im2col ? "(im2col)" : "",
                     tma_a && tma_b ? "," : "", tma_b ? "B" : "", tma_b && tm_b.im2col ? "(im2col)" : "");
            kl_rewriter_set_attr(rw, fn, "tma", kl_attr_str(ctx, tw));
            kl_rewriter_set_attr(rw, fn, "tma_swizzle", kl_attr_int(ctx, swm));
            kl_rewriter_set_attr(rw, fn, "wgmma_buffers", kl_attr_int(ctx, W));
          }
          goto after_loop;
        }
        persist_why = "fewer than 3 TMA stages fit";
      }
      if (fn && o->cluster > 1 && !kl_op_attr(fn, "cluster"))
        kl_rewriter_set_attr(rw, fn, "cluster", kl_attr_str(ctx, "off (the TMA loop is not taken)"));
      if (fn && o->tma && accel && !strcmp(accel, "wgmma")) {
        char why[420];
        snprintf(why, sizeof why, "none (A: %s; B: %s)", tma_a ? "fewer than 3 stages fit" : why_a,
                 tma_b ? "fewer than 3 stages fit" : why_b);
        kl_rewriter_set_attr(rw, fn, "tma", kl_attr_str(ctx, why));
      }
      if (accel && !strcmp(accel, "wgmma") && (P.S = wg_buffers(tg, nk, tile_bytes)) > 1) {
        S = P.S; /* the wgmma loop (wg_emit): P.la / P.lb hold its buffers */
        P.la[0] = lds_a, P.lb[0] = lds_b;
        for (int s = 1; s < S && ok; s++) {
          P.la[s] = lds_tile(rw, loc, ta->elem, &t, t.MB, skew_a, "m", err, sizeof err);
          P.lb[s] = P.la[s] ? lds_tile(rw, loc, tb->elem, &t, t.NB, skew_b, "n", err, sizeof err) : NULL;
          ok = P.lb[s] != NULL;
        }
        if (!ok) goto done;
        wg_emit(&K, P.la, P.lb, S, nk);
        extra += (S - 1) * tile_bytes;
        if (fn) kl_rewriter_set_attr(rw, fn, "wgmma_buffers", kl_attr_int(ctx, S));
        goto after_loop;
      }
      dbuf = prefetch && nv16 && nk % 2 == 0 && 2 * tile_bytes <= 48 * 1024 && !K.tacc;
      /* AMDGPU (MFMA / WMMA): the loops of amd_k_loop; double-buffered where amd_dbuf says
       * (a tile pair that costs occupancy stays single: gfx90a 4096^3 f32, 256x128x16, fell
       * from 4 to 2 waves per SIMD; gfx1100's 3x3 convs, 64x64x64, three workgroups per CU
       * by registers, spilled 76-80 bytes double-buffered) and on the xor tiles */
      bool amd = o->amd_loop ? nk > 1 : prefetch && tg && tg->arch == KL_ARCH_AMDGPU;
      bool adbuf = o->amd_loop ? o->amd_loop == 2
                               : amd && (amd_dbuf(op, tg, accel, &t, eb, tile_bytes) || (axor && o->amd_lds == 0));
      if (amd) {
        lds_a2 = adbuf ? any_tile(rw, loc, ta->elem, &t, t.MB, skew_a, perm_a, &la.sw, "m", err, sizeof err) : NULL;
        lds_b2 = lds_a2 ? any_tile(rw, loc, tb->elem, &t, t.NB, skew_b, perm_b, &lb.sw, "n", err, sizeof err) : NULL;
        if (adbuf && !lds_b2) {
          ok = false;
          goto done;
        }
        amd_k_loop(&K, nk, lds_a, lds_b, lds_a2, lds_b2);
        dbuf = adbuf;
        if (dbuf) extra += tile_bytes;
        goto after_loop;
      }
      lds_a2 = dbuf ? lds_tile(rw, loc, ta->elem, &t, t.MB, skew_a, "m", err, sizeof err) : NULL;
      lds_b2 = lds_a2 ? lds_tile(rw, loc, tb->elem, &t, t.NB, skew_b, "n", err, sizeof err) : NULL;
      if (dbuf && !lds_b2) {
        ok = false;
        goto done;
      }
      if (prefetch) kl_read(&K, kl_tile_index(rw, loc, 0));
      if (dbuf) {
        kl_write(&K, lds_a, lds_b);
        kl_barrier(&K);
        kl_read(&K, kl_tile_index(rw, loc, 1));
      }
      kl_value *bnd[3] = { kl_tile_index(rw, loc, 0), kl_tile_index(rw, loc, nk),
                           kl_tile_index(rw, loc, dbuf ? 2 : 1) };
      kl_op *loop = kl_rewriter_create(rw, "scf.for", loc, 3, bnd, 0, NULL, 0, NULL, 1);
      kl_block *body = kl_block_create(ctx);
      kl_value *kl = kl_block_add_arg(ctx, body, idx);
      kl_region_push_block(&loop->regions[0], body);
      kl_rewriter_set_insertion_end(rw, body);
      if (dbuf) { /* steps kl (tile in lds_a/b) and kl + 1 (lds_a2/b2); the copies hold step kl + 1 */
        kl_gemm(&K, lds_a, lds_b);
        kl_write(&K, lds_a2, lds_b2);
        kl_barrier(&K);
        kl_read(&K, kl_next(&K, kl, 2, nk));
        kl_gemm(&K, lds_a2, lds_b2);
        kl_write(&K, lds_a, lds_b);
        kl_barrier(&K);
        kl_read(&K, kl_next(&K, kl, 3, nk));
      } else {
        if (!prefetch) kl_read(&K, kl);
        kl_write(&K, lds_a, lds_b);
        kl_barrier(&K);
        if (prefetch) kl_read(&K, kl_next(&K, kl, 1, nk)); /* the last step reloads step 0: in bounds, unused */
        kl_gemm(&K, lds_a, lds_b);
        promote_after(&K, kl, nk); /* fp8 promotion (its blockwise GEMMs waited for their MMAs) */
        kl_barrier(&K);
      }
      kl_rewriter_create(rw, "scf.yield", loc, 0, NULL, 0, NULL, 0, NULL, 0);
      if (K.tacc) {
        kl_rewriter_set_insertion_after(rw, loop);
        wg_promote(&K);
      }
      if (dbuf) extra += tile_bytes;
    after_loop:
      if (fn && o->persistent) {
        char why[160];
        snprintf(why, sizeof why, "off (%s)", persist_why ? persist_why : "?");
        kl_rewriter_set_attr(rw, fn, "persistent", kl_attr_str(ctx, persist_why ? why : "on"));
      }
      kl_rewriter_set_insertion_before(rw, ws_anchor ? ws_anchor : op);
      kl_value *ex2[2] = { bid, tid };
      threadwise(rw, loc, "rock.threadwise_write_all", acc, c, 2, ex2, cv, kl_tile_vector_len(cv, c, 2), store,
                 kl_op_attr(op, "store_scale"));
      int64_t tiles_bytes = kl_perf_config_lds_bytes(&pc, (kl_type_bits(ta->elem) + 7) / 8) + extra;
      if (tg && tg->arch != KL_ARCH_HOST) { /* GPU: one LDS buffer (see join_lds) */
        kl_value *all[2 * TMA_MAX_STAGES] = { lds_a, lds_b, lds_a2, lds_b2 };
        int nall = dbuf ? 4 : 2;
        if (S > 1)
          for (int s = 0; s < S; s++) all[2 * s] = sla[s], all[2 * s + 1] = slb[s], nall = 2 * S;
        int64_t budget = tg->arch == KL_ARCH_NVPTX && tg->lds_bytes > 48 * 1024 && S == 1 ? 48 * 1024 : tg->lds_bytes;
        tiles_bytes = join_lds(rw, loc, all, nall, budget, lds_align, err, sizeof err);
        if (tiles_bytes < 0) {
          ok = false;
          goto done;
        }
        tiles_bytes += bars_bytes; /* the TMA loop's mbarriers: an LDS buffer of their own */
      }
      kl_rewriter_erase_op(rw, op);
      if (fn) {
        int64_t lds = 0;
        kl_op_attr_i64(fn, "lds_bytes", &lds);
        kl_rewriter_set_attr(rw, fn, "lds_bytes", kl_attr_int(ctx, lds + tiles_bytes));
      }
    }
  }
done:
  if (!ok) kl_rewriter_fail(rw, loc, "rock-gridwise-to-blockwise: %s", err);
  kl_view_free(ga);
  kl_view_free(gb);
  kl_view_free(wa);
  kl_view_free(wb);
  kl_view_free(cv);
  return ok;
}

/* A "0 | 1 | auto" option (ws, persistent): 0 or 1, auto as auto_value; -1 with an error
 * on the module for anything else. */
static int opt_01auto(kl_op *module, const kl_pass_options *po, const char *name, int auto_value) {
  const char *v = kl_pass_opt_string(po, name);
  if (v && !strcmp(v, "0")) return 0;
  if (v && !strcmp(v, "1")) return 1;
  if (v && !strcmp(v, "auto")) return auto_value;
  kl_emit_error(module->ctx, module->loc, "rock-gridwise-to-blockwise: %s must be 0, 1 or auto, got %s", name,
                v ? v : "(none)");
  return -1;
}

static kl_status run(kl_op *module, const kl_pass_options *po, void *user) {
  const char *lay = kl_pass_opt_string(po, "cp-async-layout");
  int li = !lay                ? -1
      : !strcmp(lay, "kgroup") ? 0
      : !strcmp(lay, "krow")   ? 1
      : !strcmp(lay, "xor")    ? 2
      : !strcmp(lay, "auto")   ? 3
                               : -1;
  const char *wf = kl_pass_opt_string(po, "wgmma-fence");
  const char *al = kl_pass_opt_string(po, "amd-lds-layout");
  opts o = { .cp_async = kl_pass_opt_int(po, "cp-async"),
             .layout = li,
             .amd_loop = kl_pass_opt_int(po, "amd-k-loop"),
             .amd_lds = !al            ? -1
                 : !strcmp(al, "auto") ? 0
                 : !strcmp(al, "skew") ? 1
                 : !strcmp(al, "xor")  ? 2
                                       : -1,
             .raster_m = kl_pass_opt_int(po, "raster-group-m"),
             .wg_fence_late = wf && !strcmp(wf, "late"),
             .tma = kl_pass_opt_int(po, "tma") };
  const char *tsw = kl_pass_opt_string(po, "tma-swizzle");
  o.tma_sw = !tsw            ? -1
      : !strcmp(tsw, "128")  ? 128
      : !strcmp(tsw, "64")   ? 64
      : !strcmp(tsw, "32")   ? 32
      : !strcmp(tsw, "none") ? 0
                             : -1;
  if (o.tma_sw < 0) {
    kl_emit_error(module->ctx, module->loc,
                  "rock-gridwise-to-blockwise: tma-swizzle must be 128, 64, 32 or none, got %s", tsw ? tsw : "(none)");
    return KL_ERR;
  }
  if (!wf || (strcmp(wf, "early") && strcmp(wf, "late"))) {
    kl_emit_error(module->ctx, module->loc, "rock-gridwise-to-blockwise: wgmma-fence must be early or late, got %s",
                  wf ? wf : "(none)");
    return KL_ERR;
  }
  if (o.raster_m < -1) {
    kl_emit_error(module->ctx, module->loc,
                  "rock-gridwise-to-blockwise: raster-group-m must be -1 (auto), 0 or 1 (row order) or the m-tiles "
                  "per group (>= 2), got %lld",
                  (long long)o.raster_m);
    return KL_ERR;
  }
  if (li < 0) {
    kl_emit_error(module->ctx, module->loc,
                  "rock-gridwise-to-blockwise: cp-async-layout must be auto, xor, krow or kgroup, got %s",
                  lay ? lay : "(none)");
    return KL_ERR;
  }
  if (o.amd_lds < 0) {
    kl_emit_error(module->ctx, module->loc,
                  "rock-gridwise-to-blockwise: amd-lds-layout must be auto, skew or xor, got %s", al ? al : "(none)");
    return KL_ERR;
  }
  if (o.amd_loop < 0 || o.amd_loop > 2) {
    kl_emit_error(module->ctx, module->loc, "rock-gridwise-to-blockwise: amd-k-loop must be 0, 1 or 2, got %lld",
                  (long long)o.amd_loop);
    return KL_ERR;
  }
  o.ws = opt_01auto(module, po, "ws", KL_WS_AUTO);
  o.persistent = opt_01auto(module, po, "persistent", KL_PERSIST_AUTO);
  o.im2col = opt_01auto(module, po, "tma-im2col", KL_TMA_IM2COL_AUTO);
  if (o.ws < 0 || o.persistent < 0 || o.im2col < 0) return KL_ERR;
  const char *cl = kl_pass_opt_string(po, "cluster");
  o.cluster = -1;
  if (cl && !strcmp(cl, "auto"))
    o.cluster = KL_CLUSTER_AUTO;
  else if (cl) {
    static const char *const shapes[] = { "1", "2", "4", "2x1", "4x1", "1x2", "1x4" };
    static const int cs[] = { 1, 2, 4, 2, 4, 2, 4 }, cd[] = { 0, 0, 0, 1, 1, 2, 2 };
    for (int i = 0; i < 7; i++)
      if (!strcmp(cl, shapes[i])) o.cluster = cs[i], o.cluster_dir = cd[i];
  }
  if (o.cluster < 1) {
    kl_emit_error(module->ctx, module->loc,
                  "rock-gridwise-to-blockwise: cluster must be 1 (none), 2, 4, 2x1, 4x1, 1x2, 1x4 or auto, got %s",
                  cl ? cl : "(none)");
    return KL_ERR;
  }
  if (o.tma < 0 || o.tma == 2 || o.tma > TMA_MAX_STAGES) {
    kl_emit_error(module->ctx, module->loc,
                  "rock-gridwise-to-blockwise: tma must be 0 (off), 1 (on, stages by the LDS) or 3..%d (stages), got "
                  "%lld",
                  TMA_MAX_STAGES, (long long)o.tma);
    return KL_ERR;
  }
  if (o.cp_async < -1 || o.cp_async > KL_MAX_STAGES) {
    kl_emit_error(module->ctx, module->loc,
                  "rock-gridwise-to-blockwise: cp-async must be -1 (auto), 0 or 1 (off) or 2..%d (stages), got %lld",
                  KL_MAX_STAGES, (long long)o.cp_async);
    return KL_ERR;
  }
  kl_pattern p = { "rock.gridwise_gemm", 1, "rock-gridwise-to-blockwise", lower_gridwise, &o };
  const kl_pattern *ps[] = { &p };
  return kl_apply_patterns_walk(module, ps, 1);
}

static const kl_pass_option options[] = {
  { "cp-async", KL_OPT_INT, KL_CP_ASYNC_DEFAULT_STR,
    "multi-stage pipeline of asynchronous global -> LDS copies (NVIDIA cp.async; plain copies elsewhere): "
    "-1 auto (mma.sync GEMMs on NVIDIA with both operands async: 3 stages, 4 where M or N spans at most 4 "
    "block tiles, fewer where they do not fit the LDS, off below 3), 0 or 1 off, 2..4 stages "
    "for every GEMM (capped by the LDS budget and the K steps); default: passes/perf_config.h" },
  { "cp-async-layout", KL_OPT_STRING, KL_CP_ASYNC_LAYOUT_DEFAULT,
    "LDS layout of the cp.async operands' stages (mma.sync on NVIDIA): xor = panels of [rows, 64 bytes of K] "
    "with the 16-byte chunks of a row XOR-swizzled by the row (krow where K / 8 is not a power of two; an "
    "M / N-contiguous operand: rows of K holding 64-byte panels of M / N, read with ldmatrix.trans); "
    "krow = [rows, K + 16 bytes]; kgroup = the register path's [K/8, rows + skew, 8]; auto = xor where "
    "the K tile is 64 bytes or less, else kgroup (see docs/ARCHITECTURE.md); default: passes/perf_config.h" },
  { "raster-group-m", KL_OPT_INT, KL_RASTER_GROUP_M_DEFAULT_STR,
    "the order of the workgroups over the output tiles: -1 auto (the order whose wave of resident workgroups "
    "touches the fewest operand bytes where row order's overflows half the L2; NVIDIA only, else row order); 0 "
    "or 1 row order (m-tile outer); G >= 2 groups of G consecutive m-tiles walked column by column (the last "
    "group partial), for L2 reuse; the choice is the kernel's `raster_group_m`; passes/gemm_raster.h" },
  { "wgmma-fence", KL_OPT_STRING, "early",
    "wgmma K loop (passes/rock_wgmma.h): where each step's fence.proxy.async goes: early = after the LDS "
    "stores, before the next global loads; late = after the global loads and the wait (the earlier loop; "
    "its fence waited for the loads)" },
  { "amd-lds-layout", KL_OPT_STRING, "auto",
    "LDS tiles of the AMDGPU K loop: skew = [K/8, rows + skew, 8] (kpack 8 for 2-byte types); xor = "
    "[rows, K] with the 16-byte chunks of a row XOR-swizzled by the row (no padding; any kpack > 1 tile "
    "outside mma.sync / wgmma, host included); auto = xor for MFMA / WMMA tiles whose skewed pair fits "
    "the LDS once but not twice while the xor pair fits twice (then double-buffered: one barrier per K "
    "step), else skew; kpack-1 tiles (f32 MFMA, the FMA path): auto on AMDGPU and xor on any target "
    "take the xor1 swizzle (each K row's granules XOR'd inside its 128 bytes), skew the plain tile "
    "(see docs/ARCHITECTURE.md)" },
  { "amd-k-loop", KL_OPT_INT, "0",
    "0: the K loop by target; 1 / 2: the AMDGPU K loop (single / double-buffered LDS) for every GEMM with "
    "several K steps, on any target (tests run it on the host)" },
  { "tma", KL_OPT_INT, KL_TMA_DEFAULT_STR,
    "wgmma GEMMs (sm_90a): TMA loads (cp.async.bulk.tensor) completing on mbarriers for the operands that are a "
    "plain K-major box of a kernel argument, the others through registers: 0 off, 1 on (as many LDS stages as "
    "fit, at most 4), 3..6 stages; the choice is the kernel's `tma` attribute (passes/rock_tma.h)" },
  { "ws", KL_OPT_STRING, KL_WS_DEFAULT_STR,
    "warp specialization of the TMA K loop (sm_90a wgmma, both operands through TMA): 1 = one producer "
    "warpgroup after the tiles' block issues the TMA boxes (setmaxnreg.dec), the consumer warpgroups wait on "
    "per-stage full / empty mbarriers and never barrier the block in the loop; 0 = the loop of `tma`; auto = "
    "the measured choice, today 0 (no gain on an H100; passes/rock_tma.h); the choice is the kernel's `ws` attribute" },
  { "persistent", KL_OPT_STRING, KL_PERSIST_DEFAULT_STR,
    "persistent tiles for the TMA K loop (sm_90a wgmma; with ws=1 too): 1 = the launch takes min(tiles, SMs x "
    "resident workgroups) workgroups and each loops over the tiles (t += grid, the raster order), issuing the next "
    "tile's first loads before this tile's epilogue (the stages leave room for the output swizzle's own LDS); 0 = one "
    "tile per workgroup; auto = the measured choice, today 0 (passes/rock_tma.h); the choice is the kernel's "
    "`persistent` attribute" },
  { "cluster", KL_OPT_STRING, KL_CLUSTER_DEFAULT_STR,
    "thread-block clusters for the TMA K loop (sm_90a wgmma, with or without ws=1, not with persistent=1): C = 2 or 4 "
    "consecutive workgroups share one operand tile, each loading 1/C of it and multicasting it to the cluster "
    "(cp.async.bulk.tensor .multicast::cluster), stage reuse through per-stage empty mbarriers with remote arrives "
    "(the loop with a register operand: a cluster barrier per K step); CxR shapes: 2x1 / 4x1 = C "
    "m-tiles share B's tile, 1x2 / 1x4 = C n-tiles share A's; 2 / 4 = the shape whose grid needs no padding, else "
    "the one sharing the larger tile; 1 = none; auto = the measured choice, today 1 (passes/rock_tma.h); the choice "
    "is the kernel's `cluster` attribute (the shape or off (why))" },
  { "tma-im2col", KL_OPT_STRING, KL_TMA_IM2COL_DEFAULT_STR,
    "TMA im2col mode for the activation operand of a 2-D NHWC implicit-GEMM conv (sm_90a wgmma, with tma): 1 = an "
    "operand that is not a tiled box but, point for point, an R x S window (stride, padding, dilation) of a "
    "channels-last argument loads through cp.async.bulk.tensor.4d ... .im2col (one box of the K panel's channels "
    "for the tile's pixels per panel and step; the kernel's `tma` attribute names it A(im2col) / B(im2col)); 0 = "
    "the register path; auto = the measured choice, today 0 (passes/rock_tma_im2col.h)" },
  { "tma-swizzle", KL_OPT_STRING, "128",
    "the LDS layout of the TMA tiles (passes/rock_tma.h): 128 = the widest swizzle of 128, 64, 32 bytes that divides "
    "the K tile's bytes (CU_TENSOR_MAP_SWIZZLE_128B: one box {64, rows} per 64 f16 of K; 64 / 32 cap it there); "
    "none = the unswizzled core-matrix boxes {8, rows}; the choice is the kernel's `tma_swizzle` attribute" },
};

void kl__register_rock_gridwise_to_blockwise(kl_ctx *ctx) {
  kl_pass_info info = { "rock-gridwise-to-blockwise",
                        "rock.gridwise_gemm -> K loop of global->LDS copies (threadwise_read_into / write_all), "
                        "barriers and rock.blockwise_gemm into a register accumulator; one global write of C",
                        options,
                        (int)(sizeof options / sizeof options[0]),
                        run,
                        NULL };
  kl_register_pass(ctx, &info);
}

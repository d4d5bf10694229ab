#!/usr/bin/env python3
"""bench/gpu_report.py — merges the rows of bench/gpu_kiln.lua and bench/gpu_peers.py (one
TSV) into the suite's table: per case kiln's number, each peer's, and kiln's speed relative
to the peer (kiln/peer for rates, peer/kiln for milliseconds: above 1 means kiln is faster);
the benchmark's targets; the input-fusion summary (cases gemm_cvt / gemm_scale / conv_cvt: kiln,
kiln.fuse — input fusion forced —, kiln.nofuse — input fusion off — and torch eager side by side, with kiln's speed ÷ each); and the
fraction of the floor each kernel reaches (floor = the larger of FLOPs / tensor-core peak and
bytes / the copy bandwidth measured in the same run).

    python3 bench/gpu_report.py RESULTS.tsv [--md TABLE.md] [--plots DIR] [--machine FILE]

--plots DIR draws one plot per question, each titled with the run's date, commit and device
(from --machine, bench/run_gpu.sh's machine.txt): kernel_time_vs_peers.png (peer's time ÷
kiln's per case, p10–p90 whiskers, a legend entry per peer), fraction_of_peak.png (TFLOP/s
against the best any implementation reached in the run for that dtype, GB/s against the
measured copy) and compile_latency.png (ms on a log axis, kiln and the peers' first calls).
"""
import argparse
import csv
import math
import os
import sys

PEAK_TC = {"f16": 989.4e12, "bf16": 989.4e12, "f32": 66.9e12,                # H100/H200 SXM datasheet, dense (leads)
           "f8e4m3fn": 1978.9e12, "f8e5m2": 1978.9e12}
DEFAULT_BW = 4.8e12                                                # H200 datasheet; replaced by the measured copy
FUSION_KINDS = ("gemm_cvt", "gemm_scale", "conv_cvt")              # input fusion: rows kiln, kiln.fuse, kiln.nofuse, peers
FLOP_KINDS = ("gemm", "qgemm", "conv") + FUSION_KINDS                      # the floor counts their FLOPs


def num(s):
    try:
        v = float(s)
        return v if math.isfinite(v) else None
    except (TypeError, ValueError):
        return None


def load(path):
    with open(path, newline="") as f:
        rows = list(csv.DictReader(f, delimiter="\t"))
    for r in rows:
        for k in ("ms", "ms_p10", "ms_p90", "flop", "bytes", "value"):
            r[k] = num(r.get(k))
    return rows


def group(rows):
    order, by = [], {}
    for r in rows:
        c = r["case"]
        if c not in by:
            order.append(c)
            by[c] = []
        by[c].append(r)
    for c in order:
        by[c].sort(key=lambda r: 0 if r["impl"] == "kiln" else 1)
    return order, by


def speed_ratio(k, p):
    """kiln's speed relative to the peer (> 1: kiln faster), None if either is missing."""
    if not k or k["value"] is None or p["value"] is None or k["value"] <= 0 or p["value"] <= 0:
        return None
    if k["unit"] == "ms":
        return p["value"] / k["value"]
    return k["value"] / p["value"]


def copy_bw(rows):
    bws = [r["value"] * 1e9 for r in rows if r["impl"] == "torch.copy" and r["value"]]
    return max(bws) if bws else None


def floor_ms(r, bw):
    if r["bytes"] is None or bw is None:
        return None
    t_mem = r["bytes"] / bw
    t_flop = 0.0
    if r["kind"] in FLOP_KINDS and r["flop"]:
        t_flop = r["flop"] / PEAK_TC.get(r["dtype"], PEAK_TC["f32"])
    return max(t_mem, t_flop) * 1e3


def short(s, n):
    s = s or ""
    return s if len(s) <= n else s[: n - 1] + "…"


def fmt_val(r):
    if r["value"] is None:
        return "-"
    return "%.4g %s" % (r["value"], r["unit"])


def fmt_ms(r):
    if r["ms"] is None:
        return "-"
    if r["ms_p10"] is not None and r["ms_p90"] is not None and r["unit"] != "ms":
        return "%.4g (%.4g–%.4g)" % (r["ms"], r["ms_p10"], r["ms_p90"])
    return "%.4g" % r["ms"]


def targets(by, bw):
    out = []

    def get(case, impl):
        for r in by.get(case, []):
            if r["impl"] == impl:
                return r
        return None

    k, p = get("gemm_f16_4096", "kiln"), get("gemm_f16_4096", "torch.matmul")
    if k:
        path = "mma.sync" if "path=mma.sync" in (k["note"] or "") else "wgmma" if "path=wgmma" in (k["note"] or "") else "fma"
        r = speed_ratio(k, p) if p else None
        out.append(("GEMM >= 0.5x cuBLAS at 4096^3 fp16 with mma.sync",
                    "%s (kiln path: %s)" % ("%.3fx" % r if r else "n/a", path),
                    bool(r and r >= 0.5 and path != "fma")))
    k, p = get("conv_f16_n512", "kiln"), get("conv_f16_n512", "torch.eager")
    if k:
        r = speed_ratio(k, p) if p else None
        out.append(("fused conv+add+relu faster than torch eager at N=512",
                    "%s (kiln %s ms, eager %s ms)" % ("%.3fx" % r if r else "n/a", "%.4g" % k["ms"] if k["ms"] else "-",
                                                   "%.4g" % p["ms"] if p and p["ms"] else "-"),
                    bool(r and r > 1.0)))
    k, p = get("ew_add_f32_1gib", "kiln"), get("ew_add_f32_1gib", "torch.copy")
    if k:
        r = speed_ratio(k, p) if p else None
        out.append(("element-wise >= 0.85x copy bandwidth", "%s of torch's copy GB/s" % ("%.3f" % r if r else "n/a"),
                    bool(r and r >= 0.85)))
    for t in ("sm_90", "host"):
        k = get("compile_%s_cold" % t, "kiln")
        if k:
            loaded = "" if "not loaded" not in (k["note"] or "") else " (compile only: no device of this arch, not loaded)"
            out.append(("compile <= 100 ms per kernel (%s, cold)" % t,
                        "%s ms%s" % ("%.1f" % k["value"] if k["value"] else "n/a", loaded),
                        bool(k["value"] is not None and k["value"] <= 100)))
    return out


def fusion_summary(order, by):
    """One line per input-fusion case: (case, kiln ms, kiln.fuse ms, kiln.nofuse ms, torch eager ms, torch
    eager+graph ms, kiln speed ÷ torch eager, kiln speed ÷ kiln.nofuse, kiln's kernels) as strings."""
    out = []
    for c in order:
        rs = by[c]
        if not any(r["kind"] in FUSION_KINDS for r in rs):
            continue
        get = {r["impl"]: r for r in rs}
        k, fu, nf, te, tg = (get.get(n) for n in ("kiln", "kiln.fuse", "kiln.nofuse", "torch.eager", "torch.eager+graph"))

        def ms(r):
            return "%.4g" % r["ms"] if r and r["ms"] is not None else "-"

        def ratio(p):
            v = speed_ratio(k, p) if k and p else None
            return "%.3fx" % v if v else "-"
        note = (k["note"] or "") if k else ""
        kernels = note.split(" kernel(s)")[0].split()[-1] if " kernel(s)" in note else "-"
        fused = "fused" if "fused=yes" in note else "NOT fused" if "fused=NO" in note else "-"
        out.append((c, ms(k), ms(fu), ms(nf), ms(te), ms(tg), ratio(te), ratio(nf), "%s (%s)" % (kernels, fused)))
    return out


FUSION_HDR = ("case", "kiln ms", "kiln.fuse ms", "kiln.nofuse ms", "torch.eager ms", "torch.eager+graph ms",
              "kiln ÷ torch.eager", "kiln ÷ kiln.nofuse", "kiln kernels")


def table(order, by, bw):
    lines = []
    hdr = "%-26s %-18s %-20s %-24s %-10s %-10s %s" % ("case", "impl", "value", "median ms (p10–p90)", "kiln ÷", "of floor",
                                                      "check")
    lines.append(hdr)
    lines.append("-" * len(hdr))
    md = ["| case | impl | value | median ms (p10–p90) | kiln speed ÷ peer | of floor | check | note |",
          "|---|---|---|---|---|---|---|---|"]
    for c in order:
        rs = by[c]
        k = next((r for r in rs if r["impl"] == "kiln"), None)
        for r in rs:
            ratio = None if r is k else speed_ratio(k, r)
            fl = floor_ms(r, bw) if r["ms"] else None
            frac = "%.2f" % (fl / r["ms"]) if fl and r["ms"] else ""
            rt = "%.3fx" % ratio if ratio else ("" if r is k else "-")
            lines.append("%-26s %-18s %-20s %-24s %-10s %-10s %s" % (c if r is rs[0] else "", r["impl"], fmt_val(r),
                                                                     fmt_ms(r), rt, frac, short(r["check"], 60)))
            md.append("| %s | %s | %s | %s | %s | %s | %s | %s |" % (c if r is rs[0] else "", r["impl"], fmt_val(r), fmt_ms(r),
                                                                    rt, frac, (r["check"] or "").replace("|", "/"),
                                                                    short((r["note"] or "").replace("|", "/"), 160)))
    return lines, md


# ---- plots: one per question, each titled with date, commit and device ----
PALETTE = {"kiln": "black", "torch.matmul": "tab:blue", "triton": "tab:orange", "torch.eager": "tab:green",
           "torch.eager+graph": "tab:olive", "torch.compile": "tab:red", "torch.copy": "tab:purple",
           "torch.add": "tab:brown", "torch.sum": "tab:pink", "torch.softmax": "tab:pink",
           "kiln.nofuse": "tab:cyan", "kiln.fuse": "teal", "kiln.swz_on": "tab:gray", "kiln.swz_off": "silver"}
PEER_NAMES = {"torch.matmul": "cuBLAS (torch.matmul)", "triton": "Triton (tutorial matmul)",
              "torch.eager+graph": "torch eager in a CUDA graph", "torch.copy": "torch copy (bandwidth reference)",
              "kiln.nofuse": "kiln, input fusion off", "kiln.fuse": "kiln, input fusion forced"}


def run_info(machine_path, tsv_path):
    """(date, commit, device) of the run, from machine.txt (bench/run_gpu.sh) when given."""
    date = commit = device = None
    if not machine_path:   # run_gpu.sh writes it next to results.tsv
        machine_path = os.path.join(os.path.dirname(os.path.abspath(tsv_path)), "machine.txt")
    lines = open(machine_path).read().splitlines() if machine_path and os.path.exists(machine_path) else []
    for i, ln in enumerate(lines):
        if ln.startswith("date:") and not date:
            date = ln.split(":", 1)[1].strip().split(" ")[0]
        elif ln.startswith("commit:") and not commit:
            commit = ln.split(":", 1)[1].strip()
        elif ln.strip().startswith("name,") and i + 1 < len(lines) and not device:
            device = lines[i + 1].strip().split(",")[0]
    return date or "date unknown", commit or "unknown", device or "device unknown"


def top_rect(fig):
    """The top of the axes area for tight_layout: about 1.1 inches under the figure's top for the
    two-line title, whatever the figure's height (a fixed fraction left tall plots a gap)."""
    return max(0.5, 1.0 - 1.1 / fig.get_size_inches()[1])


def title(fig, ax, what, info, sub):
    fig.suptitle("%s\n%s · commit %s · %s" % (what, info[0], info[1], info[2]), fontsize=12, x=0.01, ha="left")
    if sub:
        import textwrap
        ax.set_title("\n".join(textwrap.wrap(sub, 170)), fontsize=8, loc="left", color="dimgray")


def colours(impls):
    """A distinct colour per implementation: PALETTE's where free, then tab20's unused ones."""
    import matplotlib
    spare = [matplotlib.colors.to_hex(c) for c in matplotlib.colormaps["tab20"].colors]
    out, used = {}, set()
    for i in impls:
        c = PALETTE.get(i)
        if c and c not in used:
            out[i] = c
            used.add(c)
    for i in impls:
        if i not in out:
            c = next((x for x in spare if x not in used and matplotlib.colors.to_hex(x) not in
                      {matplotlib.colors.to_hex(u) for u in used}), "gray")
            out[i] = c
            used.add(c)
    return out


def legend_outside(ax, title=None):
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0), title=title, title_fontsize=8, frameon=False)


def peer_label(impl):
    return PEER_NAMES.get(impl, impl)


def plot_vs_peers(order, by, info, path, plt):
    """Kernel time of each peer ÷ kiln's (kiln's speed ÷ the peer's) per case, p10–p90 whiskers."""
    cases, bars = [], []   # bars: (case index, impl, ratio, low, high)
    for c in order:
        rs = by[c]
        k = next((r for r in rs if r["impl"] == "kiln"), None)
        if not k or not k["ms"] or rs[0]["kind"] == "compile":
            continue
        mine = []
        for r in rs:
            if r is k or not r["ms"] or (r["check"] or "").startswith(("ERROR", "FAIL")):
                continue
            ratio = speed_ratio(k, r) or r["ms"] / k["ms"]   # the table's "kiln ÷": rates where the rows have them
            lo = ratio * ((r["ms_p10"] or r["ms"]) / r["ms"]) / ((k["ms_p90"] or k["ms"]) / k["ms"])
            hi = ratio * ((r["ms_p90"] or r["ms"]) / r["ms"]) / ((k["ms_p10"] or k["ms"]) / k["ms"])
            mine.append((r["impl"], ratio, min(lo, ratio), max(hi, ratio)))
        if mine:
            cases.append(c)
            for m in mine:
                bars.append((len(cases) - 1,) + m)
    if not bars:
        return False
    impls = []
    for b in bars:
        if b[1] not in impls:
            impls.append(b[1])
    col = colours(impls)
    fig, ax = plt.subplots(figsize=(13, 2.0 + 0.5 * len(cases) + 0.12 * len(bars)))
    h = 0.8 / max(1, max(sum(1 for b in bars if b[0] == i) for i in range(len(cases))))
    slot = {}
    seen = set()
    for ci, impl, ratio, lo, hi in bars:
        j = slot.get(ci, 0)
        slot[ci] = j + 1
        y = ci + (j - (sum(1 for b in bars if b[0] == ci) - 1) / 2) * h
        ax.barh(y, ratio, height=h * 0.9, color=col[impl], label=None if impl in seen else "vs " + peer_label(impl))
        seen.add(impl)
        ax.errorbar(ratio, y, xerr=[[ratio - lo], [hi - ratio]], fmt="none", ecolor="black", elinewidth=0.8, capsize=2)
        ax.text(hi * 1.04, y, "%.2fx" % ratio, va="center", fontsize=7)
    ax.set_xscale("log")
    ax.axvline(1.0, color="black", lw=1.0)
    ax.set_yticks(range(len(cases)))
    ax.set_yticklabels(cases, fontsize=8)
    ax.invert_yaxis()
    lo_x = min(b[3] for b in bars)
    hi_x = max(b[4] for b in bars)
    ax.set_xlim(min(0.5, lo_x / 1.5), max(2.0, hi_x * 1.6))
    ax.set_xlabel("kiln's speed ÷ the peer's (log scale; = peer's time ÷ kiln's for the same work): "
                  "right of the line kiln is faster")
    legend_outside(ax, "each bar: kiln")
    title(fig, ax, "Kernel time: kiln against each peer, case by case", info,
          "medians of device-event timings in the same run; whiskers: the p10–p90 spread of both sides; "
          "vs the copy: GB/s, each side counting its own bytes")
    fig.tight_layout(rect=(0, 0, 1, top_rect(fig)))
    fig.savefig(path, dpi=110, bbox_inches="tight")
    plt.close(fig)
    return True


def achieved(r):
    """(rate, unit) of a timed row: TFLOP/s for FLOP-bound kinds, GB/s otherwise."""
    if not r["ms"]:
        return None, None
    if r["kind"] in FLOP_KINDS and r["flop"]:
        return r["flop"] / (r["ms"] * 1e-3) / 1e12, "TFLOP/s"
    if r["bytes"]:
        return r["bytes"] / (r["ms"] * 1e-3) / 1e9, "GB/s"
    return None, None


def plot_peak(order, by, info, path, plt):
    """Each kernel's rate as a fraction of the device's measured peak: TFLOP/s against the best
    TFLOP/s any implementation reached in this run for that dtype, GB/s against the measured copy."""
    best = {}
    for c in order:
        for r in by[c]:
            v, u = achieved(r)
            if u == "TFLOP/s" and v and not (r["check"] or "").startswith(("ERROR", "FAIL")):
                key = r["dtype"]
                if v > best.get(key, (0, None))[0]:
                    best[key] = (v, "%s %s" % (r["impl"], c))
    for d, (v, who) in list(best.items()):   # no case near the peak measured: the datasheet's instead
        sheet = PEAK_TC.get(d, PEAK_TC["f32"]) / 1e12
        if v < 0.5 * sheet:
            best[d] = (sheet, "datasheet; the best measured, %.0f by %s, is not near it" % (v, who))
    bw = None
    for c in order:
        for r in by[c]:
            if r["impl"] == "torch.copy" and r["value"]:
                bw = max(bw or 0, r["value"])
    items = []   # (label, impl, fraction, text)
    for c in order:
        for r in by[c]:
            v, u = achieved(r)
            if not v or (r["check"] or "").startswith(("ERROR", "FAIL")):
                continue
            if u == "TFLOP/s" and r["dtype"] in best:
                items.append((c, r["impl"], v / best[r["dtype"]][0], "%.0f TFLOP/s" % v))
            elif u == "GB/s" and bw:
                items.append((c, r["impl"], v / bw, "%.0f GB/s" % v))
    if not items:
        return False
    cases = []
    for it in items:
        if it[0] not in cases:
            cases.append(it[0])
    col = colours(list(dict.fromkeys(it[1] for it in items)))
    fig, ax = plt.subplots(figsize=(13, 2.0 + 0.5 * len(cases) + 0.12 * len(items)))
    seen = set()
    for ci, c in enumerate(cases):
        mine = [it for it in items if it[0] == c]
        h = 0.8 / len(mine)
        for j, (_, impl, frac, text) in enumerate(mine):
            y = ci + (j - (len(mine) - 1) / 2) * h
            ax.barh(y, frac, height=h * 0.9, color=col[impl], label=None if impl in seen else peer_label(impl))
            seen.add(impl)
            ax.text(frac + 0.01, y, "%s  %s" % (text, impl), va="center", fontsize=6.5)
    ax.set_yticks(range(len(cases)))
    ax.set_yticklabels(cases, fontsize=8)
    ax.invert_yaxis()
    ax.axvline(1.0, color="black", lw=1.0)
    ax.set_xlim(0, max(1.35, max(it[2] for it in items) + 0.35))
    ax.set_xlabel("fraction of the peak named above (1 = the peak; GEMM/conv kinds in TFLOP/s, the others in GB/s)")
    legend_outside(ax)
    peaks = ", ".join("%s %.0f TFLOP/s (%s)" % (d, v, who) for d, (v, who) in sorted(best.items()))
    title(fig, ax, "How close each kernel comes to the device's measured peak", info,
          "peaks measured in this run: %s%s" % (peaks + "; " if peaks else "",
                                                "bandwidth %.0f GB/s (torch copy)" % bw if bw else "no copy measured"))
    fig.tight_layout(rect=(0, 0, 1, top_rect(fig)))
    fig.savefig(path, dpi=110, bbox_inches="tight")
    plt.close(fig)
    return True


def plot_compile(order, by, info, path, plt):
    """Compile latency (ms, log axis): kiln's graph -> loaded kernel, and the peers' where measured."""
    items = []
    for c in order:
        for r in by[c]:
            if r["kind"] != "compile" or r["value"] is None or (r["check"] or "").startswith(("ERROR", "FAIL")):
                continue
            lo = r["ms_p10"] if r["ms_p10"] is not None else r["value"]
            hi = r["ms_p90"] if r["ms_p90"] is not None else r["value"]
            items.append((c, r["impl"], r["value"], min(lo, r["value"]), max(hi, r["value"])))
    if not items:
        return False
    cases = []
    for it in items:
        if it[0] not in cases:
            cases.append(it[0])
    col = colours(list(dict.fromkeys(it[1] for it in items)))
    fig, ax = plt.subplots(figsize=(13, 2.2 + 0.6 * len(cases) + 0.15 * len(items)))
    seen = set()
    for ci, c in enumerate(cases):
        mine = [it for it in items if it[0] == c]
        h = 0.8 / len(mine)
        for j, (_, impl, v, lo, hi) in enumerate(mine):
            y = ci + (j - (len(mine) - 1) / 2) * h
            ax.barh(y, v, height=h * 0.9, color=col[impl], label=None if impl in seen else peer_label(impl))
            seen.add(impl)
            if hi > lo:
                ax.errorbar(v, y, xerr=[[v - lo], [hi - v]], fmt="none", ecolor="black", elinewidth=0.8, capsize=2)
            ax.text(hi * 1.1, y, ("%.0f ms" if v >= 10 else "%.2g ms") % v, va="center", fontsize=7)
    ax.set_xscale("log")
    ax.set_yticks(range(len(cases)))
    ax.set_yticklabels([c.replace("compile_", "").replace("_cold", ", cold").replace("_cached", ", cached")
                        for c in cases], fontsize=8)
    ax.invert_yaxis()
    ax.set_xlim(min(it[3] for it in items) / 2, max(it[4] for it in items) * 8)
    ax.set_xlabel("milliseconds (log scale; shorter is better)")
    legend_outside(ax)
    title(fig, ax, "Compile latency: graph to a loaded kernel", info,
          "kiln: the conv+add+relu graph, median of 5 (whiskers: fastest–slowest), cold and from the in-memory "
          "cache; peers: one first call each (Triton's matmul, torch.compile's conv)")
    fig.tight_layout(rect=(0, 0, 1, top_rect(fig)))
    fig.savefig(path, dpi=110, bbox_inches="tight")
    plt.close(fig)
    return True


PLOTS = (("kernel_time_vs_peers.png", plot_vs_peers), ("fraction_of_peak.png", plot_peak),
         ("compile_latency.png", plot_compile))


def plot_all(order, by, info, outdir):
    """Writes the plots that have data into outdir; returns their paths."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    os.makedirs(outdir, exist_ok=True)
    done = []
    for name, fn in PLOTS:
        path = os.path.join(outdir, name)
        if fn(order, by, info, path, plt):
            done.append(path)
    return done


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("tsv")
    ap.add_argument("--md")
    ap.add_argument("--plots", help="folder for the plots (kernel_time_vs_peers.png, fraction_of_peak.png, "
                                    "compile_latency.png)")
    ap.add_argument("--machine")
    args = ap.parse_args()
    rows = load(args.tsv)
    order, by = group(rows)
    bw = copy_bw(rows)     # no measured copy (a host run): no floor column
    lines, md = table(order, by, bw)
    tg = targets(by, bw)
    fs = fusion_summary(order, by)
    out = list(lines)
    if fs:
        out.append("")
        out.append("input fusion (kiln: default pipeline, the cost rule decides; kiln.fuse: fusion forced; kiln.nofuse: "
                   "input fusion off; ÷: kiln's speed ÷, > 1 kiln faster):")
        fmt = "  %-24s %10s %13s %15s %15s %21s %19s %19s  %s"
        out.append(fmt % FUSION_HDR)
        for line in fs:
            out.append(fmt % line)
    out.append("")
    out.append("targets:")
    for name, where, ok in tg:
        out.append("  [%s] %-56s %s" % ("met" if ok else "MISSED", name, where))
    if bw:
        out.append("floor: tensor-core peak %.0f TFLOP/s (datasheet lead), bandwidth %.2f TB/s (torch.copy measured in "
                   "this run)" % (PEAK_TC["f16"] / 1e12, bw / 1e12))
    errors = [r for r in rows if (r["check"] or "").startswith(("ERROR", "FAIL"))]
    if errors:
        out.append("%d row(s) with errors or failed checks:" % len(errors))
        for r in errors:
            out.append("  %s %s: %s" % (r["case"], r["impl"], short(r["check"], 200)))
    print("\n".join(out))
    if args.md:
        with open(args.md, "w") as f:
            if args.machine and os.path.exists(args.machine):
                f.write("```\n" + open(args.machine).read().strip() + "\n```\n\n")
            f.write("\n".join(md) + "\n\n")
            if fs:
                f.write("Input fusion (kiln: default pipeline, the cost rule decides; kiln.fuse: fusion forced; kiln.nofuse: "
                        "input fusion off; ratios are kiln's speed ÷ "
                        "the other's, above 1 kiln is faster):\n\n")
                f.write("| " + " | ".join(FUSION_HDR) + " |\n|" + "---|" * len(FUSION_HDR) + "\n")
                for line in fs:
                    f.write("| " + " | ".join(line) + " |\n")
                f.write("\n")
            f.write("Targets:\n\n")
            for name, where, ok in tg:
                f.write("- %s — %s: %s\n" % (name, "met" if ok else "**missed**", where))
            if bw:
                f.write("\nFloor: tensor-core peak %.0f TFLOP/s (datasheet), bandwidth %.2f TB/s (measured copy).\n" % (
                    PEAK_TC["f16"] / 1e12, bw / 1e12))
    if args.plots:
        try:
            for path in plot_all(order, by, run_info(args.machine, args.tsv), args.plots):
                print("plot: %s" % path)
        except Exception as e:   # the table matters more than the plots
            print("plots failed: %r" % (e,), file=sys.stderr)


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""bench/gpu_report.py — merges the rows of bench/gpu_kiln.lua and bench/gpu_peers.py (one
TSV) into the suite's table: per case kiln's number, each peer's, and kiln's speed relative
to the peer (kiln/peer for rates, peer/kiln for milliseconds: above 1 means kiln is faster);
the benchmark's targets; the input-fusion summary (cases gemm_cvt / gemm_scale / conv_cvt: kiln,
kiln.nofuse — input fusion off — and torch eager side by side, with kiln's speed ÷ each); and the
fraction of the floor each kernel reaches (floor = the larger of FLOPs / tensor-core peak and
bytes / the copy bandwidth measured in the same run).

    python3 bench/gpu_report.py RESULTS.tsv [--md TABLE.md] [--png PLOT.png] [--machine FILE]
"""
import argparse
import csv
import math
import os
import sys

PEAK_TC = {"f16": 989.4e12, "bf16": 989.4e12, "f32": 66.9e12}   # H100/H200 SXM datasheet, dense (leads)
DEFAULT_BW = 4.8e12                                                # H200 datasheet; replaced by the measured copy
FUSION_KINDS = ("gemm_cvt", "gemm_scale", "conv_cvt")              # input fusion: rows kiln, kiln.nofuse, peers
FLOP_KINDS = ("gemm", "conv") + FUSION_KINDS                       # the floor counts their FLOPs


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
    """One line per input-fusion case: (case, kiln ms, kiln.nofuse ms, torch eager ms, torch
    eager+graph ms, kiln speed ÷ torch eager, kiln speed ÷ kiln.nofuse, kiln's kernels) as strings."""
    out = []
    for c in order:
        rs = by[c]
        if not any(r["kind"] in FUSION_KINDS for r in rs):
            continue
        get = {r["impl"]: r for r in rs}
        k, nf, te, tg = (get.get(n) for n in ("kiln", "kiln.nofuse", "torch.eager", "torch.eager+graph"))

        def ms(r):
            return "%.4g" % r["ms"] if r and r["ms"] is not None else "-"

        def ratio(p):
            v = speed_ratio(k, p) if k and p else None
            return "%.3fx" % v if v else "-"
        note = (k["note"] or "") if k else ""
        kernels = note.split(" kernel(s)")[0].split()[-1] if " kernel(s)" in note else "-"
        fused = "fused" if "fused=yes" in note else "NOT fused" if "fused=NO" in note else "-"
        out.append((c, ms(k), ms(nf), ms(te), ms(tg), ratio(te), ratio(nf), "%s (%s)" % (kernels, fused)))
    return out


FUSION_HDR = ("case", "kiln ms", "kiln.nofuse ms", "torch.eager ms", "torch.eager+graph ms", "kiln ÷ torch.eager",
              "kiln ÷ kiln.nofuse", "kiln kernels")


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


def plot(order, by, bw, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    labels, ratios, colors = [], [], []
    palette = {"torch.matmul": "tab:blue", "triton": "tab:orange", "torch.eager": "tab:green",
               "torch.eager+graph": "tab:olive", "torch.compile": "tab:red", "torch.copy": "tab:purple",
               "torch.add": "tab:brown", "kiln.nofuse": "tab:cyan"}
    for c in order:
        k = next((r for r in by[c] if r["impl"] == "kiln"), None)
        for r in by[c]:
            if r is k:
                continue
            ratio = speed_ratio(k, r)
            if ratio:
                labels.append("%s\nvs %s" % (c.replace("gemm_", "").replace("compile_", "c:"), r["impl"]))
                ratios.append(ratio)
                colors.append(palette.get(r["impl"], "tab:gray"))
    fr_labels, fracs, fr_colors = [], [], []
    for c in order:
        for r in by[c]:
            fl = floor_ms(r, bw) if r["ms"] and r["kind"] in FLOP_KINDS + ("ew", "rowsum", "rms", "softmax") else None
            if fl:
                fr_labels.append("%s %s" % (c.replace("gemm_", ""), r["impl"]))
                fracs.append(fl / r["ms"])
                fr_colors.append("black" if r["impl"] == "kiln" else palette.get(r["impl"], "tab:gray"))
    fig, axes = plt.subplots(2, 1, figsize=(max(10, 0.42 * max(len(labels), len(fr_labels))), 11))
    ax = axes[0]
    if ratios:
        ax.bar(range(len(ratios)), ratios, color=colors)
        ax.set_yscale("log")
        ax.axhline(1.0, color="k", lw=0.8)
        ax.axhline(0.5, color="tab:blue", lw=0.6, ls="--", label="GEMM target vs cuBLAS (0.5)")
        ax.axhline(0.85, color="tab:purple", lw=0.6, ls=":", label="element-wise target vs copy (0.85)")
        ax.set_xticks(range(len(labels)))
        ax.set_xticklabels(labels, rotation=90, fontsize=7)
        ax.legend(fontsize=7)
    ax.set_ylabel("kiln speed ÷ peer (log; > 1: kiln faster)")
    ax.set_title("kiln vs peers, same run")
    ax = axes[1]
    if fracs:
        ax.bar(range(len(fracs)), fracs, color=fr_colors)
        ax.set_xticks(range(len(fr_labels)))
        ax.set_xticklabels(fr_labels, rotation=90, fontsize=7)
        ax.set_ylim(0, max(1.05, max(fracs) * 1.05))
        ax.axhline(1.0, color="k", lw=0.8)
    ax.set_ylabel("floor time ÷ measured time")
    ax.set_title("fraction of the floor: max(FLOPs / %.0f TFLOP/s, bytes / %.2f TB/s measured copy); kiln in black"
                 % (PEAK_TC["f16"] / 1e12, bw / 1e12))
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("tsv")
    ap.add_argument("--md")
    ap.add_argument("--png")
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
        out.append("input fusion (kiln: default pipeline; kiln.nofuse: input fusion off; ÷: kiln's speed ÷, > 1 kiln faster):")
        fmt = "  %-24s %10s %15s %15s %21s %19s %19s  %s"
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
                f.write("Input fusion (kiln: default pipeline; kiln.nofuse: input fusion off; ratios are kiln's speed ÷ "
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
    if args.png:
        try:
            plot(order, by, bw or DEFAULT_BW, args.png)
        except Exception as e:   # the table matters more than the plot
            print("plot failed: %r" % (e,), file=sys.stderr)


if __name__ == "__main__":
    main()

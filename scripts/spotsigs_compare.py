#!/usr/bin/env python3
"""Compares the pairs of `dupgram pairs` by word 5-grams and by SpotSigs.

    spotsigs_compare.py OUTDIR CORPUS...

OUTDIR holds the runs of scripts/spotsigs-vs-ngrams.sh: NAME.tsv (pairs),
NAME.log (summary, then /usr/bin/time's last line). Prints Markdown tables:

* the parameter grid: for each SpotSigs run, pairs at SSR >= 0.5 and 0.8,
  recall of the 5-gram reference R (pairs whose 5-gram SSCR >= 0.8: most of
  both texts shared), agreement (share of its pairs whose 5-gram SSCR >= 0.5),
  their F1, time and peak memory;
* n-grams against the chosen SpotSigs run at SSR >= 0.5 and >= 0.8: pairs
  found, found by both, missed by the other; then examples of each kind.

No gold standard exists for these corpora: R and the agreement are proxies
(what word 5-grams, which see every word, call near-duplicate).
"""
import json
import re
import subprocess
import sys
from pathlib import Path


def load(path):
    pairs = {}
    with open(path) as f:
        next(f)
        for line in f:
            a, b, sscr, ssr, *_rest, shared = line.rstrip("\n").split("\t")
            pairs[(a, b)] = (float(sscr), float(ssr), int(shared))
    return pairs


def at(pairs, t):
    return {k for k, v in pairs.items() if v[1] >= t}


def resources(log):
    last = Path(log).read_text().strip().splitlines()[-1]
    m = re.match(r"([\d.]+) s wall, (\d+) KiB peak", last)
    return (float(m.group(1)), int(m.group(2)) / 1024) if m else (float("nan"), float("nan"))


def texts(corpora, ids):
    out = {}
    for path in corpora:
        data = subprocess.run(["zstd", "-dc", path], check=True, capture_output=True).stdout
        for line in data.splitlines():
            doc = json.loads(line)
            if doc["id"] in ids:
                out[doc["id"]] = " ".join(doc["text"].split())
    return out


def main():
    out, corpora = Path(sys.argv[1]), sys.argv[2:]
    ngrams = load(out / "ngrams-ssr.tsv")
    sscr = load(out / "ngrams-sscr.tsv")
    reference = {k for k, v in sscr.items() if v[0] >= 0.8}
    agree_set = set(sscr)

    print("### Parameter grid (SpotSigs, --min-ssr 0.5)\n")
    print(f"Reference R: {len(reference)} pairs with 5-gram SSCR >= 0.8.\n")
    print("| run | pairs SSR >= 0.5 | SSR >= 0.8 | recall of R | agreement | F1 | wall | peak |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    best = None
    for tsv in sorted(out.glob("spot-*.tsv")):
        name = tsv.stem
        pairs = load(tsv)
        found = at(pairs, 0.5)
        recall = len(found & reference) / max(1, len(reference))
        agreement = len(found & agree_set) / max(1, len(found))
        f1 = 2 * recall * agreement / max(1e-12, recall + agreement)
        wall, peak = resources(out / f"{name}.log")
        print(f"| {name} | {len(found)} | {len(at(pairs, 0.8))} | {recall:.3f} | {agreement:.3f} | {f1:.3f} "
              f"| {wall:.1f} s | {peak:.0f} MiB |")
        if best is None or f1 > best[0]:
            best = (f1, name)
    wall, peak = resources(out / "ngrams-ssr.log")
    print(f"| ngrams-ssr (-n 5) | {len(at(ngrams, 0.5))} | {len(at(ngrams, 0.8))} | — | — | — "
          f"| {wall:.1f} s | {peak:.0f} MiB |")
    print(f"\nBest F1: {best[1]}\n")

    chosen = sys_argv_default(out)
    spot = load(out / f"{chosen}.tsv")
    print(f"### 5-grams against {chosen}\n")
    print("| SSR at least | 5-gram pairs | SpotSigs pairs | both | 5-gram only | SpotSigs only |")
    print("|---:|---:|---:|---:|---:|---:|")
    examples = []
    for t in (0.5, 0.8):
        n, s = at(ngrams, t), at(spot, t)
        print(f"| {t} | {len(n)} | {len(s)} | {len(n & s)} | {len(n - s)} | {len(s - n)} |")
        if t == 0.5:
            examples += [("5-gram only", k) for k in sorted(n - s)[:: max(1, len(n - s) // 4)][:4]]
            examples += [("SpotSigs only", k) for k in sorted(s - n)[:: max(1, len(s - n) // 4)][:4]]
    ids = {x for _, k in examples for x in k}
    text = texts(corpora, ids)
    print("\nExamples (SSR >= 0.5 by one only; scores: 5-gram SSR/SSCR, SpotSigs SSR):\n")
    for kind, (a, b) in examples:
        ng = ngrams.get((a, b)) or sscr.get((a, b))
        sp = spot.get((a, b))
        ng_s = f"{ng[1]:.2f}/{ng[0]:.2f}" if ng else "< 0.5 (SSCR < 0.5)"
        sp_s = f"{sp[1]:.2f}" if sp else "< 0.5"
        print(f"* {kind}: `{a}` / `{b}` — 5-gram {ng_s}, SpotSigs {sp_s}")
        for d in (a, b):
            print(f"  * `{d}`: {text.get(d, '?')[:160]}…")


def sys_argv_default(out):
    """The run the CLI's defaults give (20 antecedents, d = 1, c = 3)."""
    return "spot-a20-d1-c3"


if __name__ == "__main__":
    main()

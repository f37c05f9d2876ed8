"""Sections of docs/results.md beside `bench.report`'s tables.

- Kept sections: each comes from a command of its own (`bench.committee --results`) or is entered
  by hand from the output of the scripts it names (bench/nb.py, ...); the report keeps each as it
  stands in the results.md it rewrites (`bench.report.KEPT`, `kept_section`).
- The SRP paper's claims that Table I and figures 3-6 support, each with its verdict on a run's
  numbers (`claims_section`), and the average ranks (`ranks`) both use.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np

#: The heading of the claims section.
CLAIMS = "## The SRP paper's claims, one by one (seed 000, Table I and figures 3-6)"
#: The paper's own columns that this report also runs, in its Table I's order.
PAPER_OURS = ("NB", "HT", "SRP", "SRS", "BAG")
#: The paper's Table I average ranks (10 columns, 13 data sets; synthetic 6, real 7).
PAPER_RANKS = {"all": {"SRP": 2.43, "BAG": 3.36, "SRS": 3.71}, "synthetic": {"SRP": 3.67, "BAG": 2.67, "SRS": 4.5},
               "real": {"SRP": 1.86, "BAG": 3.86, "SRS": 3.71}}


def kept_section(path: Path, heading: str, missing: str) -> list[str]:
    """The section of the markdown file ``path`` whose heading line starts with ``heading``, as it
    stands (its lines up to the next "## " heading, no trailing blank), or ``heading`` and the line
    ``missing`` (``{path}`` in it replaced by ``path``) when the file has no such section."""
    old = path.read_text().split("\n") if path.exists() else []
    start = next((i for i, s in enumerate(old) if s.startswith(heading)), None)
    if start is None:
        return [heading, "", missing.format(path=path)]
    end = next((i for i in range(start + 1, len(old)) if old[i].startswith("## ")), len(old))
    while end > start and not old[end - 1].strip():
        end -= 1
    return old[start:end]


def ranks(table: dict, systems) -> dict:
    """Average rank (1 = best, ties share the mean rank) of each system over the streams
    (``table``: {stream: {system: accuracy}}) where every system has a result; NaN for none."""
    per = {s: [] for s in systems}
    for accs in table.values():
        if not all(s in accs for s in systems):
            continue
        vals = [accs[s] for s in systems]
        for s in systems:
            better = sum(v > accs[s] for v in vals)
            ties = sum(v == accs[s] for v in vals)
            per[s].append(better + (ties + 1) / 2)
    return {s: (float(np.mean(r)) if r else math.nan) for s, r in per.items()}


def _ranked(rk: dict) -> str:
    return ", ".join(f"{s} {v:.2f}" for s, v in sorted(rk.items(), key=lambda kv: kv[1]) if not math.isnan(v))


def _first(rk: dict, who: str) -> str:
    """Whether ``who`` has the best (lowest) average rank in ``rk``: holds, a tie, or who is first."""
    valid = {s: v for s, v in rk.items() if not math.isnan(v)}
    if who not in valid:
        return "not run"
    top = min(valid.values())
    firsts = sorted(s for s, v in valid.items() if v == top)
    if firsts == [who]:
        return "holds"
    if who in firsts:
        return f"a tie ({' and '.join(firsts)} share the first rank)"
    return f"does not hold ({' and '.join(firsts)} first)"


def _rank_claim(acc: dict, paper: dict, real: set, length: str) -> list[str]:
    """Claims 1-2: SRP's average rank best over all sets, and on the real ones (BAG best on the synthetic)."""
    cols = [c for c in PAPER_OURS if all(c in a for a in acc.values())]
    mine = {st: a for st, a in acc.items() if st in paper}
    parts = {"all": acc, "synthetic": {s: a for s, a in acc.items() if s not in real},
             "real": {s: a for s, a in acc.items() if s in real}}
    rk = {k: ranks(v, cols) for k, v in parts.items()}
    own = ranks(mine, cols)
    theirs = ranks({st: dict(zip(PAPER_OURS, paper[st])) for st in mine}, cols)
    holds = lambda r, who="SRP": _first(r, who)
    return [
        f"1. *SRP's average rank is the best* (Table I: SRP 2.43 of 10 columns over 13 sets, BAG 3.36, SRS 3.71). "
        f"Over this run's {len(acc)} streams ({length}) and the paper's columns it runs: {holds(rk['all'])}: "
        f"{_ranked(rk['all'])}. Over the paper's own streams only ({', '.join(mine)}): {holds(own)}: {_ranked(own)}; "
        f"the paper's figures for the same columns and streams rank {_ranked(theirs)}.",
        f"2. *SRP ranks first on the real sets, BAG on the synthetic ones* (Table I: real SRP 1.86, SRS 3.71, BAG "
        f"3.86; synthetic BAG 2.67, SRP 3.67). Real sets: {holds(rk['real'])}: {_ranked(rk['real'])}. Synthetic "
        f"(BAG first): {holds(rk['synthetic'], 'BAG')}: {_ranked(rk['synthetic'])}.",
    ]


def _order_claim(acc: dict, real: set) -> str:
    """Claim 3: SRP >= BAG >= SRS on each real set."""
    sets = [st for st in acc if st in real and all(c in acc[st] for c in ("SRP", "BAG", "SRS"))]
    ok = [st for st in sets if acc[st]["SRP"] >= acc[st]["BAG"] >= acc[st]["SRS"]]
    bag_over = [f"{st} ({acc[st]['BAG'] - acc[st]['SRP']:+.2f})" for st in sets if acc[st]["BAG"] > acc[st]["SRP"]]
    srs_over = [f"{st} ({acc[st]['SRS'] - acc[st]['BAG']:+.2f})" for st in sets if acc[st]["SRS"] > acc[st]["BAG"]]
    return (f"3. *SRP >= BAG >= SRS on the real sets* (the paper's Table I does not order them so on every set: "
            f"its real-set ranks put SRS 3.71 ahead of BAG 3.86). This run: the order holds on {len(ok)} of "
            f"{len(sets)} real sets ({', '.join(ok) or 'none'}); BAG above SRP on {', '.join(bag_over) or 'none'}; "
            f"SRS above BAG on {', '.join(srs_over) or 'none'} (points).")


def _curve_claim(number: int, curves: dict, k: int, what: str, claim: str, pairs, want) -> str:
    """Claims 4-5: at how many checkpoints of each figure stream the entry ``k`` of a curve pair
    (a, b) stands as the paper says (``want(a's, b's)``)."""
    parts, everywhere = [], True
    for st, c in curves.items():
        for a, b in pairs:
            if a in c and b in c:
                n = min(len(c[a]), len(c[b]))
                good = sum(want(c[a][i][k], c[b][i][k]) for i in range(n))
                everywhere &= good == n
                parts.append(f"{st}: {a} {'below' if want(0, 1) else 'above'} {b} at {good} of {n} checkpoints")
    verdict = "Holds" if parts and everywhere else "Does not hold at every checkpoint"
    return f"{number}. *{claim}* ({what}). {verdict}: {'; '.join(parts) or 'no curves in this run'}."


def claims_section(acc: dict, curves: dict, paper: dict, real, length: str, command: str) -> list[str]:
    """The claims section: ``acc`` {stream: {column: mean accuracy %}}, ``curves`` {stream: {column:
    [(samples, window accuracy, kappa, depth)]}} (section 2's), ``paper`` {stream: the paper's (NB, HT,
    SRP, SRS, BAG)}, ``real`` the real sets' names, ``length`` what the synthetic streams ran (words)."""
    real = set(real)
    L = [CLAIMS, "",
         f"Reproduce: `{command}` (this section is computed from section 1's means and section 2's curves; its "
         f"synthetic streams: {length}, the paper's 1,000,000). Each "
         "claim of the paper that its Table I or figures 3-6 support, in its words or close, then its verdict on "
         "this run. The paper ranks 10 columns (LB, OAUE, DWM, OB and ARF beside ours); the ranks here are over "
         "the columns both have (NB, HT, SRP, SRS, BAG), so they are comparable with each other, not with the "
         "paper's figures in brackets.", ""]
    L += _rank_claim(acc, paper, real, length)
    L.append(_order_claim(acc, real))
    L.append(_curve_claim(4, curves, 3, "figures 5-6, average tree depth",
                          "SRP consistently grows trees faster and deeper than SRS and BAG",
                          (("SRP", "BAG"), ("SRP", "SRS")), lambda a, b: a > b))
    L.append(_curve_claim(5, curves, 2, "figures 3-4, average pairwise kappa: lower is more diverse",
                          "SRS and SRP obtain low values of average kappa in comparison to BAG",
                          (("SRP", "BAG"), ("SRS", "BAG")), lambda a, b: a < b))
    led, agr = acc.get("LED_A", {}), acc.get("AGR_G", {})
    if all(c in led for c in ("SRP", "SRS", "BAG")) and all(c in agr for c in ("SRP", "SRS", "BAG")):
        led_ok = led["BAG"] > max(led["SRP"], led["SRS"])
        agr_ok = min(agr["SRP"], agr["SRS"]) > agr["BAG"]
        L.append(f"6. *On LED(A) BAG outperforms SRS and SRP; on AGR(G) SRS and SRP outperform BAG; so increasing "
                 f"diversity is not enough to improve accuracy.* LED_A: {'holds' if led_ok else 'does not hold'} "
                 f"(BAG {led['BAG']:.2f}, SRP {led['SRP']:.2f}, SRS {led['SRS']:.2f}); AGR_G: "
                 f"{'holds' if agr_ok else 'does not hold'} (SRP {agr['SRP']:.2f}, SRS {agr['SRS']:.2f}, BAG "
                 f"{agr['BAG']:.2f}).")
    return L

"""results.png: each row's medians over the memcpy floor, one panel per thread count."""

from __future__ import annotations

from pathlib import Path

from .implementations import IMPLS
from .measurement import Row
from .tables import ratio


def plot(rows: list[Row], threads: list[int], path: Path) -> str:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return "matplotlib not installed: no chart"
    every = [i for i in IMPLS if i != "floor"]
    palette = ["#1b7837", "#7fbf7b", "#a6dba0", "#b2182b"]  # scatterkit's rows, the baseline
    palette += ["#4d4d4d", "#bababa", "#d9f0d3"]  # the bare loop, the inputs read, sk uniform
    palette += ["#762a83", "#e08214", "#2166ac", "#999999"]  # the peers
    colors = dict(zip(every, palette))
    # Only what ran (the baseline, say, runs with --baseline only), each in its own color.
    impls = [i for i in every if any(r.median(i) is not None for r in rows)]
    fig, axes = plt.subplots(len(threads), 1, figsize=(14, 4.2 * len(threads)), squeeze=False)
    for ax, t in zip(axes[:, 0], threads):
        sel = [r for r in rows if r.threads == t]
        width = 0.8 / len(impls)
        for k, impl in enumerate(impls):
            xs, ys = [], []
            for x, row in enumerate(sel):
                v = ratio(row.median(impl), row.median("floor"))
                if v is not None:
                    xs.append(x + (k - (len(impls) - 1) / 2) * width)
                    ys.append(v)
            ax.bar(xs, ys, width, label=impl, color=colors[impl])
        ax.axhline(1.0, color="black", lw=0.8)
        ax.axhline(1.15, color="black", lw=0.6, ls="--")
        ax.set_yscale("log")
        ax.set_xticks(range(len(sel)))
        ax.set_xticklabels([r.workload.name for r in sel], rotation=30, ha="right", fontsize=8)
        ax.set_ylabel("time / memcpy floor (log)")
        ax.set_title(
            f"{t} thread(s): median time relative to np.copyto(out, data); lower is better"
        )
        ax.grid(axis="y", which="both", alpha=0.3)
    handles, labels = axes[0, 0].get_legend_handles_labels()
    fig.legend(handles, labels, ncol=len(impls), fontsize=9, loc="upper center")
    fig.tight_layout(rect=(0, 0, 1, 0.96))
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return ""

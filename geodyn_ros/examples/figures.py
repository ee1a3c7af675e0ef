"""The error figures of the loop examples: read at a glance, headline rows first.

:func:`error_figure` draws, per quantity (base or CoM position, attitude, link joints), the error
against time on the left and the RMS per row as a bar chart beside it. The headline rows (the
feedforward levels a reader compares) have distinct colours *and* line styles (Okabe-Ito colours,
readable by colour-blind readers and in grey print); the diagnostic rows are thin grey lines drawn
beneath them and grey hatched bars. One legend, below the panels, outside the data. The curves are
the largest error over windows of ``window`` seconds (the loops log at 1 kHz: 30 000 samples per
curve would be a band in which no line style shows; the window's maximum keeps every peak).

Used by :mod:`geodyn_ros.examples.actuated_loop` and :mod:`geodyn_ros.examples.underactuated_loop`
(``make figures`` regenerates the README's and the docs' images in ``doc/_static/``).
"""
from __future__ import annotations

import io
from pathlib import Path

import numpy as np

__all__ = ["HEADLINE_STYLES", "row_styles", "window_max", "error_figure", "save_small_png"]

#: (colour, line style) of the headline rows in order: the baseline (pd / rigid), ff0, ff1, ff2,
#: ideal. Okabe-Ito colours; ff2 (the result) solid, ideal (the reference) black dotted.
HEADLINE_STYLES = (("#D55E00", (0, (6, 2))), ("#E69F00", "-."), ("#0072B2", (0, (3, 1, 1, 1, 1, 1))),
                   ("#009E73", "-"), ("#000000", ":"))
_GREY = "0.6"


def row_styles(rows, headline) -> dict:
    """``{row: matplotlib line keywords}``: the rows of ``headline`` (in that order) take
    :data:`HEADLINE_STYLES`; any other row is a diagnostic row (thin grey, beneath)."""
    if len(headline) > len(HEADLINE_STYLES):
        raise ValueError(f"headline: at most {len(HEADLINE_STYLES)} rows, got {list(headline)}")
    out = {}
    for r in rows:
        if r in headline:
            i = list(headline).index(r)
            color, ls = HEADLINE_STYLES[i]
            out[r] = dict(color=color, ls=ls, lw=1.6 if ls == "-" else 1.3, zorder=3 + i)
        else:
            out[r] = dict(color=_GREY, ls="-", lw=0.7, alpha=0.8, zorder=1)
    return out


def window_max(t, y, window: float):
    """``(t_c, y_max)``: the largest ``y`` over consecutive windows of ``window`` seconds of the
    samples ``t`` (T,), ``y`` (T,), stamped at each window's centre. ``window <= 0``: unchanged."""
    t, y = np.asarray(t, float), np.asarray(y, float)
    if t.shape != y.shape or t.ndim != 1:
        raise ValueError(f"t, y: expected two (T,) arrays, got {t.shape} and {y.shape}")
    if window <= 0 or len(t) < 2:
        return t, y
    k = np.floor((t - t[0]) / window + 1e-9).astype(int)
    starts = np.r_[0, np.flatnonzero(np.diff(k)) + 1]
    return (t[starts] + 0.5 * window).clip(t[0], t[-1]), np.maximum.reduceat(y, starts)


def error_figure(path, title: str, t: dict, panels, headline, *, window: float = 0.1, dpi: int = 100) -> Path:
    """Write the figure to ``path`` (PNG) and return it.

    t : ``{row: (T,) times [s]}`` (the rows, in table order); panels : a list of ``(ylabel,
    {row: (T,) error >= 0}, bar_label, {row: RMS})`` (one row of the figure each: the errors
    against time, log scale, and the RMS per row); headline : the headline rows (styles from
    :data:`HEADLINE_STYLES`, in order); window : seconds per plotted maximum (:func:`window_max`).
    """
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.lines import Line2D

    rows = list(t)
    styles = row_styles(rows, headline)
    diag = [r for r in rows if r not in headline]
    n = len(panels)
    fig, axes = plt.subplots(n, 2, figsize=(11, 1.1 + 2.35 * n), width_ratios=(3.2, 1), layout="constrained",
                             squeeze=False)
    for j, (ylabel, series, bar_label, rms) in enumerate(panels):
        ax, bx = axes[j]
        for r in rows:
            tc, yc = window_max(t[r], series[r], window)
            ax.plot(tc, np.maximum(yc, 1e-12), **styles[r])
        ax.set_yscale("log")
        ax.set_ylabel(ylabel, fontsize=9)
        ax.grid(True, which="major", alpha=0.35)
        ax.grid(True, which="minor", alpha=0.12)
        ax.set_xlim(min(v[0] for v in t.values()), max(v[-1] for v in t.values()))
        if j < n - 1:
            ax.tick_params(labelbottom=False)
        else:
            ax.set_xlabel(f"t [s] (each point: the largest error over {window * 1e3:g} ms)", fontsize=9)
        if j:
            ax.sharex(axes[0, 0])
        # the bar chart: one bar per row, table order from the top
        y = np.arange(len(rows))[::-1]
        vals = np.array([max(float(rms[r]), 1e-12) for r in rows])
        for yi, r, v in zip(y, rows, vals):
            st = styles[r]
            bx.barh(yi, v, color=st["color"] if r in headline else "0.85", edgecolor=st["color"],
                    hatch=None if r in headline else "///", lw=0.6, height=0.7)
            bx.text(v * 1.15, yi, f"{v:.2g}", va="center", fontsize=7)
        bx.set_xscale("log")
        bx.set_xlim(vals.min() / 3, vals.max() * 20)
        bx.set_yticks(y, rows, fontsize=7)
        for lab, r in zip(bx.get_yticklabels(), rows):
            lab.set_fontweight("bold" if r in headline else "normal")
        bx.tick_params(axis="x", labelsize=7)
        bx.set_title(bar_label, fontsize=9)
        bx.grid(True, axis="x", alpha=0.3)
    handles = [Line2D([], [], **{k: v for k, v in styles[r].items() if k != "zorder"}) for r in headline if r in t]
    labels = [r for r in headline if r in t]
    if diag:
        handles.append(Line2D([], [], color=_GREY, lw=1.0))
        labels.append("diagnostic rows (grey; named in the bar charts)")
    fig.suptitle(title, fontsize=11)
    fig.legend(handles, labels, loc="outside lower center", ncols=len(labels), fontsize=9, frameon=False,
               handlelength=3.5)
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=dpi)
    plt.close(fig)
    buf.seek(0)
    save_small_png(buf, path)
    return path


def save_small_png(src, path) -> None:
    """Save the PNG ``src`` (a path or a file object) to ``path`` with a palette of 256 colours
    (a line plot has fewer distinct colours than that, up to anti-aliasing shades): a third of the
    size of matplotlib's RGBA file, so the figures committed under ``doc/_static`` stay small."""
    from PIL import Image
    with Image.open(src) as im:
        im.convert("RGB").quantize(colors=256).save(path, optimize=True)

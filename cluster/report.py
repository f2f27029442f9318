"""The topic plots: a 2-D topic map, topic sizes and the Optuna history as PNGs (the run report,
flows/report_page.py, puts them on its page).

Pure in the sense that matters: it takes what staging.db holds (rows) and writes files; it opens no database.
matplotlib runs on the Agg backend (no display, no GUI toolkit), selected before pyplot is imported.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

TOP_LABELLED = 12  # topics named on the map (the largest); the rest are coloured only
NOISE_COLOUR = "#cccccc"  # outliers (topic -1) and only them
# tab20 without its two greys (#7f7f7f, #c7c7c7): with them every topic numbered 14 or 15 modulo 20 was drawn
# grey, like the outliers. Topics take these colours in turn by number.
TOPIC_COLOURS = (
    *("#1f77b4", "#aec7e8", "#ff7f0e", "#ffbb78", "#2ca02c", "#98df8a", "#d62728", "#ff9896", "#9467bd"),
    *("#c5b0d5", "#8c564b", "#c49c94", "#e377c2", "#f7b6d2", "#bcbd22", "#dbdb8d", "#17becf", "#9edae5"),
)


def _pyplot() -> Any:
    import matplotlib

    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt

    return plt


def topic_map(points: Sequence[tuple[float, float, int]], topics: Sequence[Mapping[str, Any]], path: Path) -> None:
    """Scatter of the map coordinates, noise in light grey, the largest topics labelled at their centre."""
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(10, 8), dpi=110)
    if points:
        xy = np.array([(x, y) for x, y, _ in points], dtype=float)
        topic = np.array([t for _, _, t in points])
        noise = topic < 0
        ax.scatter(xy[noise, 0], xy[noise, 1], s=3, c=NOISE_COLOUR, linewidths=0, label="noise")
        colours = [TOPIC_COLOURS[int(t) % len(TOPIC_COLOURS)] for t in topic[~noise]]
        ax.scatter(xy[~noise, 0], xy[~noise, 1], s=4, c=colours, linewidths=0)
        labels = {int(t["topic"]): str(t["label"]) for t in topics[:TOP_LABELLED]}
        for number, label in labels.items():
            members = xy[topic == number]
            if len(members):
                cx, cy = np.median(members, axis=0)
                ax.annotate(
                    label, (cx, cy), fontsize=7, ha="center", bbox={"boxstyle": "round", "fc": "white", "alpha": 0.7}
                )
    ax.set_title(f"Topic map: {len(points)} segments, {len(topics)} topics (grey: outliers)")
    ax.set_xticks([])
    ax.set_yticks([])
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


def topic_sizes(topics: Sequence[Mapping[str, Any]], path: Path, top: int = 40) -> None:
    """Horizontal bars: the `top` largest topics with their labels."""
    plt = _pyplot()
    shown = list(topics[:top])
    fig, ax = plt.subplots(figsize=(9, max(3.0, 0.28 * len(shown) + 1)), dpi=110)
    ax.barh([f"{t['topic']}: {t['label']}"[:60] for t in shown][::-1], [int(t["size"]) for t in shown][::-1])
    ax.set_xlabel("segments")
    ax.set_title(f"Topic sizes (largest {len(shown)} of {len(topics)})")
    ax.tick_params(axis="y", labelsize=7)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


def optuna_history(trials: Sequence[Mapping[str, Any]], path: Path) -> None:
    """Each trial's objective, the best so far, and the topics / noise share each trial produced."""
    plt = _pyplot()
    done = [t for t in trials if t.get("value") is not None]
    fig, (top, bottom) = plt.subplots(2, 1, figsize=(9, 7), dpi=110, sharex=True)
    if done:
        numbers = [int(t["number"]) for t in done]
        values = [float(t["value"]) for t in done]
        top.plot(numbers, values, "o", ms=4, label="trial")
        top.plot(numbers, np.maximum.accumulate(values), "-", label="best so far")
        top.legend(loc="lower right")
        bottom.plot(numbers, [t.get("topics") or 0 for t in done], "s", ms=4, color="tab:green", label="topics")
        twin = bottom.twinx()
        twin.plot(numbers, [t.get("noise_share") or 0 for t in done], "^", ms=4, color="tab:red", label="noise share")
        twin.set_ylabel("noise share", color="tab:red")
    top.set_ylabel("objective")
    top.set_title("Optuna history")
    bottom.set_ylabel("topics", color="tab:green")
    bottom.set_xlabel("trial")
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)

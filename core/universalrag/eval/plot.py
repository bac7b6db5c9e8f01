"""A bar chart of an evaluation report: one group per metric, one bar per strategy (matplotlib, ``eval`` extra)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..errors import InvalidInputError, MissingDependencyError

__all__ = ["check_plot_target", "plot_report"]


def _pyplot() -> Any:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError as e:
        raise MissingDependencyError("matplotlib", "eval", feature="--plot") from e
    return plt


def check_plot_target(path: str | Path) -> Path:
    """``path`` when a plot can be written there (a ``.png`` name in an existing folder, matplotlib installed);
    otherwise the error, before any work is done."""
    target = Path(path)
    if target.suffix.lower() != ".png":
        raise InvalidInputError(f"The plot is written as PNG; give a file name ending in .png, not {target.name!r}.")
    if not target.parent.is_dir():
        raise InvalidInputError(f"The folder of the plot {str(target)!r} does not exist; create it first.")
    _pyplot()
    return target


def plot_report(report: Mapping[str, Any], path: str | Path, *, title: str | None = None) -> Path:
    """Draw ``report`` (:meth:`EvalReport.to_dict <universalrag.eval.runner.EvalReport.to_dict>`) as grouped bars
    — the overall value of each metric, one bar per strategy — into the PNG file ``path``; returns the path."""
    target = check_plot_target(path)
    plt = _pyplot()
    strategies: Mapping[str, Any] = report["strategies"]
    metrics = list(report["metrics"])
    if not strategies or not metrics:
        raise InvalidInputError("The report has no strategy or no metric to plot.")
    width = 0.8 / len(strategies)
    fig, ax = plt.subplots(figsize=(max(6.0, 1.6 * len(metrics) + 0.3 * len(strategies)), 4.2))
    colours = plt.get_cmap("tab10" if len(strategies) <= 10 else "tab20")
    for i, (name, summary) in enumerate(strategies.items()):
        values = [summary["overall"].get(m, 0.0) for m in metrics]
        ax.bar([j + i * width for j in range(len(metrics))], values, width, label=name, color=colours(i))
    names = {"recall": f"recall@{report['k']}", "mrr": "MRR", "f1": "F1", "exact_match": "EM"}
    labels = [names.get(m, m.replace("_", " ")) for m in metrics]
    ax.set_xticks([j + 0.4 - width / 2 for j in range(len(metrics))], labels)
    ax.set_ylim(0, 1.05)
    ax.set_ylabel("mean over sources")
    ax.set_title(title or f"{report['questions']} questions, k={report['k']}", fontsize=10)
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    fig.tight_layout()
    fig.savefig(target, dpi=110)
    plt.close(fig)
    return target

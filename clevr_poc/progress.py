"""The one progress-bar helper of the library: a ``tqdm`` bar on stderr, or None (disabled, or tqdm not
installed), so that callers write ``if bar is not None: bar.update(1)``.

Bars are diagnostics only: they never change an output file or stdout. The finished bar is drawn once:
tqdm's ``update`` draws the step that reaches the total and ``close`` draws the finished bar again (with the
whole run's rate), which a terminal overwrites (``\r``) but a log file keeps, e.g. ``render: 100%|...| 80/80
[01:36<00:00,  1.21s/item]`` twice on one line of the demo's log; here the step that reaches the total is
left to ``close``.
"""

from __future__ import annotations

from typing import Any

__all__ = ["progress_bar"]


def progress_bar(total: int | None, *, enabled: bool = True, description: str | None = None, unit: str = "item",
                 smoothing: float = 0.3) -> Any:
    """A ``tqdm.auto.tqdm`` bar (width following the terminal), or None.

    Args:
        total: number of steps (None: unknown, the bar counts without a percentage).
        enabled: False gives None (e.g. ``--no-progress``).
        description: the bar's label (``desc``), e.g. ``"questions"``.
        unit: what one step is (``"item"``, ``"q"`` for questions).
        smoothing: tqdm's speed smoothing in [0, 1] (0: average over the whole run; tqdm's default 0.3).

    Returns:
        the bar (close it with ``bar.close()``), or None when ``enabled`` is False or tqdm is missing.
    """
    if not enabled:
        return None
    try:
        from tqdm.auto import tqdm
    except ImportError:  # tqdm is optional: no bar without it
        return None

    class Bar(tqdm):  # type: ignore[misc, valid-type]
        """tqdm's bar, leaving the step that reaches ``total`` to ``close`` (module doc: drawn once)."""

        def update(self, n: float | None = 1) -> bool | None:
            if self.total is not None and not self.disable and self.n + (n or 0) >= self.total:
                self.n += n or 0  # close() draws the finished bar
                return None
            return super().update(n)

    return Bar(total=total, desc=description, unit=unit, dynamic_ncols=True, smoothing=smoothing)

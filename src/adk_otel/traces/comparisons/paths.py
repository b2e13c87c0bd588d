"""Runs' paths through agents and tools, aligned: where does a candidate path leave
a baseline one?

Two paths are aligned on their longest common subsequence, so one inserted
step reads as one insertion, not as every later step being different.
"""

from __future__ import annotations

from dataclasses import dataclass

from .runs import Path


@dataclass
class Divergence:
    """Where a candidate path first leaves the closest baseline path (LCS-aligned)."""

    baseline_path: Path
    candidate_path: Path
    step: int
    """1-based position in the baseline path where they part."""
    baseline_step: str | None
    candidate_step: str | None
    after: str | None


def lcs_alignment(a: Path, b: Path) -> tuple[list[tuple[str, str | None, str | None]], Path]:
    """The steps of ``a`` and ``b`` aligned on their longest common subsequence:
    ``("=", x, x)``, ``("-", x, None)`` (only in ``a``), ``("+", None, y)``."""
    n, m = len(a), len(b)
    table = [[0] * (m + 1) for _ in range(n + 1)]
    for i in range(n - 1, -1, -1):
        for j in range(m - 1, -1, -1):
            table[i][j] = (
                table[i + 1][j + 1] + 1 if a[i] == b[j] else max(table[i + 1][j], table[i][j + 1])
            )
    ops: list[tuple[str, str | None, str | None]] = []
    common: list[str] = []
    i = j = 0
    while i < n and j < m:
        if a[i] == b[j]:
            ops.append(("=", a[i], b[j]))
            common.append(a[i])
            i += 1
            j += 1
        elif table[i + 1][j] >= table[i][j + 1]:
            ops.append(("-", a[i], None))
            i += 1
        else:
            ops.append(("+", None, b[j]))
            j += 1
    ops += [("-", step, None) for step in a[i:]] + [("+", None, step) for step in b[j:]]
    return ops, tuple(common)


def first_divergence(baseline: Path, candidate: Path) -> Divergence | None:
    """Where ``candidate`` first leaves ``baseline``, or None if they are equal."""
    ops, _ = lcs_alignment(baseline, candidate)
    position = 0
    after: str | None = None
    for index, (op, left, right) in enumerate(ops):
        if op == "=":
            position += 1
            after = left
            continue
        following = ops[index + 1] if index + 1 < len(ops) else None
        base_step = left
        cand_step = right
        if op == "-" and following is not None and following[0] == "+":
            cand_step = following[2]
        elif op == "+" and following is not None and following[0] == "-":
            base_step = following[1]
        return Divergence(baseline, candidate, position + 1, base_step, cand_step, after)
    return None

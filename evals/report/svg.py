"""The report's plots, drawn as inline SVG (the page loads nothing): accuracy against the mean
latency per model call with the Pareto front, and each run's turns per task."""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from markupsafe import Markup, escape

WIDTH, HEIGHT = 560, 300
LEFT, RIGHT, TOP, BOTTOM = 56, 16, 14, 40


@dataclass(frozen=True)
class Point:
    label: str
    x: float  # mean ms per model call
    y: float  # accuracy, 0 to 1
    kind: str = ""  # "focus", "reference" or "": how the dot is drawn


def pareto_front(points: Sequence[Point]) -> list[Point]:
    """The points no other beats on both counts (as accurate or more, and faster), fastest
    first."""
    front: list[Point] = []
    for p in sorted(points, key=lambda p: (p.x, -p.y)):
        if not front or p.y > front[-1].y:
            front.append(p)
    return front


def _ticks(low: float, high: float) -> list[float]:
    """1, 2 and 5 times the powers of ten between ``low`` and ``high`` (a log axis)."""
    ticks = []
    for power in range(math.floor(math.log10(low)), math.ceil(math.log10(high)) + 1):
        ticks += [m * 10.0**power for m in (1, 2, 5) if low <= m * 10.0**power <= high]
    return ticks


def _share_y(y: float) -> float:
    """Where a share (0 to 1) sits on a plot's y axis."""
    return round(TOP + (HEIGHT - TOP - BOTTOM) * (1 - y), 1)


def _share_frame(kind: str, title: str) -> list[str]:
    """A plot's opening, its two axes and its grid of shares, 0 to 100 %."""
    sy = _share_y
    parts = [
        f'<svg class="plot {kind}" viewBox="0 0 {WIDTH} {HEIGHT}" width="{WIDTH}" '
        f'height="{HEIGHT}" role="img" aria-label="{escape(title)}">',
        f"<title>{escape(title)}</title>",
        f'<line class="axis" x1="{LEFT}" y1="{sy(0)}" x2="{WIDTH - RIGHT}" y2="{sy(0)}"/>',
        f'<line class="axis" x1="{LEFT}" y1="{sy(0)}" x2="{LEFT}" y2="{sy(1)}"/>',
    ]
    for y in (0, 0.25, 0.5, 0.75, 1):
        parts.append(
            f'<line class="grid" x1="{LEFT}" y1="{sy(y)}" x2="{WIDTH - RIGHT}" y2="{sy(y)}"/>'
            f'<text class="tick" x="{LEFT - 6}" y="{sy(y) + 4}" text-anchor="end">'
            f"{100 * y:.0f} %</text>"
        )
    return parts


def scatter(points: Sequence[Point], title: str) -> Markup:
    """Accuracy (0 to 100 %) against mean ms per model call on a log axis (latencies span two
    orders of magnitude across the ladder); the Pareto front as a step line."""
    points = [p for p in points if p.x > 0]
    if not points:
        return Markup("")
    low = min(p.x for p in points) / 1.25
    high = max(p.x for p in points) * 1.25
    w, h = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM
    span = math.log10(high) - math.log10(low)

    def sx(x: float) -> float:
        return round(LEFT + w * (math.log10(x) - math.log10(low)) / span, 1)

    sy = _share_y
    parts = _share_frame("scatter", title)
    for x in _ticks(low, high):
        parts.append(
            f'<text class="tick" x="{sx(x)}" y="{sy(0) + 16}" text-anchor="middle">{x:,.0f}</text>'
        )
    parts.append(
        f'<text class="axis-label" x="{LEFT + w / 2}" y="{HEIGHT - 4}" text-anchor="middle">'
        "mean ms per model call (log scale)</text>"
        f'<text class="axis-label" x="12" y="{TOP + h / 2}" text-anchor="middle" '
        f'transform="rotate(-90 12 {TOP + h / 2})">accuracy</text>'
    )
    front = pareto_front(points)
    steps: list[str] = []
    for i, p in enumerate(front):
        if i:
            steps.append(f"{sx(p.x)},{sy(front[i - 1].y)}")
        steps.append(f"{sx(p.x)},{sy(p.y)}")
    parts.append(f'<polyline class="front" points="{" ".join(steps)}"/>')
    on_front = {id(p) for p in front}
    for p in sorted(points, key=lambda p: p.kind != ""):  # marked dots drawn last, on top
        kind = " ".join(k for k in (p.kind, "on-front" if id(p) in on_front else "") if k)
        parts.append(
            f'<circle class="dot {kind}" cx="{sx(p.x)}" cy="{sy(p.y)}" '
            f'r="{6 if p.kind else 4}" data-label="{escape(p.label)}">'
            f"<title>{escape(p.label)}: {100 * p.y:.0f} %, {p.x:,.0f} ms per call</title></circle>"
        )
    parts.append("</svg>")
    return Markup("".join(parts))


def histogram(turns: Sequence[int], largest: int, label: str) -> Markup:
    """How many tasks took each number of model calls, 0 to ``largest``."""
    counts = Counter(turns)
    width, height, pad = 160, 48, 12
    slots = largest + 1
    bar = (width - 2) / slots
    top = max(counts.values(), default=1)
    parts = [
        f'<svg class="plot turns" viewBox="0 0 {width} {height + pad}" width="{width}" '
        f'height="{height + pad}" role="img" aria-label="{escape(label)}">',
        f"<title>{escape(label)}</title>",
    ]
    for n in range(slots):
        tall = round(height * counts.get(n, 0) / top, 1)
        parts.append(
            f'<rect class="count" x="{round(1 + n * bar, 1)}" y="{round(height - tall, 1)}" '
            f'width="{round(max(bar - 1, 1), 1)}" height="{tall}" data-turns="{n}" '
            f'data-tasks="{counts.get(n, 0)}"><title>{counts.get(n, 0)} task runs took {n} '
            "model calls</title></rect>"
        )
    parts.append(
        f'<text class="tick" x="1" y="{height + pad - 1}">0</text>'
        f'<text class="tick" x="{width - 1}" y="{height + pad - 1}" text-anchor="end">'
        f"{largest}</text></svg>"
    )
    return Markup("".join(parts))


def pass_curves(curves: Sequence[tuple[str, Sequence[float]]], title: str) -> Markup:
    """pass^k against k (1 to the most epochs), one line per run: how reliably each run's
    tasks are solved as the number of tries that must all succeed grows. Runs of one epoch
    (a single point) draw nothing."""
    curves = [(label, list(values)) for label, values in curves if len(values) > 1]
    if not curves:
        return Markup("")
    most = max(len(values) for _, values in curves)
    w, h = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM

    def sx(k: int) -> float:
        return round(LEFT + w * (k - 1) / (most - 1), 1)

    sy = _share_y
    parts = _share_frame("pass-k", title)
    for k in range(1, most + 1):
        parts.append(
            f'<text class="tick" x="{sx(k)}" y="{sy(0) + 16}" text-anchor="middle">{k}</text>'
        )
    parts.append(
        f'<text class="axis-label" x="{LEFT + w / 2}" y="{HEIGHT - 4}" text-anchor="middle">'
        "k: epochs that must all succeed</text>"
        f'<text class="axis-label" x="12" y="{TOP + h / 2}" text-anchor="middle" '
        f'transform="rotate(-90 12 {TOP + h / 2})">pass^k</text>'
    )
    for label, values in curves:
        points = " ".join(f"{sx(k)},{sy(v)}" for k, v in enumerate(values, start=1))
        parts.append(f'<polyline class="curve" points="{points}" data-label="{escape(label)}">'
                     f"<title>{escape(label)}: "
                     + ", ".join(f"pass^{k} {100 * v:.0f} %" for k, v in enumerate(values, 1))
                     + "</title></polyline>")  # fmt: skip
    parts.append("</svg>")
    return Markup("".join(parts))

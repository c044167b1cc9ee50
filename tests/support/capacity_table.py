"""The table of docs/capacity.md that tests/integration/test_capacity_counts.py measures:
its columns and rows, writing it between its markers, reading it back, and comparing a run's
figures with it (the tolerance and why: that test's docstring)."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "capacity.md"
BEGIN = "<!-- capacity-counts:begin -->"
END = "<!-- capacity-counts:end -->"
RELATIVE_TOLERANCE = 0.35
# The idle rate moves by about this much between windows (NATS's pull requests follow the
# traffic more than the round trips do): measured 0.5-1.2 messages/s, 11-15 round trips/s.
IDLE_UNCERTAINTY = 0.2
ABSOLUTE_TOLERANCE = 3.0

COLUMNS = (
    "mongo round trips",
    "mongo reads",
    "inserts",
    "updates",
    "deletes",
    "DB KiB",
    "NATS msgs in",
    "NATS msgs out",
    "NATS KiB in",
    "stream msgs",
    "webhook deliveries",
    "S3 objects",
    "S3 KiB",
)
ROWS = {
    "idle": "idle stack, per second",
    "idle account": "idle account-svc, per second",
    "idle render": "idle render-svc, per second",
    "idle publish": "idle publish-svc, per second",
    "idle webhook": "idle webhook-svc, per second",
    "story": "story from html",
    "reel": "reel (2 s video, due later)",
    "clipapp": "clipapp photo post",
    "social": "social post (linknet image)",
    "status": "one status call",
}
# The services whose idle rates have rows, in the order the test stops them.
SERVICES = ("webhook", "publish", "render", "account")


def table(rows: dict[str, dict[str, float]]) -> str:
    lines = [
        "| per | " + " | ".join(COLUMNS) + " |",
        "|---|" + "---:|" * len(COLUMNS),
    ]
    for key, figures in rows.items():
        cells = [_cell(figures[c]) for c in COLUMNS]
        lines.append(f"| {ROWS[key]} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def _cell(value: float) -> str:
    value = 0.0 if abs(value) < 0.05 else value
    return f"{value:,.0f}" if abs(value) >= 100 else f"{value:.1f}"


def documented() -> dict[str, dict[str, float]]:
    """The table between the markers in docs/capacity.md, by row key."""
    return documented_from(DOC.read_text().split(BEGIN, 1)[1].split(END, 1)[0])


def documented_from(block: str) -> dict[str, dict[str, float]]:
    """A table as `table` writes it, by row key."""
    by_label = {label: key for key, label in ROWS.items()}
    found: dict[str, dict[str, float]] = {}
    for line in block.strip().splitlines()[2:]:
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        found[by_label[cells[0]]] = {
            name: float(cell.replace(",", ""))
            for name, cell in zip(COLUMNS, cells[1:], strict=True)
        }
    return found


# Rows printed and written but not compared: each service's idle rate is the difference of two
# 5 s windows, and pollers with longer periods (account-svc's token keeper: 30 s) land in one
# window or the other; it moves by several round trips a second between runs.
APPROXIMATE = frozenset(f"idle {service}" for service in SERVICES)


def disagreements(
    measured: dict[str, dict[str, float]],
    doc: dict[str, dict[str, float]],
    shares: dict[str, dict[str, float]],
) -> list[str]:
    """Cells further from the doc than the tolerance, plus IDLE_UNCERTAINTY of the idle share
    subtracted from the cell in this run (a long window with few posts, the reels', subtracts
    much, and the idle rate of a window is known to about that much)."""
    wrong: list[str] = []
    for key in (k for k in ROWS if k not in APPROXIMATE):
        for name in COLUMNS:
            got, said = measured[key][name], doc.get(key, {}).get(name)
            if said is None:
                wrong.append(f"{ROWS[key]} / {name}: not in the doc")
                continue
            allowed = max(ABSOLUTE_TOLERANCE, RELATIVE_TOLERANCE * abs(said))
            allowed += IDLE_UNCERTAINTY * shares.get(key, {}).get(name, 0.0)
            if abs(got - said) > allowed:
                wrong.append(f"{ROWS[key]} / {name}: measured {got:.1f}, the doc says {said}")
    return wrong


def write_table(text: str) -> None:
    doc = DOC.read_text()
    pattern = re.compile(re.escape(BEGIN) + r".*?" + re.escape(END), re.DOTALL)
    DOC.write_text(pattern.sub(lambda _m: f"{BEGIN}\n{text}\n{END}", doc, count=1))

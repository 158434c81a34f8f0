"""``python -m harness.policies``: the table of every loop setting, as the loop settings' page
holds it; ``--write PAGE`` rebuilds it in place between the page's markers."""

from __future__ import annotations

import sys
from pathlib import Path

from harness.policies.registry import settings_table, with_table


def main(argv: list[str]) -> int:
    if argv[:1] == ["--write"] and len(argv) == 2:
        page = Path(argv[1])
        page.write_text(with_table(page.read_text(encoding="utf-8")), encoding="utf-8")
        print(f"rewrote the settings table in {page}")
        return 0
    if argv:
        print("usage: python -m harness.policies [--write PAGE]", file=sys.stderr)
        return 2
    print(settings_table())
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

"""Draw docs/img/demo.svg: the demo's terminal view at the end of the Opera Game (``python docs/img/demo_svg.py``).

The game is played by the hand model through the rules engine, as ``touchmove demo`` plays it; the view is the
demo's own (:class:`touchmove.sim.demo.View`), printed by rich and saved as SVG.
"""

from __future__ import annotations

import io
import json
from pathlib import Path

from rich.console import Console

from touchmove import records
from touchmove.replay import replay
from touchmove.rules import Engine
from touchmove.sim import demo

OUT = Path(__file__).with_name("demo.svg")


def main() -> None:
    game = demo.read_game(demo.DEFAULT_PGN)
    lines = [json.dumps(records.to_dict(r)) for r in demo.timeline_for(game)]
    view = demo.View()
    view.status = "board online"
    for event in replay(lines, Engine(settle_ms=200)):
        view.apply("touchmove/boards/demo-board/events", event.to_json().encode())
    console = Console(width=110, record=True, force_terminal=True, file=io.StringIO())
    console.print(view.render())
    console.save_svg(str(OUT), title="touchmove demo")
    print(f"wrote {OUT}")


if __name__ == "__main__":
    main()

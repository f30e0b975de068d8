"""A board's serial port, below both the bridge (:mod:`touchmove.bridge`) and the vendor boards' adapters
(:mod:`touchmove.boards`): ``bridge -> boards -> serial`` and ``bridge -> serial``, never back.

| module | what |
|---|---|
| :mod:`~touchmove.serial.link` | :class:`SerialLink`: an open port delivering its lines, writing commands |
| :mod:`~touchmove.serial.lines` | a board's lines cut from the byte stream and decoded into records |
| :mod:`~touchmove.serial.line_check` | the check (``ck``) a board's line carries |
| :mod:`~touchmove.serial.commands` | commands from the host to a board, one line each |
| :mod:`~touchmove.serial.discovery` | the ports the configuration designates (paths, patterns, USB matches) |
| :mod:`~touchmove.serial.refusals` | why a port cannot be opened, with the fix |
"""

"""Simulation only, for the demos, the tests and the benchmarks: the product (bridge, broadcaster, CLI besides
the demo subcommands) imports nothing from here. Hands, simulated boards and bridges, the firmware under
CPython or behind a pseudo-terminal, vendor board emulators, a private Mosquitto and a private NATS cluster."""

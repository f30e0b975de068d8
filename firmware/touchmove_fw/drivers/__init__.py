# Sensing drivers. Each module has a class with read(buf) filling buf[0:8] with raw bits in wiring order
# (input 8k + b = bit b of byte k) and a from_config(cfg, machine, clock) that builds it from a board profile.

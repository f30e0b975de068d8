
# Scan cost on this machine: microseconds per scan of the scan step (driver read + debounce + queue) for
# each driver with the fake hardware, idle and while squares change. Prints one JSON object.
# (The fakes are Python too, so a driver's figure includes its fake's cost: an upper bound here.)
import json
import time

import machine
from hwmodels import HallModel, HC165Chain, MatrixModel, MCP23017Model
from touchmove_fw import config
from touchmove_fw.drivers import hall_mux, hc165, matrix, mcp23017
from touchmove_fw.evqueue import EventQueue
from touchmove_fw.maps import build_map
from touchmove_fw.scan import Scanner

N = 2000


def bench(name, driver, flip, active_low=True):
    s = Scanner(driver, build_map(None), EventQueue(64), None, active_low, 4, 0, 1000)
    s.prime(0)
    q = s.queue
    t0 = time.ticks_us()
    for i in range(N):
        s.scan(5 * i)
    idle = time.ticks_diff(time.ticks_us(), t0) / N
    t0 = time.ticks_us()
    for i in range(N):
        if i % 10 == 0:
            flip(i)
        s.scan(5 * i)
        while q.n:
            q.pop()
    busy = time.ticks_diff(time.ticks_us(), t0) / N
    return {"driver": name, "idle_us": round(idle, 1), "busy_us": round(busy, 1)}


def main():
    out = []
    machine.reset_fakes()
    cfg = config.get("hc165", {})
    chain = HC165Chain(load=cfg["pins"]["load"], clk=cfg["pins"]["sck"], data=cfg["pins"]["miso"])

    def flip_chain(i):
        chain.inputs[(i // 10) & 7] ^= 0x81

    out.append(bench("hc165", hc165.from_config(cfg, machine, None), flip_chain))
    machine.reset_fakes()
    cfg = config.get("matrix", {})
    p = cfg["pins"]
    model = MatrixModel([p["rank%d" % (r + 1)] for r in range(8)], [p["file_" + f] for f in "abcdefgh"])

    def flip_matrix(i):
        model.closed[(i // 10) & 7] ^= 0x81

    out.append(bench("matrix", matrix.from_config(cfg, machine, None), flip_matrix))
    machine.reset_fakes()
    cfg = config.get("mcp23017", {})
    models = [MCP23017Model(a) for a in cfg["i2c_addrs"]]

    def flip_mcp(i):
        models[(i // 10) & 3].closed ^= 0x0101

    out.append(bench("mcp23017", mcp23017.from_config(cfg, machine, None), flip_mcp))
    machine.reset_fakes()
    cfg = config.get("hall_mux", {"calibration_file": None})
    p = cfg["pins"]
    hm = HallModel([p["s%d" % i] for i in range(4)], [p["sig"]], [p["en%d" % i] for i in range(4)])

    def flip_hall(i):
        j = (i // 10) & 63
        hm.values[j] = 50000 if hm.values[j] < 40000 else 30000

    drv = hall_mux.from_config(cfg, machine, None)
    drv.sleep_us = None  # the settle delay would dominate: measure the code
    out.append(bench("hall_mux", drv, flip_hall, active_low=False))
    print(json.dumps(out))


main()

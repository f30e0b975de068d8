# boot.py for one test on the emulated Pico (test_pico_faults.py: a wrong SPI mode), never for a board. It runs
# before main.py and makes the firmware build its 74HC165 chain's SPI with CPHA = 1 instead of the driver's mode 0
# (polarity 0, phase 0), as a port or a profile mistake would: the MCU then samples each bit on the clock's
# trailing edge, after the chain has already shifted. The firmware's modules stay as installed; only the
# ``machine`` the driver is given makes its SPI at phase 1.
import machine
from touchmove_fw.drivers import hc165

_from_config = hc165.from_config


class _Phase1:
    Pin = machine.Pin

    @staticmethod
    def SPI(*args, **kw):
        kw["phase"] = 1
        return machine.SPI(*args, **kw)


def _at_phase1(cfg, m, clock):
    return _from_config(cfg, _Phase1, clock)


hc165.from_config = _at_phase1

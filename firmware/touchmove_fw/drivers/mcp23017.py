# 4 x MCP23017 16-bit I/O expanders on one I2C bus (addresses 0x20..0x23, set by A0..A2).
# Chip k's GPA is byte 2k and GPB is byte 2k+1 of the wiring order: chip k covers inputs 16k..16k+15.
# Internal 100k pull-ups are enabled, so a reed switch to GND reads 0 (the profile sets active_low).
# With IOCON.BANK = 0 (the power-on default) and sequential addressing, one read at GPIOA returns GPIOA
# then GPIOB: 4 transactions a scan, ~0.5 ms at 400 kHz.

_IODIRA = 0x00
_GPPUA = 0x0C
_GPIOA = 0x12
_IOCON = 0x0A


class MCP23017:
    def __init__(self, i2c, addrs=(0x20, 0x21, 0x22, 0x23)):
        self.i2c = i2c
        self.addrs = tuple(addrs)
        self.two = bytearray(2)
        for a in self.addrs:
            i2c.writeto_mem(a, _IOCON, b"\x00")  # BANK=0, sequential addressing
            i2c.writeto_mem(a, _IODIRA, b"\xff\xff")  # all 16 pins inputs
            i2c.writeto_mem(a, _GPPUA, b"\xff\xff")  # all 16 pull-ups on

    def read(self, buf):
        two = self.two
        i2c = self.i2c
        k = 0
        for a in self.addrs:
            i2c.readfrom_mem_into(a, _GPIOA, two)
            buf[k] = two[0]
            buf[k + 1] = two[1]
            k += 2


def from_config(cfg, machine, clock):
    p = cfg["pins"]
    i2c = machine.I2C(
        cfg.get("i2c_id", 0), sda=machine.Pin(p["sda"]), scl=machine.Pin(p["scl"]), freq=cfg.get("i2c_freq", 400_000)
    )
    return MCP23017(i2c, cfg.get("i2c_addrs", (0x20, 0x21, 0x22, 0x23)))

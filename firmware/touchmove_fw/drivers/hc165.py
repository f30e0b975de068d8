# 8 x 74HC165 parallel-in/serial-out shift registers in a daisy chain: the recommended build.
#
# Chip 0's Q7 goes to the MCU, chip k+1's Q7 to chip k's DS. A low pulse on PL latches all 64 inputs; then
# every rising CLK edge shifts one bit towards the MCU: chip 0's D7..D0, then chip 1's D7..D0, and so on.
# Read MSB first, byte k is chip k and bit b is input Db: input 8k + b, the firmware's wiring order.
# CE (clock inhibit) is tied to GND. The last chip's serial input DS (SER) is tied to GND and MISO has a
# 10 kOhm pull-up to 3.3 V: reading one byte past the chain must give 0x00 (the known tail byte). A cut data
# wire reads 0xFF there; a chain that does not shift (clock or load wire off) reads one bit throughout.
#
# SPI mode 0 (CPOL=0, CPHA=0): Q7 already shows D7 after the load, and the MCU samples on the rising edge
# before the register's output changes (its propagation delay is ~15 ns). With CPHA=1 the first rising edge
# would shift D7 away before it is sampled. 1 MHz keeps long board wires quiet; 64 bits take 64 us.


class HC165SPI:
    def __init__(self, spi, load, nchips=8):
        self.spi = spi
        self.load = load  # Pin, output, idle high
        self.nchips = nchips
        load(1)

    def read(self, buf):
        load = self.load
        load(0)  # latch; the pulse (a few us from Python) is far above the 74HC165's 20 ns minimum
        load(1)
        self.spi.readinto(buf)  # buf is an 8-byte memoryview: exactly 64 clocks

    def chain_check(self):
        """'ok' when 72 clocks give the 64 inputs then the tail byte 0x00; 'dead' when the tail is wrong
        (a cut or missing chip, MISO open); 'flat' when all 72 bits are equal (nothing shifts)."""
        buf = bytearray(self.nchips + 1)
        self.load(0)
        self.load(1)
        self.spi.readinto(buf)
        return _verdict(buf, self.nchips)


def _verdict(buf, n):
    if buf[n] != 0:
        return "dead"
    first = buf[0]
    if first in (0, 0xFF) and all(b == first for b in buf):
        return "flat"
    return "ok"


class HC165Bitbang:
    """The same chain clocked by hand, for pins without an SPI peripheral (about 1 ms a scan on RP2040)."""

    def __init__(self, load, clk, data, nchips=8):
        self.load = load
        self.clk = clk
        self.data = data
        self.nchips = nchips
        load(1)
        clk(0)

    def read(self, buf):
        load = self.load
        clk = self.clk
        data = self.data
        load(0)
        load(1)
        for k in range(self.nchips):
            v = 0
            for _ in range(8):
                v = (v << 1) | data()
                clk(1)
                clk(0)
            buf[k] = v

    def chain_check(self):
        buf = bytearray(self.nchips + 1)
        self.load(0)
        self.load(1)
        for k in range(self.nchips + 1):
            v = 0
            for _ in range(8):
                v = (v << 1) | self.data()
                self.clk(1)
                self.clk(0)
            buf[k] = v
        return _verdict(buf, self.nchips)


def from_config(cfg, machine, clock):
    p = cfg["pins"]
    load = machine.Pin(p["load"], machine.Pin.OUT, value=1)
    if cfg.get("bitbang"):
        clk = machine.Pin(p["sck"], machine.Pin.OUT, value=0)
        data = machine.Pin(p["miso"], machine.Pin.IN)
        return HC165Bitbang(load, clk, data)
    spi = machine.SPI(
        cfg.get("spi_id", 0),
        baudrate=cfg.get("spi_baud", 1_000_000),
        polarity=0,
        phase=0,
        sck=machine.Pin(p["sck"]),
        mosi=machine.Pin(p["mosi"]),
        miso=machine.Pin(p["miso"]),
    )
    return HC165SPI(spi, load)

# 5 x MCP23017 16-bit I/O expanders on one I2C bus (addresses 0x20..0x24, set by A0..A2).
#
# GPA7 and GPB7 are not used as inputs: since its 2022 revision (DS20001952C) the datasheet lists them as
# outputs only (an input there can corrupt SDA). So a chip gives 14 inputs (GPA0..6, GPB0..6) and 64 squares
# need 5 chips (70 inputs, the fifth chip's GPA0..6 and GPB0 used). GPA7/GPB7 are set as outputs driven low
# and left unconnected. Wiring order: chip c's GPA0..6 are inputs 14c..14c+6, its GPB0..6 inputs 14c+7..14c+13.
# Internal 100k pull-ups are enabled, so a reed switch to GND reads 0 (the profile sets active_low).
# With IOCON.BANK = 0 (the power-on default) and sequential addressing, one read at GPIOA returns GPIOA then
# GPIOB: 5 transactions a scan of ~48 bit times each (START, address+W, register, repeated START,
# address+R, 2 data bytes, STOP): ~120 us a chip at 400 kHz, ~0.6 ms a scan (~2.4 ms at 100 kHz).
#
# A chip that holds the bus (SCL stretched low) makes each transfer wait the I2C timeout, 50 ms by default on
# rp2: 50 ms a chip, past a 5 ms scan slot. The I2C object gets I2C_TIMEOUT_US per transfer instead (1000 us
# at 400 kHz: 8 x a register read; at lower speeds 4 x a read, rounded up to whole ms), so all five chips
# stuck cost about 5 ms a scan; such failures are counted as ``timeouts`` (diag, the host's error record).
#
# A transfer that times out means SCL did not rise: a slave (or a short) holds the clock, and no other chip on
# the bus can be read either. The scan skips the chips after it (each would wait its own timeout), so a held
# bus costs one timeout a scan. Before each scan the driver reads SCL's level (a Pin read, the I2C peripheral
# keeps the pin): low while no transfer is under way means the clock is held, and the scan skips the bus
# altogether (``scl_low`` counts those scans). Nine SCL pulses cannot free such a bus, so none are tried then;
# once SCL is high again the bus is recovered and the chips set up again (a slave that held the clock may
# have been reset meanwhile).
#
# I2C errors never stop the scan: a chip that does not answer keeps its last good reading (so no square
# flips because of a glitch), ``errors`` counts them (diag, and an error record to the host), and after
# RECOVER_AFTER failed scans in a row the bus is recovered (``recover``: nine SCL pulses free a slave stuck
# holding SDA low, a STOP, the I2C peripheral made again) and the chips are set up again.
try:
    from micropython import const
except ImportError:  # CPython

    def const(x):
        return x


_IODIRA = const(0x00)
_GPPUA = const(0x0C)
_GPIOA = const(0x12)
_IOCON = const(0x0A)
_OLATA = const(0x14)
INPUTS = const(14)  # per chip
RECOVER_AFTER = const(10)
I2C_TIMEOUT_US = const(1000)  # per transfer, at least (hardware/README.md: the I2C timing table)
_ETIMEDOUT = const(110)  # MicroPython's errno for a transfer that timed out


class MCP23017:
    def __init__(self, i2c, addrs=(0x20, 0x21, 0x22, 0x23, 0x24), recover=None, scl=None):
        if len(addrs) * INPUTS < 64:
            raise ValueError("64 squares need 5 MCP23017 (14 inputs each)")
        self.i2c = i2c
        self.addrs = tuple(addrs)
        self.recover = recover  # function() -> a new I2C object, or None
        self.scl = scl  # Pin reading the bus clock's level (not reconfigured: the I2C peripheral keeps it), or None
        self.held = False  # the last scan found SCL held low
        self.scl_low = 0  # scans skipped since boot because SCL was held low
        self.two = bytearray(2)
        self.good = bytearray(2 * len(self.addrs))  # last good GPIOA/GPIOB per chip
        for i in range(len(self.good)):
            self.good[i] = 0x7F  # all open until a chip has been read
        self.errors = 0  # failed chip reads since boot ...
        self.timeouts = 0  # ... of which timed out (a chip holding the bus)
        self.failing = 0  # scans in a row with a failed read
        self.recoveries = 0
        self.needs_setup = not self.setup()

    def setup(self):
        """Configure every chip; False when one did not answer (counted as an error, retried later)."""
        ok = True
        for a in self.addrs:
            try:
                self.i2c.writeto_mem(a, _IOCON, b"\x00")  # BANK=0, sequential addressing
                self.i2c.writeto_mem(a, _OLATA, b"\x00\x00")  # GPA7/GPB7 drive low
                self.i2c.writeto_mem(a, _IODIRA, b"\x7f\x7f")  # GPx0..6 inputs, GPx7 outputs
                self.i2c.writeto_mem(a, _GPPUA, b"\x7f\x7f")  # pull-ups on the inputs
            except OSError:
                self.errors += 1
                ok = False
        return ok

    def read(self, buf):
        scl = self.scl
        if scl is not None and not scl():
            # SCL low with no transfer under way: the clock is held, no transfer could finish (each would wait
            # its timeout). Skip the bus this scan, keep the last good readings.
            self.scl_low += 1
            self.held = True
            self._pack(buf)
            return
        if self.held:  # the clock is free again: a fresh I2C peripheral (it may be stuck mid-transfer), set-up
            self.held = False
            self._recover()
        two = self.two
        good = self.good
        i2c = self.i2c
        failed = timed_out = False
        i = 0
        for a in self.addrs:
            if timed_out:
                break  # a transfer timed out: the bus is held, the next chips keep their last good readings
            try:
                i2c.readfrom_mem_into(a, _GPIOA, two)
                good[i] = two[0] & 0x7F
                good[i + 1] = two[1] & 0x7F
            except OSError as exc:  # keep the chip's last good reading
                self.errors += 1
                if exc.args and exc.args[0] == _ETIMEDOUT:
                    self.timeouts += 1
                    timed_out = True
                failed = True
            i += 2
        self._pack(buf)
        if failed:
            self.failing += 1
            if self.failing >= RECOVER_AFTER:
                self.failing = 0
                self._recover()
        else:
            self.failing = 0
            if self.needs_setup:  # the bus answers again: set up the chips that missed it
                self.needs_setup = not self.setup()

    def _pack(self, buf):
        # 14 bits a chip into the 64-bit wiring order
        good = self.good
        acc = 0
        nbits = 0
        k = 0
        i = 0
        while k < 8:
            acc |= (good[i] | (good[i + 1] << 7)) << nbits
            nbits += INPUTS
            i += 2
            while nbits >= 8 and k < 8:
                buf[k] = acc & 0xFF
                acc >>= 8
                nbits -= 8
                k += 1

    def _recover(self):
        if self.recover is None:
            return
        self.recoveries += 1
        try:
            self.i2c = self.recover()
        except OSError:
            self.errors += 1
        self.needs_setup = True


def i2c_timeout_us(freq):
    """The per-transfer timeout for a bus speed: 4 x a 48-bit register read, whole ms, >= I2C_TIMEOUT_US."""
    t = 4 * 48 * 1_000_000 // freq
    return max(I2C_TIMEOUT_US, (t + 999) // 1000 * 1000)


def bus_recovery(machine, i2c_id, sda, scl, freq, timeout):
    """A function that frees a stuck bus and returns a new I2C object (allocates: only after errors)."""
    import time

    def recover():
        s = machine.Pin(scl, machine.Pin.OPEN_DRAIN, value=1)
        d = machine.Pin(sda, machine.Pin.IN, machine.Pin.PULL_UP)
        for _ in range(9):  # clock out whatever byte a slave is still sending
            if d():
                break
            s(0)
            time.sleep_us(5)
            s(1)
            time.sleep_us(5)
        d = machine.Pin(sda, machine.Pin.OPEN_DRAIN, value=0)  # a STOP: SDA rises while SCL is high
        time.sleep_us(5)
        d(1)
        time.sleep_us(5)
        return machine.I2C(i2c_id, sda=machine.Pin(sda), scl=machine.Pin(scl), freq=freq, timeout=timeout)

    return recover


def from_config(cfg, machine, clock):
    p = cfg["pins"]
    freq = cfg.get("i2c_freq", 400_000)
    timeout = cfg.get("i2c_timeout_us") or i2c_timeout_us(freq)
    i2c_id = cfg.get("i2c_id", 0)
    i2c = machine.I2C(i2c_id, sda=machine.Pin(p["sda"]), scl=machine.Pin(p["scl"]), freq=freq, timeout=timeout)
    return MCP23017(i2c, cfg.get("i2c_addrs", (0x20, 0x21, 0x22, 0x23, 0x24)),
                    bus_recovery(machine, i2c_id, p["sda"], p["scl"], freq, timeout),
                    machine.Pin(p["scl"]))  # no mode given: the pin stays the I2C peripheral's

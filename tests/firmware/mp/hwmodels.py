# Behavioural models of the sensing hardware, wired to the fake machine module. The read paths allocate
# nothing, so the drivers can be exercised under micropython.heap_lock().
import machine


class HC165Chain:
    """8 daisy-chained 74HC165. ``inputs`` holds the 64 input levels, byte k = chip k, bit b = pin Db."""

    def __init__(self, spi_id=0, load=17, clk=18, data=16):
        self.inputs = bytearray(8)
        self.reg = bytearray(8)
        self.pos = 0  # bits shifted out since the last load (bit-banged reading)
        self.cut = False  # the data wire to the MCU is cut: MISO's pull-up reads 1
        self.stuck = False  # CLK or SH/LD does not reach the chips: Q7 keeps showing chip 0's D7
        self.loads = 0
        self.clocks = 0
        machine.SPI_DEVICES[spi_id] = self
        machine.watch(load, self._load)
        machine.watch(clk, self._clk)
        machine.input_fn(data, self._q7)

    def _load(self, pin, level):
        if level == 0:  # PL low: parallel load
            for k in range(8):
                self.reg[k] = self.inputs[k]
            self.pos = 0
            self.loads += 1

    def _clk(self, pin, level):
        if level == 1:
            self.pos += 1

    def _q7(self, pin):
        p = self.pos
        if self.cut:
            return 1
        if self.stuck:
            return (self.inputs[0] >> 7) & 1
        if p >= 64:
            return 0  # the last chip's DS is tied low
        return (self.reg[p >> 3] >> (7 - (p & 7))) & 1

    def spi_readinto(self, buf):
        # MSB first: the first byte clocked in is chip 0's D7..D0; past 64 bits the chain reads zeros
        n = len(buf)
        for k in range(n):
            if self.cut:
                buf[k] = 0xFF
            elif self.stuck:
                buf[k] = 0xFF if self.inputs[0] & 0x80 else 0
            else:
                buf[k] = self.reg[k] if k < 8 else 0
        self.pos = 8 * n
        self.clocks += 8 * n


class MatrixModel:
    """An 8 x 8 switch matrix: ``closed`` byte r bit c = the switch at rank r+1, file c."""

    def __init__(self, rows, cols, diodes=True):
        self.rows = rows
        self.cols = cols
        self.diodes = diodes
        self.closed = bytearray(8)
        for c in cols:
            machine.input_fn(c, self._col)

    def _col(self, pin):
        c = self.cols.index(pin)
        if self.diodes:
            for r in range(8):
                if machine.level(self.rows[r]) == 0 and (self.closed[r] >> c) & 1:
                    return 0
            return 1
        return self._col_no_diodes(c)

    def _col_no_diodes(self, c):
        # (a separate method: its comprehensions capture locals, which makes every call allocate cells)
        # No diodes: current flows both ways through closed switches. Column c reads low when it is
        # connected to a low (driven) row through any chain of closed switches.
        rows_seen = [machine.level(self.rows[r]) == 0 for r in range(8)]
        cols_seen = [False] * 8
        changed = True
        while changed:
            changed = False
            for r in range(8):
                for cc in range(8):
                    if (self.closed[r] >> cc) & 1 and rows_seen[r] != cols_seen[cc]:
                        rows_seen[r] = cols_seen[cc] = True
                        changed = True
        return 0 if cols_seen[c] else 1


class MCP23017Model:
    """One MCP23017: switches to GND on GPA/GPB; ``closed`` bit i = pin i (GPA0..7, GPB0..7).
    ``fail`` > 0: that many transactions raise OSError(EIO) (a glitch or a stuck bus); ``fail`` < 0: all do.
    ``stuck``: the chip holds the bus; each transfer waits the I2C object's timeout, then fails.
    ``gp7_inputs_at_read`` counts reads while GPA7 or GPB7 is an input (output-only pins since the 2022
    datasheet: an input there can corrupt SDA)."""

    #: The bus's SCL pin (the pico profile's GP5): the pull-ups hold it high unless a test pulls it low
    SCL = 5

    def __init__(self, addr):
        machine.set_input(self.SCL, 1)
        self.regs = bytearray(0x16)
        self.regs[0] = self.regs[1] = 0xFF  # IODIR: inputs at power-on
        self.closed = 0
        self.fail = 0
        self.stuck = False  # stretches SCL once addressed: that transfer waits the I2C timeout (fakes/machine.I2C)
        self.gp7_inputs_at_read = 0
        machine.I2C_DEVICES[addr] = self

    def _maybe_fail(self):
        if self.fail:
            if self.fail > 0:
                self.fail -= 1
            raise OSError(5)

    def _port(self, b):
        closed = (self.closed >> (8 * b)) & 0xFF
        pullups = self.regs[0x0C + b]
        # an open pin floats: model it as reading 0 unless its pull-up is on
        return (~closed & pullups) & 0xFF

    def write_mem(self, reg, buf):
        self._maybe_fail()
        for i in range(len(buf)):
            self.regs[reg + i] = buf[i]

    def read_mem_into(self, reg, buf):
        self._maybe_fail()
        if (self.regs[0] | self.regs[1]) & 0x80:
            self.gp7_inputs_at_read += 1
        for i in range(len(buf)):
            r = reg + i
            buf[i] = self._port(r - 0x12) if r in (0x12, 0x13) else self.regs[r]


class HallModel:
    """4 CD74HC4067 muxes, shared select pins; one shared ADC input with enables, or one ADC per mux."""

    def __init__(self, select, adc_pins, enables=None):
        self.select = select
        self.adc_pins = adc_pins
        self.enables = enables
        self.values = [32768] * 64  # sensor output per input (16 * mux + channel)
        self.bad_reads = 0
        for p in adc_pins:
            machine.ADC_FNS[p] = self._adc

    def _adc(self, pin):
        ch = 0
        for i in range(4):
            ch |= machine.level(self.select[i]) << i
        if self.enables:
            mux = -1
            n = 0
            for m in range(4):
                if machine.level(self.enables[m]) == 0:
                    mux = m
                    n += 1
            if n != 1:  # none or several muxes driving the shared line: a driver bug
                self.bad_reads += 1
                return 0
        else:
            mux = self.adc_pins.index(pin)
        return self.values[16 * mux + ch]


class ScriptedBoard:
    """Raw square bits scripted over device time, preallocated (the sim driver reads a file, and allocates
    while doing so; this one doesn't, for heap-locked runs). ``script``: (t, square, 0 | 1) in time order;
    ``presses``: (t, button) pressed for 100 ms."""

    def __init__(self, clock, script, presses=()):
        from array import array

        self.clock = clock
        self.state = bytearray((0xFF, 0xFF, 0, 0, 0, 0, 0xFF, 0xFF))
        self.times = array("i", [t for t, _, _ in script])
        self.codes = bytearray([sq | (s << 7) for _, sq, s in script])
        self.press_t = array("i", [t for t, _ in presses])
        self.press_b = bytearray([b for _, b in presses])
        self.pos = 0
        self.pressed = 0

    def done(self, t):
        last = max(self.times[-1] if len(self.times) else 0, self.press_t[-1] + 100 if len(self.press_t) else 0)
        return self.pos >= len(self.times) and t > last

    def read(self, buf):
        t = self.clock.ms()
        while self.pos < len(self.times) and self.times[self.pos] <= t:
            c = self.codes[self.pos]
            sq = c & 63
            if c & 0x80:
                self.state[sq >> 3] |= 1 << (sq & 7)
            else:
                self.state[sq >> 3] &= ~(1 << (sq & 7))
            self.pos += 1
        for k in range(8):
            buf[k] = self.state[k]
        p = 0
        for i in range(len(self.press_t)):
            if 0 <= t - self.press_t[i] < 100:
                p |= 1 << self.press_b[i]
        self.pressed = p


class ScriptedButtons:
    def __init__(self, board):
        self.board = board

    def read(self):
        return self.board.pressed

# A fake ``machine`` module for running the firmware under the MicroPython unix port (it shadows the port's
# own built-in machine when this folder is on MICROPYPATH). Hardware is scripted by the tests:
#   set_input(pin_id, level) / input_fn(pin_id, fn)  what an input pin reads
#   watch(pin_id, fn)                                fn(pin_id, level) on every write to an output pin
#   SPI_DEVICES[id], I2C_DEVICES[addr], ADC_FNS[pin_id]  models behind the buses and ADCs
# Everything on the read path is allocation-free, so drivers can be run under micropython.heap_lock().

_levels = {}
_input_fns = {}
_watchers = {}
SPI_DEVICES = {}
I2C_DEVICES = {}
ADC_FNS = {}
WDT_FEEDS = [0]
RESETS = [0]
UNIQUE_ID = b"\xe6\x61\x41\x04\x03\x2b\x8c\x2d"


def reset_fakes():
    _levels.clear()
    _input_fns.clear()
    _watchers.clear()
    SPI_DEVICES.clear()
    I2C_DEVICES.clear()
    ADC_FNS.clear()
    WDT_FEEDS[0] = 0
    RESETS[0] = 0
    RESET_CAUSE[0] = PWRON_RESET


def set_input(pin_id, level):
    _levels[pin_id] = 1 if level else 0


def input_fn(pin_id, fn):
    _input_fns[pin_id] = fn


def watch(pin_id, fn):
    _watchers[pin_id] = fn


def level(pin_id):
    return _levels.get(pin_id, 0)


class Pin:
    IN = 0
    OUT = 1
    OPEN_DRAIN = 2
    PULL_UP = 1
    PULL_DOWN = 2

    def __init__(self, id, mode=-1, pull=-1, value=None):
        self.id = id
        self.mode = mode
        self.pull = pull
        if id not in _levels:
            _levels[id] = 1 if pull == Pin.PULL_UP else 0
        if value is not None:
            self.value(value)

    def value(self, v=None):
        pid = self.id
        if v is None:
            fn = _input_fns.get(pid)
            if fn is not None:
                return fn(pid)
            return _levels[pid]
        lv = 1 if v else 0
        _levels[pid] = lv
        w = _watchers.get(pid)
        if w is not None:
            w(pid, lv)
        return None

    def __call__(self, v=None):
        return self.value(v)

    def on(self):
        self.value(1)

    def off(self):
        self.value(0)

    def init(self, mode=-1, pull=-1, value=None):
        self.mode = mode


class SPI:
    def __init__(self, id, baudrate=1000000, polarity=0, phase=0, bits=8, firstbit=0, sck=None, mosi=None,
                 miso=None):
        self.id = id
        self.baudrate = baudrate
        self.polarity = polarity
        self.phase = phase

    def readinto(self, buf, write=0):
        SPI_DEVICES[self.id].spi_readinto(buf)

    def read(self, n, write=0):
        buf = bytearray(n)
        self.readinto(buf)
        return bytes(buf)


class I2C:
    """machine.I2C as on rp2: ``timeout`` (us, default 50000) bounds each transfer; a device that holds the
    bus (a model whose ``stuck`` is set: SCL stretched low) costs that long, then OSError(ETIMEDOUT). A
    register read is two transfers (the register address, then the data), as the port does it."""

    def __init__(self, id=0, scl=None, sda=None, freq=400000, timeout=50000):
        self.id = id
        self.freq = freq
        self.timeout = timeout

    def _transfer(self, addr):
        dev = I2C_DEVICES[addr]
        if getattr(dev, "stuck", False):
            import time

            time.sleep_us(self.timeout)
            raise OSError(110)  # ETIMEDOUT
        return dev

    def writeto_mem(self, addr, reg, buf):
        self._transfer(addr).write_mem(reg, buf)

    def readfrom_mem_into(self, addr, reg, buf):
        self._transfer(addr)  # the register address
        self._transfer(addr).read_mem_into(reg, buf)

    def scan(self):
        return sorted(I2C_DEVICES)


class ADC:
    def __init__(self, pin):
        self.pin_id = pin.id if isinstance(pin, Pin) else pin

    def read_u16(self):
        return ADC_FNS[self.pin_id](self.pin_id)


class WDT:
    def __init__(self, id=0, timeout=5000):
        self.timeout = timeout

    def feed(self):
        WDT_FEEDS[0] += 1


class Timer:
    PERIODIC = 1
    ONE_SHOT = 0

    def __init__(self, id=-1, mode=1, period=-1, callback=None, freq=-1):
        self.callback = callback

    def init(self, mode=1, period=-1, callback=None, freq=-1):
        self.callback = callback

    def deinit(self):
        self.callback = None


class UART:
    def __init__(self, id, baudrate=115200, bits=8, parity=None, stop=1, tx=None, rx=None, timeout=0):
        self.id = id
        self.tx = tx
        self.rx = rx
        self.written = []
        self.incoming = bytearray()

    def any(self):
        return len(self.incoming)

    def readinto(self, buf):
        n = min(len(buf), len(self.incoming))
        buf[:n] = self.incoming[:n]
        self.incoming = self.incoming[n:]
        return n or None

    def write(self, buf):
        self.written.append(bytes(buf))  # a copy: the writer reuses its buffer
        return len(buf)


def unique_id():
    return UNIQUE_ID


def reset():
    RESETS[0] += 1
    raise SystemExit(3)


def freq():
    return 125000000


# machine.reset_cause() and its constants (the values of MicroPython's esp32 port; rp2 has PWRON_RESET 1 and
# WDT_RESET 3 too). Tests set RESET_CAUSE[0].
PWRON_RESET = 1
HARD_RESET = 2
WDT_RESET = 3
DEEPSLEEP_RESET = 4
SOFT_RESET = 5
RESET_CAUSE = [PWRON_RESET]


def reset_cause():
    return RESET_CAUSE[0]

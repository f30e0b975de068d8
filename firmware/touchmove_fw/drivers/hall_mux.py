# 4 x CD74HC4067 16-channel analog multiplexers in front of 64 linear hall sensors (SS49E, DRV5053 ...).
# S0..S3 are shared by the four muxes. Either each mux's SIG has its own ADC input (ESP32), or (RP2040,
# three usable ADC pins) the four SIG pins are tied to one ADC input and the muxes' EN pins (active low)
# choose which one drives it. Input index = 16 * mux + channel (the wiring order).
#
# A magnet above a linear sensor moves its output away from the no-field level (about VCC/2): up for one
# pole, down for the other. Each input has its own threshold: ``calibrate`` measures the empty board and
# sets threshold = baseline + polarity * delta. Thresholds persist in a small JSON file.
from array import array


class HallMux:
    def __init__(self, select, adcs, enables=None, thresholds=None, polarity=1, settle_us=10, sleep_us=None):
        if len(adcs) not in (1, 4) or (len(adcs) == 1 and not enables):
            raise ValueError("one ADC per mux, or one shared ADC and 4 enable pins")
        self.select = select
        self.adcs = adcs
        self.enables = enables
        self.polarity = 1 if polarity >= 0 else -1
        self.settle_us = settle_us
        self.sleep_us = sleep_us
        self.thresholds = array("H", thresholds or [32768 + 4000 * self.polarity] * 64)
        self.last = array("H", bytes(128))  # latest reading per input (calibration, diagnostics)
        if enables:
            for e in enables:
                e(1)

    def _channel(self, ch):
        s = self.select
        s[0](ch & 1)
        s[1]((ch >> 1) & 1)
        s[2]((ch >> 2) & 1)
        s[3]((ch >> 3) & 1)
        if self.sleep_us is not None:
            self.sleep_us(self.settle_us)

    def read(self, buf):
        for k in range(8):
            buf[k] = 0
        enables = self.enables
        adcs = self.adcs
        shared = len(adcs) == 1
        th = self.thresholds
        last = self.last
        up = self.polarity > 0
        for m in range(4):
            if shared:
                enables[m](0)
            adc = adcs[0] if shared else adcs[m]
            for ch in range(16):
                self._channel(ch)
                v = adc.read_u16()
                j = (m << 4) | ch
                last[j] = v
                if (v > th[j]) if up else (v < th[j]):
                    buf[j >> 3] |= 1 << (j & 7)
            if shared:
                enables[m](1)

    def calibrate(self, delta, samples=8):
        """Measure the (empty) board: threshold = mean reading + polarity * delta, per input."""
        sums = [0] * 64
        scratch = bytearray(8)
        for _ in range(samples):
            self.read(scratch)
            for j in range(64):
                sums[j] += self.last[j]
        for j in range(64):
            v = sums[j] // samples + self.polarity * delta
            self.thresholds[j] = max(0, min(65535, v))
        return self.thresholds


def load_thresholds(path):
    try:
        import json

        with open(path) as f:
            th = json.load(f)
        if isinstance(th, list) and len(th) == 64 and all(isinstance(v, int) and 0 <= v <= 65535 for v in th):
            return th
    except Exception:  # no file yet, or a damaged one: fall back to defaults
        pass
    return None


def save_thresholds(path, thresholds):
    import json

    with open(path, "w") as f:
        json.dump(list(thresholds), f)


def _adc(machine, gpio):
    # The ESP32's ADC reads up to ~1 V at its default attenuation: 11 dB gives 0..~3.1 V, the sensors' range.
    atten = getattr(machine.ADC, "ATTN_11DB", None)
    if atten is not None:
        return machine.ADC(machine.Pin(gpio), atten=atten)
    return machine.ADC(machine.Pin(gpio))


def from_config(cfg, machine, clock):
    import time

    p = cfg["pins"]
    select = [machine.Pin(p["s%d" % i], machine.Pin.OUT, value=0) for i in range(4)]
    if "sig" in p:
        adcs = [_adc(machine, p["sig"])]
        enables = [machine.Pin(p["en%d" % i], machine.Pin.OUT, value=1) for i in range(4)]
    else:
        adcs = [_adc(machine, p["sig%d" % i]) for i in range(4)]
        enables = None
    th = load_thresholds(cfg.get("calibration_file", "hall_calib.json"))
    return HallMux(select, adcs, enables, th, cfg.get("polarity", 1), cfg.get("settle_us", 10), time.sleep_us)

// A chessboard at the Pico's pins: the magnets over the squares (set by the test's timeline), the sensing
// hardware of each firmware driver modelled from its datasheet, the two clock buttons and the WS2812 strip.
// Pin numbers are the Pico profiles' (firmware/touchmove_fw/config.py, hardware/pins.json).
//
// Facts the models carry over:
// - Reed switch / hall sensor to the MCU: a piece (magnet) over a square closes its reed switch to GND (reads 0
//   through the pull-up) or raises its linear hall sensor's output.
// - 74HC165 (NXP/TI datasheets): /PL low loads D0..D7 asynchronously; with /PL high and /CE low each rising CP
//   edge shifts Q0->Q7 towards Q7 and takes DS into the first stage; Q7 shows D7 right after the load. Daisy
//   chain: chip k+1's Q7 into chip k's DS, the last chip's DS tied to GND.
// - 8x8 matrix with a diode per switch: a column reads low only when the row driven low has that square's
//   switch closed (the diodes block every other path).
// - MCP23017 (Microchip DS20001952C): 7-bit address 0100 A2 A1 A0; registers with IOCON.BANK = 0: IODIRA 0x00
//   (power-on 0xFF), IODIRB 0x01, IPOLA/B 0x02/03, IOCON 0x0A/0B, GPPUA/B 0x0C/0D, GPIOA/B 0x12/13,
//   OLATA/B 0x14/15; the address pointer increments after each byte unless IOCON.SEQOP (bit 5) is set; GPIO
//   reads return the pin levels (inputs, XOR IPOL) and OLAT for outputs; GPA7 and GPB7 are output only (an input
//   there is a datasheet violation: counted, and it reads nothing defined).
// - CD74HC4067 (TI): S0..S3 select one of 16 channels onto SIG while /E is low; /E high isolates SIG.
// - Linear hall sensor (SS49E class, ratiometric): about VCC/2 with no field, rising with the field of an
//   approaching magnet; output noise of a few mV.
// - RP2040 ADC: 12 bits, 0..3.3 V; MicroPython's read_u16 scales it to 16 bits.
// - WS2812 (Worldsemi datasheet): 24 bits a pixel, G R B, MSB first; a 1 is a long high pulse (T1H ~0.7 us), a 0
//   a short one (T0H ~0.35 us); low for more than 50 us latches the frame.

const BUTTON_PINS = { clock_white: 14, clock_black: 15 };
const LED_PIN = 22;

export class Chessboard {
  constructor() {
    this.occ = new Array(64).fill(false);
    this.since = new Array(64).fill(-1e12); // emulated µs of each square's last change
    this.buttons = { clock_white: false, clock_black: false };
    this.listeners = [];
  }
  setOcc(hex, us) {
    const bits = BigInt('0x' + hex);
    for (let sq = 0; sq < 64; sq++) {
      const on = ((bits >> BigInt(sq)) & 1n) === 1n;
      if (on !== this.occ[sq]) {
        this.occ[sq] = on;
        this.since[sq] = us;
        for (const f of this.listeners) f('square', sq, on, us);
      }
    }
  }
  press(name, us, ms) {
    this.setButton(name, true, us);
    for (const f of this.listeners) f('release_at', name, us + ms * 1000, us);
  }
  setButton(name, down, us) {
    if (!(name in this.buttons)) throw new Error(`no button ${name}`);
    this.buttons[name] = down;
    for (const f of this.listeners) f('button', name, down, us);
  }
}

// A deterministic random source (the same noise on every run).
function rng(seed) {
  let s = seed >>> 0;
  return () => {
    s = (s * 1664525 + 1013904223) >>> 0;
    return s / 2 ** 32;
  };
}

function gauss(rand) {
  return Math.sqrt(-2 * Math.log(rand() + 1e-12)) * Math.cos(2 * Math.PI * rand());
}

export function attachSensors(pico, board, driver, emit) {
  const mcu = pico.mcu;
  const gpio = mcu.gpio;
  const faults = { spiStall: false, i2cHold: null };
  board.listeners = [];

  // ---- buttons (to GND, the firmware enables pull-ups: the harness drives the idle level) ----
  for (const [name, pin] of Object.entries(BUTTON_PINS)) gpio[pin].setInputValue(!board.buttons[name]);
  board.listeners.push((kind, name, v, us) => {
    if (kind === 'button') gpio[BUTTON_PINS[name]].setInputValue(!v);
    if (kind === 'release_at') {
      const a = pico.alarm(() => board.setButton(name, false, pico.micros));
      a.schedule((v - us) * 1000);
    }
    if (kind === 'square') emit({ ev: 'change', sq: name, on: v, us: Math.round(us) });
  });

  const leds = attachLeds(pico);
  const model = { hc165, matrix, mcp23017, hall_mux: hallMux, none: () => {} }[driver];
  if (!model) throw new Error(`unknown driver ${driver}`);
  // Each model calls scan() where the firmware's scan starts reading the sensors (the first signal of a scan at
  // the pins): the longest gap between two is how long the firmware went without scanning, seen from outside.
  const scans = { n: 0, last: -1, maxGap: 0, worstAt: 0, long: [] };
  const scan = () => {
    const us = pico.micros;
    if (scans.last >= 0 && us - scans.last > scans.maxGap) {
      scans.maxGap = us - scans.last;
      scans.worstAt = us;
    }
    // the gaps over 12 ms (first 40): [end µs, gap µs]
    if (scans.last >= 0 && us - scans.last > 12000 && scans.long.length < 40) {
      scans.long.push([Math.round(us), Math.round(us - scans.last)]);
    }
    scans.last = us;
    scans.n++;
  };
  model(pico, board, faults, emit, scan);
  return {
    leds,
    scans(reset) {
      const out = { n: scans.n, max_gap_us: Math.round(scans.maxGap), worst_at_us: Math.round(scans.worstAt),
                    long_gaps: scans.long };
      if (reset) {
        scans.long = [];
        scans.n = 0;
        scans.maxGap = 0;
        scans.last = -1;
      }
      return out;
    },
    fault(o) {
      if (o.kind === 'spi_stall') faults.spiStall = true;
      else if (o.kind === 'i2c_stuck' && faults.i2cHold) faults.i2cHold(o); // {addr, ms, line: 'scl' | 'sda'}
      else throw new Error(`unknown fault ${o.kind}`);
      emit({ ev: 'fault', kind: o.kind, us: Math.round(pico.micros) });
    },
  };
}

// ---- 8 x 74HC165 ----------------------------------------------------------------------------------------
function hc165(pico, board, faults, emit, scan) {
  const gpio = pico.mcu.gpio;
  const LOAD = 17;
  const SCK = 18;
  const MISO = 16;
  const bits = new Array(64).fill(1); // the chain's stages, bits[0] = chip 0's Q7
  let loading = false;
  const latch = () => {
    // chip k's Dn: its square's switch (occupied = closed to GND = 0)
    for (let k = 0; k < 8; k++) for (let n = 0; n < 8; n++) bits[8 * k + (7 - n)] = board.occ[8 * k + n] ? 0 : 1;
  };
  const shift = () => {
    bits.shift();
    bits.push(0); // the last chip's DS is tied to GND
  };
  gpio[LOAD].addListener((state) => {
    if (state === 0 && !loading) scan();
    loading = state === 0;
    if (loading) latch();
    gpio[MISO].setInputValue(bits[0] === 1);
  });
  board.listeners.push((kind) => {
    if (kind === 'square' && loading) latch();
  });
  gpio[SCK].addListener((state, old) => {
    // bit-banged: a rising CP edge shifts (SIO drives the pin in that case, not the SPI block)
    if (state === 1 && old === 0 && !loading) {
      shift();
      gpio[MISO].setInputValue(bits[0] === 1);
    }
  });
  const spi = pico.mcu.spi[0];
  let pending = 0;
  const done = pico.alarm(() => spi.completeTransmit(pending));
  let wrongMode = false;
  spi.onTransmit = () => {
    if (faults.spiStall) return; // the transfer never ends: the C driver waits for it for ever
    // SPI mode: with CPHA = 0 the MCU samples each bit on the clock's leading edge, before the rising CP edge
    // that shifts the next one in (Q7 shows D7 right after the load). With CPHA = 1 it samples on the trailing
    // edge, after the first rising edge has already shifted: every byte comes one bit late.
    const late = (spi.control0 & (1 << 7)) !== 0;
    if (late && !wrongMode) {
      wrongMode = true;
      emit({ ev: 'violation', part: '74HC165', why: 'SPI CPHA = 1: bits sampled after the shift' });
    }
    let v = 0;
    for (let i = 0; i < 8; i++) {
      if (late && !loading) shift();
      v = (v << 1) | bits[0];
      if (!late && !loading) shift();
    }
    pending = v;
    const hz = spi.clockFrequency || 1e6;
    done.schedule((8 / hz) * 1e9);
  };
}

// ---- 8 x 8 reed matrix with diodes ----------------------------------------------------------------------
function matrix(pico, board, faults, emit, scan) {
  const gpio = pico.mcu.gpio;
  const ROWS = [0, 1, 2, 3, 4, 5, 6, 7];
  const COLS = [8, 9, 10, 11, 12, 13, 20, 21];
  const low = new Array(8).fill(false);
  const rand = rng(8);
  // a column no closed switch pulls low reads high only through the MCU's pull-up (the firmware's PULL_UP: the
  // board has no resistors of its own); without it the input floats and reads anything
  const update = () => {
    for (let c = 0; c < 8; c++) {
      let pulled = false;
      for (let r = 0; r < 8; r++) if (low[r] && board.occ[8 * r + c]) pulled = true;
      gpio[COLS[c]].setInputValue(!pulled && (gpio[COLS[c]].pullupEnabled || rand() < 0.5));
    }
  };
  ROWS.forEach((pin, r) =>
    gpio[pin].addListener((state) => {
      const was = low[r];
      low[r] = state === 0; // open drain: driven low, or released (an input)
      if (r === 0 && low[r] && !was) scan();
      update();
    }),
  );
  board.listeners.push((kind) => {
    if (kind === 'square') update();
  });
  update();
}

// ---- 5 x MCP23017 on I2C0 (SDA GP4, SCL GP5) ---------------------------------------------------------------
function mcp23017(pico, board, faults, emit, scan) {
  const gpio = pico.mcu.gpio;
  const SDA = 4;
  const SCL = 5;
  const i2c = pico.mcu.i2c[0];
  const rand = rng(23017);
  const chips = new Map();
  for (let c = 0; c < 5; c++) {
    const regs = new Uint8Array(0x16);
    regs[0x00] = 0xff;
    regs[0x01] = 0xff;
    chips.set(0x20 + c, { index: c, regs, ptr: 0, violations: 0 });
  }
  gpio[SDA].setInputValue(true);
  gpio[SCL].setInputValue(true);
  const inputLevel = (chip, port, bit) => {
    const input = 14 * chip.index + 7 * port + bit;
    if (input < 64 && board.occ[input]) return 0; // switch closed to GND
    const pullup = (chip.regs[0x0c + port] >> bit) & 1;
    return pullup ? 1 : rand() < 0.5 ? 1 : 0; // a floating input reads anything
  };
  const readReg = (chip, reg) => {
    if (reg === 0x12 || reg === 0x13) {
      const port = reg - 0x12;
      const dir = chip.regs[port];
      const olat = chip.regs[0x14 + port];
      let v = 0;
      for (let b = 0; b < 8; b++) {
        let level;
        if ((dir >> b) & 1) {
          if (b === 7) {
            // GPx7 configured as an input: not allowed by the datasheet
            if (!chip.violations++) emit({ ev: 'violation', chip: 0x20 + chip.index, port: 'AB'[port], bit: 7 });
            level = rand() < 0.5 ? 1 : 0;
          } else level = inputLevel(chip, port, b) ^ ((chip.regs[0x02 + port] >> b) & 1);
        } else level = (olat >> b) & 1;
        v |= level << b;
      }
      return v;
    }
    return chip.regs[reg];
  };
  const advance = (chip) => {
    if (!((chip.regs[0x0a] >> 5) & 1)) chip.ptr = (chip.ptr + 1) % 0x16;
  };
  let cur = null;
  let firstByte = false;
  // A stuck bus: a device holds a line low for the fault's time. SCL held low (a slave stretching the clock for
  // ever, or a short): the controller waits for SCL to rise before it can go on, so whatever step of a transfer
  // is under way (a START, a byte) completes only once the line is let go; the driver's timeout ends the
  // transfer meanwhile. SDA held low (line "sda": a slave stuck mid-byte): the master cannot make its START and
  // loses arbitration (ARB_LOST).
  let holding = null; // 'scl' | 'sda' | null
  let waiting = []; // the steps the controller waits to finish until SCL rises
  faults.i2cHold = (o) => {
    const line = o.line ?? 'scl';
    if (line !== 'scl' && line !== 'sda') throw new Error(`no I2C line ${line}`);
    holding = line;
    gpio[line === 'scl' ? SCL : SDA].setInputValue(false);
    const release = pico.alarm(() => {
      holding = null;
      gpio[SCL].setInputValue(true);
      gpio[SDA].setInputValue(true);
      emit({ ev: 'fault_end', kind: 'i2c_stuck', line, us: Math.round(pico.micros) });
      const steps = waiting;
      waiting = [];
      for (const f of steps) f();
    });
    release.schedule(o.ms * 1e6);
  };
  // one byte on the bus: 9 SCL periods
  const byteNanos = () => {
    const cycles = (i2c.sclLowPeriod + i2c.sclHighPeriod) || 312;
    return (9 * cycles * 1e9) / 125e6;
  };
  const later = (fn) => {
    const a = pico.alarm(() => (holding === 'scl' ? waiting.push(fn) : fn()));
    a.schedule(byteNanos());
  };
  i2c.onStart = () => {
    if (holding === 'scl') waiting.push(() => i2c.completeStart());
    else if (holding === 'sda') later(() => i2c.arbitrationLost()); // no STOP follows: the driver's timeout
    else i2c.completeStart();
  };
  i2c.onConnect = (addr, mode) => {
    if (addr === 0x20 && mode !== 0) scan(); // each scan reads the first chip's GPIO registers first
    cur = chips.get(addr) ?? null;
    firstByte = mode === 0;
    later(() => i2c.completeConnect(cur !== null));
  };
  i2c.onWriteByte = (v) => {
    later(() => {
      if (firstByte) {
        cur.ptr = v % 0x16;
        firstByte = false;
      } else {
        cur.regs[cur.ptr] = v;
        if (cur.ptr === 0x12 || cur.ptr === 0x13) cur.regs[cur.ptr + 2] = v; // GPIO writes go to OLAT
        advance(cur);
      }
      i2c.completeWrite(true);
    });
  };
  i2c.onReadByte = () => {
    const v = readReg(cur, cur.ptr);
    advance(cur);
    later(() => i2c.completeRead(v));
  };
  i2c.onStop = () => (holding === 'scl' ? waiting.push(() => i2c.completeStop()) : i2c.completeStop());
  // the firmware's bus recovery drives SCL as a GPIO and reads both lines: nothing to model beyond the levels
}

// ---- 64 linear hall sensors behind 4 x CD74HC4067, the SIGs on ADC0 (GP26), /E on GP6..9 -------------------
function hallMux(pico, board, faults, emit, scan) {
  const gpio = pico.mcu.gpio;
  const SEL = [2, 3, 4, 5];
  const EN = [6, 7, 8, 9];
  const level = new Array(30).fill(0);
  for (const p of [...SEL, ...EN]) {
    gpio[p].addListener((state) => {
      const v = state === 1 ? 1 : 0;
      if (p === EN[0] && v === 0 && level[p] === 1) scan(); // the first mux enabled: a scan begins
      level[p] = v;
    });
  }
  const rand = rng(4067);
  const VCC = 3.3;
  const offset = Array.from({ length: 64 }, () => (rand() - 0.5) * 0.03); // sensor-to-sensor spread, +-15 mV
  const FULL = 0.45; // V above the no-field level with a piece's magnet on the square
  const RISE_US = 30000; // the field rises (and falls) over 30 ms as the piece comes down (is lifted)
  const NOISE = 0.003; // V rms
  // each square's field moves from where it was towards its target (a piece's magnet or none) over RISE_US,
  // starting at the change: a piece put back while its field is still falling rises from there
  const from = board.occ.map((on) => (on ? FULL : 0));
  const to = [...from];
  const t0 = new Array(64).fill(-1e12);
  const field = (sq, us) => {
    const k = Math.min(1, Math.max(0, (us - t0[sq]) / RISE_US));
    return from[sq] + (to[sq] - from[sq]) * k * k * (3 - 2 * k);
  };
  board.listeners.push((kind, sq, on, us) => {
    if (kind !== 'square') return;
    from[sq] = field(sq, us);
    to[sq] = on ? FULL : 0;
    t0[sq] = us;
  });
  const adc = pico.mcu.adc;
  adc.onADCRead = (channel) => {
    const us = pico.micros;
    let volts = 0; // no mux enabled: SIG floats, the input reads near 0 through its leakage
    if (channel === 0) {
      const on = EN.map((p) => level[p] === 0);
      const m = on.indexOf(true);
      if (m >= 0 && on.lastIndexOf(true) === m) {
        const ch = level[SEL[0]] | (level[SEL[1]] << 1) | (level[SEL[2]] << 2) | (level[SEL[3]] << 3);
        const sq = 16 * m + ch;
        volts = VCC / 2 + offset[sq] + field(sq, us) + NOISE * gauss(rand);
      }
    }
    const code = Math.max(0, Math.min(4095, Math.round((volts / VCC) * 4095)));
    const a = pico.alarm(() => adc.completeADCRead(code, false));
    a.schedule(adc.sampleTime * 1000);
  };
}

// ---- WS2812 strip on GP22: the frames the firmware sends ----------------------------------------------------
function attachLeds(pico) {
  const pin = pico.mcu.gpio[LED_PIN];
  const out = { pixels: [], frames: 0 };
  let bits = [];
  let rise = -1;
  const nanos = () => pico.sim.clock.nanos;
  const latch = pico.alarm(() => {
    if (bits.length >= 24) {
      const px = [];
      for (let i = 0; i + 24 <= bits.length; i += 24) {
        const byte = (o) => bits.slice(i + o, i + o + 8).reduce((a, b) => (a << 1) | b, 0);
        px.push([byte(8), byte(0), byte(16)]); // G R B on the wire -> [r, g, b]
      }
      out.pixels = px;
      out.frames++;
    }
    bits = [];
  });
  pin.addListener((state, old) => {
    if (state === 1 && old === 0) {
      rise = nanos();
      latch.cancel();
    } else if (state === 0 && old === 1 && rise >= 0) {
      bits.push(nanos() - rise > 550 ? 1 : 0);
      rise = -1;
      latch.schedule(50000);
    }
  });
  return out;
}

// An emulated Raspberry Pi Pico for the tests: the stock MicroPython image in rp2040js, its QSPI flash
// (flash.mjs), its USB CDC relayed to a pseudo-terminal, and a chessboard's sensors, buttons and LEDs at the
// pins (sensors.mjs). Driven by tests/pico/emulator.py: JSON lines in on stdin (ops), JSON lines out on stdout
// (events); the pty master is passed in as an open file descriptor.
//
//   node pico.mjs install --image X.uf2 --bootrom B.bin [--flash-in F] --flash-out F --files manifest.json
//   node pico.mjs run --bootrom B.bin --flash-in F --pty-fd N --driver hc165 [--clock-start-ms T]
import fs from 'node:fs';
import { Simulator, USBCDC } from 'rp2040js';
import { attachFlash } from './flash.mjs';
import { Chessboard, attachSensors } from './sensors.mjs';

const FLASH_BASE = 0x10000000;
const DEFAULT_UNIQUE_ID = 'e661385283275a2c'; // the flash chip's unique id: machine.unique_id(), the board id
const EP_IN_BUFFER_CONTROL = 0x80; // + 8 * endpoint (the device's IN buffer control words in DPRAM)
const BUF_AVAILABLE = (1 << 10) | (1 << 26);
const HOST_CHUNK = 64; // bytes handed to the device each emulated millisecond, at most (its RX buffer drops overflow)
const WDT_TIMER = 1; // WATCHDOG REASON bits
const WDT_FORCE = 2;

function parseArgs(argv) {
  const out = { mode: argv[0] };
  for (let i = 1; i < argv.length; i += 2) out[argv[i].replace(/^--/, '').replace(/-/g, '_')] = argv[i + 1];
  return out;
}

const emit = (obj) => process.stdout.write(JSON.stringify(obj) + '\n');
const log = (msg) => process.stderr.write(`pico: ${msg}\n`);

function loadUF2(mcu, path) {
  const data = fs.readFileSync(path);
  for (let off = 0; off + 512 <= data.length; off += 512) {
    const magic0 = data.readUInt32LE(off);
    const magic1 = data.readUInt32LE(off + 4);
    if (magic0 !== 0x0a324655 || magic1 !== 0x9e5d5157) throw new Error(`${path}: not a UF2 block at ${off}`);
    const addr = data.readUInt32LE(off + 12);
    const size = data.readUInt32LE(off + 16);
    mcu.flash.set(data.subarray(off + 32, off + 32 + size), addr - FLASH_BASE);
  }
}

// One power-up of the chip: a new Simulator with the flash as it was, the watchdog's reset reason kept.
class Pico {
  constructor(opts, flash, reason, onReset) {
    this.sim = new Simulator();
    const mcu = (this.mcu = this.sim.rp2040);
    mcu.logger = { debug() {}, info() {}, warn() {}, error: (n, m) => log(`${n}: ${m}`) };
    mcu.loadBootrom(new Uint32Array(new Uint8Array(fs.readFileSync(opts.bootrom)).buffer));
    if (flash) mcu.flash.set(flash);
    if (opts.image) loadUF2(mcu, opts.image);
    if (opts.clock_start_ms) this.sim.clock.nanosCounter = Number(opts.clock_start_ms) * 1e6;
    this.flashStats = attachFlash(mcu, [...Buffer.from(opts.unique_id || DEFAULT_UNIQUE_ID, 'hex')]);
    const wd = mcu.peripherals[0x40058];
    wd.reason = reason;
    wd.onWatchdogTrigger = () => {
      const why = wd.reason;
      wd.alarm.enable = false;
      wd.timer.enable = false;
      wd.enable = false;
      this.sim.stop();
      this.dead = true;
      setImmediate(() => onReset(why));
    };
    this.cdc = new USBCDC(mcu.usbCtrl);
    this.connected = false;
    this.cdc.onDeviceConnected = () => {
      this.connected = true;
      this.onConnected?.();
    };
    this.cdc.onSerialData = (buf) => this.onSerialData?.(buf);
    // A USB host sends an OUT packet only when it has data. rp2040js's CDC answers every OUT buffer the device
    // arms at once, with a zero-length packet when it has nothing to send: TinyUSB re-arms it and gets the next
    // one 10 µs later, about 20,000 USB interrupts a second that no real host causes, and the core never sleeps
    // (every WFE of MicroPython's idle loop finds the event an interrupt's return left). So an armed OUT buffer
    // waits here until the host has bytes for it (sendOut).
    const usb0 = mcu.usbCtrl;
    const cdcRead = usb0.onEndpointRead;
    this.outArmed = -1; // the size of the OUT buffer the device armed while the host had nothing, or -1
    this.cdcRead = cdcRead;
    usb0.onEndpointRead = (endpoint, size) => {
      if (endpoint === this.cdc.outEndpoint && this.cdc.txFIFO.empty) {
        this.outArmed = size;
        return;
      }
      cdcRead(endpoint, size);
    };
    this.inHeld = null; // DPRAM offset of an IN buffer the host has not taken yet
    this.holdIn = () => false;
    const usb = mcu.usbCtrl;
    const dpramUpdated = usb.DPRAMUpdated.bind(usb);
    this.dpramUpdated = dpramUpdated;
    usb.DPRAMUpdated = (offset, value) => {
      const ep = this.cdc.inEndpoint;
      if (ep > 0 && offset === EP_IN_BUFFER_CONTROL + 8 * ep && value & BUF_AVAILABLE && this.holdIn()) {
        this.inHeld = offset; // the host polls no IN tokens: the device's buffer stays full
        return;
      }
      dpramUpdated(offset, value);
    };
    this.dead = false;
  }

  // The host's bytes queued in the CDC's FIFO go out in the OUT buffer the device armed (if it is waiting).
  sendOut() {
    if (this.outArmed < 0 || this.cdc.txFIFO.empty || this.dead) return;
    const size = this.outArmed;
    this.outArmed = -1;
    this.cdcRead(this.cdc.outEndpoint, size);
  }

  releaseIn() {
    if (this.inHeld === null || this.dead) return;
    const off = this.inHeld;
    this.inHeld = null;
    this.dpramUpdated(off, this.mcu.usbDPRAMView.getUint32(off, true));
  }

  get micros() {
    return this.sim.clock.nanos / 1000;
  }

  start() {
    this.mcu.core.PC = FLASH_BASE;
    this.sim.execute();
  }

  alarm(fn) {
    return this.sim.clock.createAlarm(fn);
  }
}

// MicroPython's GC heap as gc.mem_free() / gc.mem_alloc() count it, read from RAM: the heap's area record in
// mp_state_ctx (alloc table start, its length in bytes, finaliser table start, pool start, pool end) is found
// by its shape, then the allocation table's 2-bit block states are counted (0 = free; 16-byte blocks).
function gcHeap(mcu) {
  const RAM = 0x20000000;
  const ram = mcu.sramView;
  const words = mcu.sram.length >> 2;
  const inRam = (a) => a >= RAM && a < RAM + mcu.sram.length;
  for (let i = 0; i + 5 <= words; i++) {
    const atb = ram.getUint32(4 * i, true);
    const len = ram.getUint32(4 * i + 4, true);
    const ftb = ram.getUint32(4 * i + 8, true);
    const pool = ram.getUint32(4 * i + 12, true);
    const end = ram.getUint32(4 * i + 16, true);
    // the finaliser table follows the allocation table (1.28 leaves a byte between them)
    if (!inRam(atb) || !inRam(end) || len < 256 || ftb < atb + len || ftb > atb + len + 16 || pool <= ftb) continue;
    if (end <= pool) continue;
    const blocks = len * 4;
    if ((end - pool) !== blocks * 16) continue;
    let free = 0;
    let run = 0;
    let longest = 0; // the longest run of free blocks: the largest allocation that can succeed
    for (let b = 0; b < len; b++) {
      const v = mcu.sram[atb - RAM + b];
      for (let k = 0; k < 4; k++) {
        if (((v >> (2 * k)) & 3) === 0) {
          free++;
          run++;
          if (run > longest) longest = run;
        } else run = 0;
      }
    }
    return { heap_total: blocks * 16, heap_free: free * 16, heap_largest_free: longest * 16 };
  }
  return { heap_total: null, heap_free: null, heap_largest_free: null };
}

// ---- install: write files through the raw REPL, as mpremote does ------------------------------------------
async function install(opts) {
  const flash = opts.flash_in ? fs.readFileSync(opts.flash_in) : null;
  const files = JSON.parse(fs.readFileSync(opts.files, 'utf8')); // [[device path, host path], ...]
  const pico = new Pico({ ...opts, image: flash ? null : opts.image }, flash, 0, (why) => {
    throw new Error(`reset during install (reason ${why})`);
  });
  if (flash && opts.image) loadUF2(pico.mcu, opts.image);
  let rxText = '';
  pico.onSerialData = (buf) => {
    rxText += Buffer.from(buf).toString('latin1');
  };
  const sendQueue = [];
  const pump = pico.alarm(() => {
    for (let i = 0; i < HOST_CHUNK && sendQueue.length && !pico.cdc.txFIFO.full; i++) {
      pico.cdc.sendSerialByte(sendQueue.shift());
    }
    pico.sendOut();
    pump.schedule(1e6);
  });
  const connected = new Promise((resolve) => {
    pico.onConnected = resolve;
  });
  pump.schedule(1e6);
  pico.start();
  const dbg = process.env.PICO_DEBUG ? setInterval(() => log(`t=${Math.round(pico.micros)}us rx=${JSON.stringify(rxText.slice(-120))}`), 1000) : null;
  await connected;
  if (process.env.PICO_DEBUG) log('usb connected');
  const send = (s) => sendQueue.push(...Buffer.from(s, 'latin1'));
  const waitFor = async (marker, what, ms = 60000) => {
    const t0 = Date.now();
    while (!rxText.includes(marker)) {
      if (Date.now() - t0 > ms) throw new Error(`install: no ${what} (got ${JSON.stringify(rxText.slice(-300))})`);
      await new Promise((r) => setTimeout(r, 5));
    }
    const i = rxText.indexOf(marker) + marker.length;
    const before = rxText.slice(0, i);
    rxText = rxText.slice(i);
    return before;
  };
  send('\r\x03\x03');
  await new Promise((r) => setTimeout(r, 300));
  send('\r\x01');
  await waitFor('raw REPL; CTRL-B to exit\r\n>', 'raw REPL prompt');
  const exec = async (code) => {
    send(code + '\x04');
    const reply = await waitFor('\x04>', 'raw REPL reply');
    const m = /OK([\s\S]*)\x04([\s\S]*)\x04>$/.exec(reply);
    if (!m) throw new Error(`install: bad raw REPL reply ${JSON.stringify(reply)}`);
    if (m[2]) throw new Error(`install: ${code.slice(0, 80)}: ${m[2]}`);
    return m[1];
  };
  await exec("import os\ndef mk(p):\n try: os.mkdir(p)\n except OSError: pass\n");
  let total = 0;
  for (const [dev, host] of files) {
    const data = fs.readFileSync(host);
    const parts = dev.split('/');
    for (let i = 1; i < parts.length; i++) await exec(`mk(${JSON.stringify(parts.slice(0, i).join('/'))})`);
    await exec(`f=open(${JSON.stringify(dev)},'wb')\nw=f.write`);
    for (let off = 0; off < data.length; off += 160) {
      await exec(`w(bytes.fromhex('${data.subarray(off, off + 160).toString('hex')}'))`);
    }
    await exec('f.close()');
    const size = (await exec(`print(os.stat(${JSON.stringify(dev)})[6])`)).trim();
    if (Number(size) !== data.length) throw new Error(`install: ${dev} is ${size} bytes, not ${data.length}`);
    total += data.length;
  }
  const listing = (await exec("print(sorted(os.listdir('/')))")).trim();
  pico.sim.stop();
  fs.writeFileSync(opts.flash_out, pico.mcu.flash);
  emit({ ev: 'installed', files: files.length, bytes: total, root: listing, emulated_us: Math.round(pico.micros),
         flash_programs: pico.flashStats.programs, flash_erases: pico.flashStats.erases });
}

// ---- run: the board on a pty -------------------------------------------------------------------------------
function run(opts) {
  const ptyFd = Number(opts.pty_fd);
  const board = new Chessboard();
  if (opts.occ) board.setOcc(opts.occ, 0); // the pieces on the board at power-up
  if (opts.hold_button) board.buttons[opts.hold_button] = true; // held at power-up (safe boot)
  let pico = null;
  let boots = 0;
  let hostOpen = false; // a process has the pty's slave open (master reads do not fail with EIO)
  let ptyFull = false;
  let holdUntilUs = -1; // the host takes nothing from the IN endpoint until then (emulated µs)
  const toDevice = []; // bytes from the host not yet handed to the device
  let toHost = Buffer.alloc(0); // bytes from the device not yet written to the pty
  let lineBuf = '';
  let sensors = null;
  const timelines = [];

  const holdIn = () => !hostOpen || ptyFull || (holdUntilUs >= 0 && pico.micros < holdUntilUs);

  const writePty = () => {
    while (toHost.length) {
      let n = 0;
      try {
        n = fs.writeSync(ptyFd, toHost);
      } catch (e) {
        if (e.code === 'EAGAIN' || e.code === 'EIO') {
          ptyFull = e.code === 'EAGAIN';
          return;
        }
        throw e;
      }
      toHost = toHost.subarray(n);
    }
    ptyFull = false;
  };

  const onSerialData = (buf) => {
    const t = Math.round(pico.micros);
    toHost = Buffer.concat([toHost, Buffer.from(buf)]);
    lineBuf += Buffer.from(buf).toString('latin1');
    let i;
    while ((i = lineBuf.indexOf('\n')) >= 0) {
      emit({ ev: 'line', us: t, text: lineBuf.slice(0, i).replace(/\r$/, '') });
      lineBuf = lineBuf.slice(i + 1);
    }
    writePty();
  };

  const readPty = () => {
    const buf = Buffer.alloc(1024);
    for (;;) {
      let n = 0;
      try {
        n = fs.readSync(ptyFd, buf, 0, buf.length, null);
      } catch (e) {
        if (e.code === 'EAGAIN') {
          setHost(true);
          return;
        }
        if (e.code === 'EIO') {
          setHost(false);
          return;
        }
        throw e;
      }
      if (n <= 0) return;
      setHost(true);
      for (let k = 0; k < n; k++) toDevice.push(buf[k]);
    }
  };

  const setHost = (open) => {
    if (open === hostOpen) return;
    hostOpen = open;
    emit({ ev: 'host', open, us: pico ? Math.round(pico.micros) : 0 });
    if (pico && pico.connected && !pico.dead) pico.cdc.cdcSetControlLineState(open ? 3 : 0); // DTR | RTS
    if (!open) toHost = Buffer.alloc(0); // nobody has the port open: what was in the tty is gone
  };

  const boot = (reason) => {
    const flash = pico ? Buffer.from(pico.mcu.flash) : fs.readFileSync(opts.flash_in);
    const first = pico === null;
    pico = new Pico({ ...opts, image: null, clock_start_ms: first ? opts.clock_start_ms : null }, flash, reason,
      (why) => {
        emit({ ev: 'reset', cause: why === WDT_FORCE ? 'machine.reset' : 'watchdog', us: Math.round(pico.micros) });
        boot(why === WDT_FORCE ? WDT_FORCE : WDT_TIMER);
      });
    if (!first && opts.clock_start_ms) {
      // the timer starts from 0 at a power-up; the emulator's clock is monotonic for this process only
    }
    boots++;
    pico.holdIn = holdIn;
    pico.onSerialData = onSerialData;
    pico.onConnected = () => {
      // the CDC endpoints the host found in the image's configuration descriptor (the data interface's bulk IN
      // and OUT endpoint numbers), as a PC's driver does
      emit({ ev: 'usb', connected: true, in_ep: pico.cdc.inEndpoint, out_ep: pico.cdc.outEndpoint,
             us: Math.round(pico.micros) });
      if (!hostOpen) pico.cdc.cdcSetControlLineState(0);
    };
    sensors = attachSensors(pico, board, opts.driver || 'none', emit);
    const pump = pico.alarm(() => {
      if (!pico.cdc.txFIFO.full && toDevice.length) {
        for (let i = 0; i < HOST_CHUNK && toDevice.length && !pico.cdc.txFIFO.full; i++) {
          pico.cdc.sendSerialByte(toDevice.shift());
        }
        pico.sendOut();
      }
      if (!holdIn()) pico.releaseIn();
      pump.schedule(1e6);
    });
    pump.schedule(1e6);
    for (const tl of timelines) tl.rearm();
    emit({ ev: 'boot', n: boots, reason, us: Math.round(pico.micros) });
    pico.start();
  };

  // A timeline: sensor changes and button presses at emulated times (ms after it was given), in the order of t;
  // also marks, USB holds, sensor faults, a level on a spare pin (pin, level), a line from the host (send), a
  // reading of the heap (heap: a mark) and of the scans seen at the pins (scans: "reset" or "read").
  class Timeline {
    constructor(id, events) {
      this.id = id;
      this.events = events;
      this.i = 0;
      this.startUs = pico.micros;
      this.rearm();
    }
    rearm() {
      this.alarm = pico.alarm(() => this.fire());
      this.next();
    }
    next() {
      if (this.i >= this.events.length) {
        emit({ ev: 'timeline_done', id: this.id, us: Math.round(pico.micros) });
        return;
      }
      const due = this.startUs + this.events[this.i].t * 1000;
      this.alarm.schedule(Math.max(0, due - pico.micros) * 1000);
    }
    fire() {
      const e = this.events[this.i++];
      if (e.occ !== undefined) board.setOcc(e.occ, pico.micros);
      if (e.press !== undefined) board.press(e.press, pico.micros, e.ms ?? 80);
      if (e.mark !== undefined) emit({ ev: 'mark', mark: e.mark, us: Math.round(pico.micros) });
      if (e.hold !== undefined) ops.usb_hold({ ms: e.hold, id: this.id });
      if (e.fault !== undefined) sensors.fault(e.fault);
      if (e.pin !== undefined) {
        pico.mcu.gpio[e.pin].setInputValue(!!e.level); // a test's own signal to its boot.py
        emit({ ev: 'pin', pin: e.pin, level: e.level, us: Math.round(pico.micros) });
      }
      if (e.send !== undefined) {
        // a line from the host, queued whole after what the host process wrote before it
        for (const b of Buffer.from(e.send, 'latin1')) toDevice.push(b);
        emit({ ev: 'sent', id: this.id, us: Math.round(pico.micros), bytes: e.send.length });
      }
      if (e.heap !== undefined) emit({ ev: 'heap', mark: e.heap, us: Math.round(pico.micros), ...gcHeap(pico.mcu) });
      if (e.scans !== undefined) {
        // "reset": count scans at the pins from now; "read": the count and the longest gap since
        emit({ ev: 'scans', mark: e.scans, us: Math.round(pico.micros), ...sensors.scans(e.scans === 'reset') });
      }
      this.next();
    }
  }

  const ops = {
    occ: (o) => board.setOcc(o.occ, pico.micros),
    timeline: (o) => timelines.push(new Timeline(o.id ?? timelines.length, o.events)),
    usb_hold: (o) => {
      holdUntilUs = pico.micros + o.ms * 1000;
      emit({ ev: 'usb_hold', until_us: Math.round(holdUntilUs), id: o.id });
      const a = pico.alarm(() => emit({ ev: 'usb_hold_end', us: Math.round(pico.micros), id: o.id }));
      a.schedule(o.ms * 1e6);
    },
    fault: (o) => sensors.fault(o),
    button: (o) => board.setButton(o.name, o.down, pico.micros),
    time: (o) => emit({ ev: 'time', us: Math.round(pico.micros), id: o.id }),
    leds: (o) => emit({ ev: 'leds', id: o.id, pixels: sensors.leds.pixels, frames: sensors.leds.frames }),
    heap: (o) => emit({ ev: 'heap', id: o.id, us: Math.round(pico.micros), ...gcHeap(pico.mcu) }),
    // scans seen at the pins since the last reset of the count: how many, the longest gap between two
    scans: (o) => emit({ ev: 'scans', id: o.id, us: Math.round(pico.micros), ...sensors.scans(!!o.reset) }),
    save: (o) => {
      fs.writeFileSync(o.path, pico.mcu.flash);
      emit({ ev: 'saved', id: o.id });
    },
    quit: () => {
      pico.sim.stop();
      process.exit(0);
    },
  };

  let ctl = '';
  process.stdin.on('data', (d) => {
    ctl += d.toString();
    let i;
    while ((i = ctl.indexOf('\n')) >= 0) {
      const line = ctl.slice(0, i);
      ctl = ctl.slice(i + 1);
      if (!line.trim()) continue;
      const o = JSON.parse(line);
      const op = ops[o.op];
      if (!op) emit({ ev: 'error', why: `unknown op ${o.op}` });
      else op(o);
    }
  });
  process.stdin.on('end', () => ops.quit());
  setInterval(() => {
    readPty();
    writePty();
  }, 3);
  readPty();
  boot(0);
}

const opts = parseArgs(process.argv.slice(2));
if (opts.mode === 'install') {
  install(opts).then(
    () => process.exit(0),
    (e) => {
      log(e.message);
      process.exit(1);
    },
  );
} else if (opts.mode === 'run') {
  run(opts);
} else {
  log('usage: pico.mjs install|run ...');
  process.exit(2);
}

// The Pico's QSPI flash chip (a W25Q16-class part: 2 MiB), answered at the SSI data register while the chip
// select is forced low through IO_QSPI. rp2040js 1.4.1 emulates reads of flash (XIP) but not the command path
// the boot ROM's flash functions use to erase and program it, so MicroPython's littlefs filesystem cannot be
// formatted or written without this.
//
// Facts from the datasheets (RP2040 2.3.1.3 / 4.10 SSI, 2.19.6 IO_QSPI; Winbond W25Q16JV 8.1-8.2):
//   IO_QSPI GPIO_QSPI_SS_CTRL (offset 0x0c), OUTOVER bits 9:8: 2 = drive low (selected), 3 = drive high.
//   SSI DR0 (0x60) is full duplex: one byte written, one byte received; TXFLR 0x20, RXFLR 0x24, SR 0x28
//   (TFNF bit 1, TFE bit 2, RFNE bit 3).
//   Commands: 0x06 write enable, 0x05 read status 1 (bit 0 BUSY), 0x02 page program (ANDs into the array,
//   the address wraps inside its 256-byte page), 0x20 / 0x52 / 0xD8 erase 4 / 32 / 64 KiB to 0xFF,
//   0x03 read data, 0x9F JEDEC id (EF 40 15 for a 2 MiB W25Q16), 0x4B unique id (4 dummy bytes, 8 id bytes).

const SS_CTRL = 0x0c;
const SSI_TXFLR = 0x20;
const SSI_RXFLR = 0x24;
const SSI_SR = 0x28;
const SSI_DR0 = 0x60;
const PAGE = 256;

export function attachFlash(mcu, uniqueId) {
  const flash = mcu.flash;
  const ssi = mcu.peripherals[0x18000];
  const ioqspi = mcu.peripherals[0x40018];
  const regs = new Map();
  let selected = false;
  let cmd = []; // the bytes of the current transaction
  const rx = []; // bytes the chip sent back, not yet read
  const stats = { programs: 0, erases: 0 };

  const reply = (bytes) => {
    const n = bytes.length - 1; // index of the byte just written
    const op = bytes[0];
    if (op === 0x05) return 0x00; // never busy: programs and erases complete at once
    if (op === 0x9f) return [0xef, 0x40, 0x15][n - 1] ?? 0;
    if (op === 0x4b) return n >= 5 && n <= 12 ? uniqueId[n - 5] : 0;
    if (op === 0x03 && n >= 4) {
      const addr = ((bytes[1] << 16) | (bytes[2] << 8) | bytes[3]) + (n - 4);
      return flash[addr % flash.length];
    }
    return 0;
  };

  const finish = (bytes) => {
    const op = bytes[0];
    if (process.env.PICO_FLASH_DEBUG) process.stderr.write(`flash cmd ${bytes.slice(0, 6).map((b) => b.toString(16)).join(' ')} (${bytes.length})\n`);
    const addr = (bytes[1] << 16) | (bytes[2] << 8) | bytes[3];
    if (op === 0x02 && bytes.length > 4) {
      const base = addr & ~(PAGE - 1);
      for (let i = 4; i < bytes.length; i++) {
        const a = base + ((addr + i - 4) & (PAGE - 1));
        flash[a] &= bytes[i];
      }
      stats.programs++;
    } else if (op === 0x20 || op === 0x52 || op === 0xd8) {
      const size = op === 0x20 ? 4096 : op === 0x52 ? 32768 : 65536;
      const base = addr & ~(size - 1);
      flash.fill(0xff, base, base + size);
      stats.erases++;
    }
  };

  ioqspi.readUint32 = (offset) => regs.get(offset) ?? 0;
  ioqspi.writeUint32 = (offset, value) => {
    regs.set(offset, value);
    if (offset !== SS_CTRL) return;
    const over = (value >> 8) & 3;
    if (over === 2 && !selected) {
      selected = true;
      cmd = [];
      rx.length = 0;
    } else if (over !== 2 && selected) {
      selected = false;
      if (cmd.length) finish(cmd);
      cmd = [];
    }
  };

  const ssiRead = ssi.readUint32.bind(ssi);
  const ssiWrite = ssi.writeUint32.bind(ssi);
  // The SSI is full duplex whether or not the chip is selected (the ROM clocks bytes with CS high to leave
  // continuous-read mode): every byte written gives one byte to read.
  ssi.readUint32 = (offset) => {
    switch (offset) {
      case SSI_DR0:
        return rx.length ? rx.shift() : 0;
      case SSI_RXFLR:
        return rx.length;
      case SSI_TXFLR:
        return 0;
      case SSI_SR:
        return 0x06 | (rx.length ? 0x08 : 0);
      default:
        return ssiRead(offset);
    }
  };
  ssi.writeUint32 = (offset, value) => {
    if (offset === SSI_DR0) {
      if (selected) {
        cmd.push(value & 0xff);
        rx.push(reply(cmd));
      } else rx.push(0);
      return;
    }
    ssiWrite(offset, value);
  };
  return stats;
}

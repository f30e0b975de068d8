"""Each supported board's valid pins, written down from MicroPython's port documentation and the chips' own
documentation, to check the firmware's board profiles against (test_fw_hardware.py).

Sources:
- RP2040 datasheet, section 1.4.3 "GPIO Functions" (the SPI/I2C/UART function of every GPIO); Raspberry Pi
  Pico and Pico W datasheets (GP23, GP24, GP25 and GP29 are used on the board: SMPS power save / wireless
  chip, VBUS sense / wireless, LED / wireless, VSYS/3 on ADC3; GP26-28 are ADC0-2); MicroPython's rp2 quick
  reference (machine.SPI / I2C / UART ids 0 and 1; machine.WDT timeout at most 8388 ms on rp2).
- ESP32-S3 datasheet, section 2 "Pins" (GPIO0-21 and GPIO26-48; no GPIO22-25), the strapping pins (GPIO0,
  GPIO3, GPIO45, GPIO46), the SPI flash/PSRAM pins (GPIO26-32, plus GPIO33-37 with octal PSRAM), USB D-/D+
  on GPIO19/GPIO20, ADC1 on GPIO1-10 and ADC2 on GPIO11-20 (ADC2 is unavailable while Wi-Fi runs);
  ESP32-S3-DevKitC-1 user guide (GPIO43/44 are UART0 on the USB-to-UART bridge, the RGB LED is on GPIO38
  on v1.1 boards and GPIO48 on v1.0); MicroPython's esp32 quick reference (hardware SPI ids 1 and 2, I2C ids
  0 and 1, UART ids 0-2, all routed to any GPIO through the GPIO matrix; UART0 is the REPL).
"""

from __future__ import annotations

RP2040_PICO = {
    "port": "rp2",
    "gpios": set(range(0, 23)) | {26, 27, 28},
    "avoid": {23: "SMPS power save / CYW43", 24: "VBUS sense / CYW43", 25: "LED / CYW43", 29: "VSYS/3 (ADC3)"},
    "adc": {26, 27, 28},
    "spi": {
        0: {"sck": {2, 6, 18, 22}, "mosi": {3, 7, 19}, "miso": {0, 4, 16, 20}},
        1: {"sck": {10, 14, 26}, "mosi": {11, 15, 27}, "miso": {8, 12, 28}},
    },
    "i2c": {
        0: {"sda": {0, 4, 8, 12, 16, 20, 28}, "scl": {1, 5, 9, 13, 17, 21}},
        1: {"sda": {2, 6, 10, 14, 18, 26}, "scl": {3, 7, 11, 15, 19, 27}},
    },
    "uart": {
        0: {"uart_tx": {0, 12, 16, 28}, "uart_rx": {1, 13, 17}},
        1: {"uart_tx": {4, 8, 20}, "uart_rx": {5, 9, 21}},
    },
    "wdt_max_ms": 8388,
}

_S3_ANY = set(range(0, 22)) | set(range(26, 49))
ESP32S3_DEVKITC = {
    "port": "esp32",
    "gpios": _S3_ANY,
    "avoid": {
        0: "strapping (boot mode)", 3: "strapping (JTAG source)", 45: "strapping (VDD_SPI)", 46: "strapping",
        19: "USB D-", 20: "USB D+", **{g: "SPI flash / PSRAM" for g in range(26, 33)},
        **{g: "octal PSRAM (N8R8 modules)" for g in range(33, 38)}, 43: "UART0 TX (USB-UART bridge)",
        44: "UART0 RX (USB-UART bridge)", 38: "RGB LED (DevKitC-1 v1.1)", 48: "RGB LED (DevKitC-1 v1.0)",
    },
    "adc": set(range(1, 11)),  # ADC1 only: ADC2 stops while Wi-Fi runs
    "spi": {1: None, 2: None},  # any GPIO (GPIO matrix); SPI(0) does not exist in MicroPython's esp32 port
    "i2c": {0: None, 1: None},
    "uart": {1: None, 2: None},  # UART0 is the REPL on GPIO43/44
    "wdt_max_ms": None,  # no port limit documented; the firmware caps it at 60 s
}

BOARDS = {"pico": RP2040_PICO, "pico_w": RP2040_PICO, "esp32s3_devkitc": ESP32S3_DEVKITC}

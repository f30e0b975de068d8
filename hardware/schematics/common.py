"""Parts and blocks shared by the four sensing options: KiCad's symbol libraries (Debian's kicad-symbols,
KiCad 6 format), the Raspberry Pi Pico (no KiCad 6 symbol: defined here from its datasheet pinout), the
DRV5053 linear hall sensor (not in KiCad 6's library either), power nets, clock buttons and the LED output."""

from __future__ import annotations

import os

SYMBOLS = os.environ.get("KICAD_SYMBOL_DIR", "/usr/share/kicad/symbols")
os.environ.setdefault("KICAD6_SYMBOL_DIR", SYMBOLS)

import skidl  # noqa: E402
from skidl import KICAD6, Net, Part, Pin  # noqa: E402

skidl.set_default_tool(KICAD6)

FP = {
    "R": "Resistor_THT:R_Axial_DIN0207_L6.3mm_D2.5mm_P10.16mm_Horizontal",
    "C": "Capacitor_THT:C_Disc_D5.0mm_W2.5mm_P5.00mm",
    "CP": "Capacitor_THT:CP_Radial_D5.0mm_P2.00mm",
    "RN": "Resistor_THT:R_Array_SIP9",
    "DIP16": "Package_DIP:DIP-16_W7.62mm",
    "DIP28": "Package_DIP:DIP-28_W7.62mm",
    "SOIC24W": "Package_SO:SOIC-24W_7.5x15.4mm_P1.27mm",
    "SOT23-5": "Package_TO_SOT_SMD:SOT-23-5",
    # a glass reed switch 2 x 14 mm: leads bent to a 20.32 mm axial footprint
    "REED": "Resistor_THT:R_Axial_DIN0414_L11.9mm_D4.5mm_P20.32mm_Horizontal",
    "D": "Diode_THT:D_DO-35_SOD27_P7.62mm_Horizontal",
    "BTN": "Button_Switch_THT:SW_PUSH_6mm",
    "TO92": "Package_TO_SOT_THT:TO-92_Inline",
    "XH3": "Connector_JST:JST_XH_B3B-XH-A_1x03_P2.50mm_Vertical",
    "XH4": "Connector_JST:JST_XH_B4B-XH-A_1x04_P2.50mm_Vertical",
    "XH6": "Connector_JST:JST_XH_B6B-XH-A_1x06_P2.50mm_Vertical",
    "WS2812B": "LED_SMD:LED_WS2812B_PLCC4_5.0x5.0mm_P3.2mm",
    "C0805": "Capacitor_SMD:C_0805_2012Metric",
    "PAD3": "Connector_PinHeader_2.54mm:PinHeader_1x03_P2.54mm_Vertical",
    # not in KiCad 6's footprint library: shipped in hardware/footprints/touchmove.pretty (the module's
    # 2 x 20 through-hole pads, Pico datasheet's mechanical drawing)
    "PICO": "touchmove:RaspberryPi_Pico_THT",
    # the DevKitC-1's two headers: two sockets placed per Espressif's board drawing
    "SOCKET22": "Connector_PinSocket_2.54mm:PinSocket_1x22_P2.54mm_Vertical",
}

# Raspberry Pi Pico / Pico W pinout (Pico datasheet, "Pinout"): physical pin -> name.
PICO_PINS = {
    1: "GP0", 2: "GP1", 3: "GND", 4: "GP2", 5: "GP3", 6: "GP4", 7: "GP5", 8: "GND", 9: "GP6", 10: "GP7",
    11: "GP8", 12: "GP9", 13: "GND", 14: "GP10", 15: "GP11", 16: "GP12", 17: "GP13", 18: "GND", 19: "GP14",
    20: "GP15", 21: "GP16", 22: "GP17", 23: "GND", 24: "GP18", 25: "GP19", 26: "GP20", 27: "GP21", 28: "GND",
    29: "GP22", 30: "RUN", 31: "GP26", 32: "GP27", 33: "AGND", 34: "GP28", 35: "ADC_VREF", 36: "3V3",
    37: "3V3_EN", 38: "GND", 39: "VSYS", 40: "VBUS",
}




def nc() -> skidl.Net:
    """The current circuit's no-connect net (pins left open on purpose)."""
    import builtins

    return builtins.NC  # type: ignore[attr-defined]


def pico(ref: str = "U1") -> Part:
    """The Pico module, drawn as a 2 x 20 header numbered like the module (KiCad 6 has no Pico symbol);
    its pins are passive, so the power nets it feeds are flagged as driven (Board.finish)."""
    u = Part("Connector_Generic", "Conn_02x20_Counter_Clockwise", ref=ref, tag=ref, value="Raspberry Pi Pico",
             footprint=FP["PICO"])
    return u


def drv5053(ref: str) -> Part:
    """A DRV5053 linear hall sensor (TO-92: 1 VCC, 2 GND, 3 OUT), drawn with KiCad's DRV5055 TO-92 symbol,
    which has the same pinout (KiCad 6 has no DRV5053)."""
    return Part("Sensor_Magnetic", "DRV5055A1xLPGxQ1", ref=ref, tag=ref, value="DRV5053RAQLPG",
                footprint=FP["TO92"])


def lib(libname: str, name: str, ref: str, value: str, footprint: str) -> Part:
    """A part from KiCad's symbol libraries with a fixed reference and tag (stable netlists)."""
    return Part(libname, name, ref=ref, tag=ref, value=value, footprint=FP[footprint])


# ESP32-S3-DevKitC-1 (Espressif user guide, "Header Block"): header J1 and J3, pin -> name. 5V is the USB
# 5 V (VBUS here), 3V3 the board regulator's output; TX/RX (GPIO43/44) belong to the USB-UART bridge.
DEVKITC_J1 = {1: "3V3", 2: "3V3", 3: "RST", 4: "GPIO4", 5: "GPIO5", 6: "GPIO6", 7: "GPIO7", 8: "GPIO15",
              9: "GPIO16", 10: "GPIO17", 11: "GPIO18", 12: "GPIO8", 13: "GPIO3", 14: "GPIO46", 15: "GPIO9",
              16: "GPIO10", 17: "GPIO11", 18: "GPIO12", 19: "GPIO13", 20: "GPIO14", 21: "5V", 22: "GND"}
DEVKITC_J3 = {1: "GND", 2: "TX", 3: "RX", 4: "GPIO1", 5: "GPIO2", 6: "GPIO42", 7: "GPIO41", 8: "GPIO40",
              9: "GPIO39", 10: "GPIO38", 11: "GPIO37", 12: "GPIO36", 13: "GPIO35", 14: "GPIO0", 15: "GPIO45",
              16: "GPIO48", 17: "GPIO47", 18: "GPIO21", 19: "GPIO20", 20: "GPIO19", 21: "GND", 22: "GND"}
DEVKITC = "ESP32-S3-DevKitC-1-N8R8"
# GPIO47/48 are powered from VDD_SPI: 3.3 V on modules with 3.3 V flash (WROOM-1 N8R8, drawn here), 1.8 V on
# the N32R8V's (octal 1.8 V flash and PSRAM): rules.py refuses them on a 1.8 V module.
VDD_SPI_PINS = {"GPIO47", "GPIO48"}


def esp32s3_devkitc() -> list[tuple[Part, dict[int, str]]]:
    """The DevKitC-1 as its two 1 x 22 headers (A1 = J1, A2 = J3), each on a KiCad pin socket footprint."""
    out = []
    for ref, pins in (("A1", DEVKITC_J1), ("A2", DEVKITC_J3)):
        header = "J1" if ref == "A1" else "J3"
        part = Part("Connector_Generic", "Conn_01x22", ref=ref, tag=ref, value=f"socket for {DEVKITC} {header}",
                    footprint=FP["SOCKET22"])
        out.append((part, pins))
    return out


class Board:
    """The main board every option shares: the module (a Pico, or an ESP32-S3-DevKitC-1), power nets, two
    clock buttons, the LED output."""

    def __init__(self, gpios: dict[str, int], family: str = "pico") -> None:
        self.v3 = Net("+3V3")
        self.gnd = Net("GND")
        self.vbus = Net("VBUS")
        self.family = family
        self.module = [(pico(), PICO_PINS)] if family == "pico" else esp32s3_devkitc()
        self.u = self.module[0][0]
        self.by_gpio: dict[int, tuple[Part, int]] = {}  # GPIO number -> (module part, pin number)
        for part, table in self.module:
            for num, name in table.items():
                pin = part[str(num)]
                if name in ("GND", "AGND"):
                    pin += self.gnd
                elif name == "3V3":
                    pin += self.v3
                elif name in ("VBUS", "5V"):
                    pin += self.vbus
                elif name.startswith("GP") and name[-1].isdigit():
                    self.by_gpio[int(name.lstrip("GPIO"))] = (part, num)
                else:  # VSYS (fed from VBUS on the module), RUN, 3V3_EN, ADC_VREF, RST, the USB-UART's TX/RX
                    pin += nc()
        self.gpios = gpios
        self.used: set[tuple[str, int]] = set()
        c = lib("Device", "C", "C1", "100n", "C")
        c[1] += self.v3
        c[2] += self.gnd

    def gp(self, signal: str) -> Pin:
        """The module pin carrying ``signal`` (its GPIO from the firmware's pin map)."""
        part, num = self.by_gpio[self.gpios[signal]]
        self.used.add((part.ref, num))
        return part[str(num)]

    def buttons(self) -> None:
        for i, side in enumerate(("clock_white", "clock_black")):
            sw = lib("Switch", "SW_Push", f"SW{i + 1}", "push button", "BTN")
            sw[1] += Net(side.upper())
            sw[1] += self.gp(side)
            sw[2] += self.gnd

    def leds(self) -> None:
        """The LED output. The LEDs get their own rail +5V_LED behind a TPS2041B current-limited power switch
        (soft start, 0.75-1.25 A limit): its 22 uF output capacitor and the 64 LED boards' 100 nF each are
        charged after attach, not presented to the USB port at attach (USB 2.0 7.2.4.1: 10 uF at most).
        Data: 3.3 V to 5 V logic through a 74AHCT1G125 (VCC +5V_LED, TTL input levels), 330 Ohm at the
        source, to the first per-square LED board (led_square)."""
        led = Net("+5V_LED")
        sw = lib("Power_Management", "TPS2041B", "U3", "TPS2041BDBVR", "SOT23-5")
        sw["IN"] += self.vbus
        sw["GND"] += self.gnd
        sw["~{EN}"] += self.gnd  # always on: enabled as soon as VBUS passes its under-voltage lock-out
        sw["OUT"] += led
        sw["~{OC}"] += nc()
        cin = lib("Device", "C", "C22", "1u", "C")
        cin[1] += self.vbus
        cin[2] += self.gnd
        cout = lib("Device", "C_Polarized", "C20", "22u", "CP")
        cout[1] += led
        cout[2] += self.gnd
        buf = lib("74xGxx", "74AHCT1G125", "U20", "74AHCT1G125", "SOT23-5")
        data = Net("LED_DATA_3V3")
        data += self.gp("led_data")
        # by pin number: 1 /OE, 2 A, 3 GND, 4 Y, 5 VCC (the library's names for 1, 2, 4 are mangled)
        buf[2] += data
        buf[1] += self.gnd
        buf[5] += led
        buf[3] += self.gnd
        cd = lib("Device", "C", "C21", "100n", "C")
        cd[1] += led
        cd[2] += self.gnd
        out = Net("LED_DATA_5V")
        out += buf[4]
        r = lib("Device", "R", "R20", "330", "R")
        r[1] += out
        j = lib("Connector_Generic", "Conn_01x03", "J20", "JST-XH 3p", "XH3")
        din = Net("LED_DIN")
        r[2] += din
        j[1] += led
        j[2] += din
        j[3] += self.gnd

    def finish(self) -> None:
        """Mark the GPIOs this option does not use as intentionally unconnected; drive the power nets."""
        for part, num in self.by_gpio.values():
            if (part.ref, num) not in self.used:
                part[str(num)] += nc()
        for net in (self.gnd, self.v3, self.vbus):  # the module's regulator, USB port and ground
            net.drive = skidl.POWER


def led_square() -> None:
    """One per-square LED board (64 of them, one under each square): a WS2812B with its 100 nF, a 3-pad
    input (+5 V, DIN, GND) and a 3-pad output (+5 V, DOUT, GND) to the next square's board."""
    v5, gnd = Net("+5V_LED"), Net("GND")
    din, dout = Net("DIN"), Net("DOUT")
    jin = lib("Connector_Generic", "Conn_01x03", "J1", "3 pads in", "PAD3")
    jout = lib("Connector_Generic", "Conn_01x03", "J2", "3 pads out", "PAD3")
    for j, data in ((jin, din), (jout, dout)):
        j[1] += v5
        j[2] += data
        j[3] += gnd
    led = lib("LED", "WS2812B", "D1", "WS2812B", "WS2812B")
    led["VDD"] += v5
    led["VSS"] += gnd
    led["DIN"] += din
    led["DOUT"] += dout
    c = lib("Device", "C", "C1", "100n SMD", "C0805")
    c[1] += v5
    c[2] += gnd
    for net in (v5, gnd):  # fed through the cable from the main board's power switch
        net.drive = skidl.POWER

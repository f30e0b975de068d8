# The diag command's records (bring-up): loaded only when a host asks for one.
#
#   {"type":"diag","part":"scan","driver":"hc165","raw":"<16 hex>","now":"<16 hex>","occ":"<16 hex>",
#    "chain":"ok","scan_hz":200,"scan_us":85,"scan_us_max":130,"late_ms_max":2,"dropped":0,"lost":0,
#    "bus_errors":0,"usb_in_ep":2,...}  (an I2C board adds "bus_timeouts", "bus_scl_low")
#   {"type":"diag","part":"adc","from":0,"v":[16 readings]}     x 4, analog (hall_mux) boards only
#
# raw: the sensor bytes as read, in wiring order (byte k = input 8k..8k+7), before active_low;
# now: the same sample as occupancy in square order, not debounced (the raw bit per square);
# occ: the debounced occupancy (what events report). Hex as in snapshots: a1 = bit 0.
# chain: "ok" / "dead" / "flat" from the driver's chain check (74HC165: a known tail byte), "n/a" otherwise.
from . import protocol


def _now(scanner):
    ranks = bytearray(8)
    raw = scanner.raw
    smap = scanner.smap
    for j in range(64):
        if (raw[j >> 3] >> (j & 7)) & 1:
            sq = smap[j]
            ranks[sq >> 3] |= 1 << (sq & 7)
    return ranks


def diag_lines(app):
    """Yield (kind, fields) pairs: the scan record, then the ADC records of an analog board. The app sends them
    as its output has room (App.send_lines), so each part is read when it is its turn."""
    s = app.scanner
    drv = app.driver
    wiring = bytearray(8)
    for k in range(8):
        wiring[k] = s.raw[k] ^ s.invert  # undo active_low: the levels the pins read
    check = getattr(drv, "chain_check", None)
    chain = check() if check is not None else "n/a"
    name = app.cfg.get("driver", "?")
    fields = ',"part":"scan","driver":"%s","raw":"%s","now":"%s","occ":"%s","chain":"%s"' % (
        name, protocol.occ_hex(wiring), protocol.occ_hex(_now(s)), protocol.occ_hex(s.occupancy()), chain)
    fields += ',"scan_hz":%d,"scan_us":%d,"scan_us_max":%d,"late_ms_max":%d' % (
        app.scan_hz, app.scan_us, app.scan_us_max, app.late_max)
    fields += ',"dropped":%d,"lost":%d,"bus_errors":%d' % (app.q.dropped, app.out.lost, getattr(drv, "errors", 0))
    # the USB IN endpoint the output's chunk path watches (rp2; read from the image's descriptor), 0 without one
    fields += ',"usb_in_ep":%d' % getattr(app.out.port, "in_ep", 0)
    if hasattr(drv, "timeouts"):  # an I2C board: transfers that timed out (a chip holding the bus)
        fields += ',"bus_timeouts":%d,"bus_scl_low":%d' % (drv.timeouts, getattr(drv, "scl_low", 0))
    yield "diag", fields
    app.scan_us_max = app.late_max = 0  # the maxima are since the last diag
    last = getattr(drv, "last", None)
    if last is not None:
        for m in range(4):
            vals = ",".join("%d" % last[16 * m + i] for i in range(16))
            yield "diag", ',"part":"adc","from":%d,"v":[%s]' % (16 * m, vals)

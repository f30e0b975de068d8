# Wire protocol v1: newline-delimited JSON (device messages here; host commands in commands.py). Device messages
# are the host's recording format (host/touchmove/records.py): every one has "type", then its fields, then "seq"
# (per-boot counter, no gaps), "t" (device milliseconds) and last "ck": the CRC-32 of the line's bytes before
# ',"ck"' as 8 hex digits, so the host refuses a line cut or run into another on the way even when the result
# is valid JSON (host/touchmove/serial/line_check.py). They are formatted by hand so the key order is fixed and the
# encoder needs no dict (MicroPython dicts do not keep insertion order). Pure Python: also runs under CPython.
import json

from .squares import name


def crc32_bits(data):
    """zlib's CRC-32 of ``data`` bit by bit: slow, for a port built without binascii.crc32 (same figure)."""
    crc = 0xFFFFFFFF
    for b in data:
        crc ^= b
        for _ in range(8):
            crc = (crc >> 1) ^ (0xEDB88320 & -(crc & 1))
    return crc ^ 0xFFFFFFFF


try:
    from binascii import crc32
except ImportError:
    crc32 = crc32_bits

try:
    from micropython import const
except ImportError:  # CPython

    def const(x):
        return x

PROTO = const(1)


def occ_hex(ranks):
    """16 lowercase hex digits of an occupancy given as 8 bytes, ranks[r] bit f = square 8r + f."""
    return "%02x%02x%02x%02x%02x%02x%02x%02x" % (
        ranks[7], ranks[6], ranks[5], ranks[4], ranks[3], ranks[2], ranks[1], ranks[0])


def msg(kind, fields, seq, t):
    """One device message line (bytes, its check last, newline-terminated). ``fields`` is the pre-encoded
    middle part, "" or starting with ","."""
    body = ('{"type":"%s"%s,"seq":%d,"t":%d' % (kind, fields, seq, t)).encode()
    return body + (',"ck":"%08x"}\n' % (crc32(body) & 0xFFFFFFFF)).encode()


def square_fields(sq):
    return ',"sq":"%s"' % name(sq)


def occ_fields(ranks):
    return ',"occ":"%s"' % occ_hex(ranks)


def hello_fields(fw, board, boot, rate=1, about=""):
    # rate: device ms per real ms, said only by a simulation running faster than real time (a real board's is 1)
    # about: about_fields() (the firmware's name, the MicroPython version, the reset cause)
    out = ',"proto":%d,"fw":"%s","board":"%s","boot":%d' % (PROTO, fw, board, boot)
    return out + (',"rate":%d' % rate if rate > 1 else "") + about


def about_fields(name, version, reset=None):
    """',"name":"touchmove","mp":"1.28.0"' and, on a board, ',"reset":"watchdog"' (board.reset_cause())."""
    out = ',"name":"%s","mp":"%d.%d.%d"' % (name, version[0], version[1], version[2])
    return out + (',"reset":"%s"' % reset if reset else "")


def button_fields(name):
    return ',"id":"%s"' % name


def pong_fields(ident):
    return ',"id":%s' % json.dumps(ident)


def error_fields(why):
    return ',"why":%s' % json.dumps(why)

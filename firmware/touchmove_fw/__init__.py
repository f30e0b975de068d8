# touchmove firmware package: occupancy scanning and the wire protocol v1.
FW_NAME = "touchmove"
FW_VERSION = "0.1.0"
# the wire protocol version is protocol.PROTO

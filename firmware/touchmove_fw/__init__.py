# touchmove firmware package: occupancy scanning and the wire protocol v1.
FW_NAME = "touchmove"
FW_VERSION = "0.1.0"
FW_ID = FW_NAME + "/" + FW_VERSION  # the hello's fw: the firmware's name and version (the bridge keeps it)
# the wire protocol version is protocol.PROTO

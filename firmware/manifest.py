# Freeze the firmware into a MicroPython image: its bytecode then runs from flash, no RAM is spent loading
# modules, and nothing on the board's filesystem can shadow it. From a MicroPython checkout:
#   make -C ports/rp2 BOARD=RPI_PICO FROZEN_MANIFEST=/path/to/touchmove/firmware/manifest.py
#   make -C ports/esp32 BOARD=ESP32_GENERIC_S3 FROZEN_MANIFEST=/path/to/touchmove/firmware/manifest.py
# then copy main.py (and a board.json) to the board's filesystem: mpremote fs cp firmware/main.py :
include("$(PORT_DIR)/boards/manifest.py")
package("touchmove_fw")

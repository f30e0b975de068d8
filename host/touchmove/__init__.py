"""touchmove: reconstruct chess games from occupancy-sensing boards under the FIDE Laws."""

__version__ = "0.1.0"

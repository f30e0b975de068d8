# Clock / function buttons on GPIOs (to GND, internal pull-ups): read() is a bit mask of pressed buttons,
# bit i = the profile's button i. They are debounced together with the squares (inputs 64..71).


class PinButtons:
    def __init__(self, pins, active_low=True):
        self.pins = pins
        self.flip = 1 if active_low else 0

    def read(self):
        mask = 0
        flip = self.flip
        b = 0
        for p in self.pins:
            if p() ^ flip:
                mask |= 1 << b
            b += 1
        return mask

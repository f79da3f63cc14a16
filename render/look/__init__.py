"""How a trail becomes a picture: palette tables, colouring on the device, render layers, seamless loops, and the Frame handed to the writers."""

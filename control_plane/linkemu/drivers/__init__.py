"""What runs beside a switch: the link-state and rate drivers, the switch's
clock, the event log, the queue monitor, and the reference model of when
each frame is due (fidelity). Imports the model and the switch layer."""

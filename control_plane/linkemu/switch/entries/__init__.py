"""The table entries a profile or a port layout asks for: one module per
control of the program whose tables the controller fills, named after the
control's instance (LinkemuIngress.link_pass.PHASE.NAME). Entries are built by
the program's names (program.constants) and written by push.py."""

"""The P4 program's names and constants, generated from its build and its
sources (constants.py, by util/gen_p4_constants.py). Imports nothing."""

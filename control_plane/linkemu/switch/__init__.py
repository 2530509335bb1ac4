"""The P4 program's contract (dataplane: its tables, counters and constants)
and the P4Runtime and Thrift clients that speak it. Imports the model."""

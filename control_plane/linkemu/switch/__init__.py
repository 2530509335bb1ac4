"""The switch: the P4 program's contract and the clients that speak it.
Imports the model.

p4runtime (the connection), p4info (names to ids), encoding (values to
bytes), entities and errors make the P4Runtime client; entries/ builds the
table entries, one module per control of the program; push writes them
(install, push_profile, set_hold); ports is the port layout;
codes numbers and scales what profiles name; counters reads the program's
counters; thrift_runtime sets BMv2's egress queues."""

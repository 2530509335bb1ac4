"""linkemu's control plane, in layers; each imports only from the layers
below it (tests/test_layers.py checks):

- program: the P4 program's names and constants, generated from its build
  (util/gen_p4_constants.py);
- model: the link model and its units: profiles, link states, rates
  over time, jitter tables;
- switch: the P4 program's contract (tables, counters, constants) and the
  P4Runtime and Thrift clients that speak it;
- drivers: what runs beside a switch: the link-state and rate drivers, its
  clock, the event log, the queue monitor, the reference model of release;
- testbed: the switch's process, veths, captures, the Mininet network;
- experiments: experiment files, their runner, the applications, flow
  metrics, results and plots;

and on top the `linkemu` command (cli)."""

"""Where a switch runs: its BMv2 process, veth pairs, captures, the Mininet
network and the leftovers of earlier runs. Imports the layers below it."""

"""Experiments: their files, the runner, the applications run on the hosts,
flow metrics, results and plots. Imports the layers below it; needs the
analysis extra (dpkt, matplotlib: pip install 'linkemu[analysis]')."""

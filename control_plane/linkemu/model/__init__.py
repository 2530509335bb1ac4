"""The link model and its units: profiles, link states, rates over time,
jitter tables. Imports only the program's constants."""

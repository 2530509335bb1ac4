"""The link model and its units: profiles, link states, rates over time,
jitter tables. Imports nothing else of linkemu."""

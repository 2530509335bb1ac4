"""linkemu control plane: link profiles, P4Runtime, counters."""

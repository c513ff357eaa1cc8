"""Sample bots, each runnable as `python -m sample_bots.NAME`."""

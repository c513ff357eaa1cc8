"""A run: the runner and its players, the config, the formats and their schedules, the store and the reader of a
run's directory, recovery, the busy host's back-off, the bot forms.
"""

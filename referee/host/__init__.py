"""The host a bot runs on: containment (cgroups, subreaper, death signal), the sandbox, the limits every command
applies, and the per-process singletons (`process_wide`).
"""

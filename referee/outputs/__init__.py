"""What people and programs read: the report, the live view and its feed, the terminal display, run events, safe
output files.
"""

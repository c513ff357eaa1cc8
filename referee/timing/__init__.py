"""Move timing in one home: the fairness rules (`rules`, pure), the time control type and clocks (`clock`), what
the referee sees of a bot's process (`probe`), the referee's own lateness (`latency`).
"""

"""Statistics: the SPRT and its planning, Elo and standings, head-to-head figures, SPSA tuning."""

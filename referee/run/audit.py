"""The audit of a game record: its moves replayed with the rules engine, its result recomputed and compared.

`check_record` is what `alternator replay` runs, and what the store runs on a record before trusting it (a
record read back from a database or from games.jsonl that may be damaged or forged, referee.run.recovery): every
move legal and made by the side to move, and the result, winner, scores and final position consistent with
the board and the way the game ended. It raises `RecordCheckError` naming the move and the reason.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from protocol.rules import Position
    from referee.record import GameRecord


class RecordCheckError(ValueError):
    """A record that does not agree with the rules; `move_number` is None for the result checks."""

    def __init__(self, message: str, move_number: int | None = None) -> None:
        super().__init__(message)
        self.move_number = move_number


def check_record(record: GameRecord) -> Position:
    """Replay `record` with the rules and check it; the final position, or RecordCheckError naming the move."""
    from protocol.rules import Color, IllegalMoveError, InvalidMoveError, Move, Position, result_for
    from referee.record import Termination

    settings = record.settings
    position = Position(settings.width, settings.height, settings.komi)
    for number, text in enumerate(settings.opening, 1):
        try:
            position.push(Move.parse(text))
        except (InvalidMoveError, IllegalMoveError) as error:
            raise RecordCheckError(f"opening move {number} ({text}): {error}", number) from None
    for offset, move in enumerate(record.moves):
        number = len(settings.opening) + offset + 1
        where = f"move {number} ({move.color} {move.move})"
        if position.is_over():
            raise RecordCheckError(f"{where}: the game was already over (two passes) before it", number)
        if move.color != str(position.turn):
            raise RecordCheckError(f"{where}: it was {position.turn}'s turn, not {move.color}'s", number)
        try:
            position.push(Move.parse(move.move))
        except (InvalidMoveError, IllegalMoveError) as error:
            raise RecordCheckError(f"{where}: {error}", number) from None

    def fail(what: str) -> RecordCheckError:
        return RecordCheckError(f"after {len(position.history)} moves ({record.termination.value}): {what}")

    if record.final_position != position.to_string():
        raise fail(f"final_position is {record.final_position!r} but the moves give {position.to_string()!r}")
    termination = record.termination
    if termination is Termination.NORMAL and record.adjudicated is not None:
        from referee.play.adjudication import adjudication_problem

        scores = (record.black_score, record.white_score)
        problem = adjudication_problem(record.adjudicated, record.result, record.winner, scores, position)
        if problem is not None:
            raise fail(problem)
        return position
    if termination is Termination.NORMAL:
        outcome = position.outcome()
        if outcome is None:
            raise fail("the game is recorded as ended normally, but the moves do not end with two passes")
        if record.result != outcome.result() or record.winner != (str(outcome.winner) if outcome.winner else None):
            raise fail(f"the result is {record.result} (winner {record.winner}) but the board gives {outcome}")
        if (record.black_score, record.white_score) != (outcome.black_score, outcome.white_score):
            raise fail(
                f"the scores are {record.black_score} - {record.white_score} but the board gives"
                f" {outcome.black_score:g} - {outcome.white_score:g}"
            )
        if record.loser is not None:
            raise fail(f"a normal end has no loser, but the record names {record.loser}")
        return position
    if not termination.is_scored:
        # Void or stopped, perhaps just after the last move (the referee failed showing it): any position will do.
        if record.result != "*" or record.winner is not None or record.loser is not None:
            raise fail(f"a {termination.value} game has result * and no winner or loser, not {record.result}")
        return position
    if position.is_over():
        raise fail("the moves end with two passes, so the game ended normally, not by this termination")
    # A forfeit: the loser broke a rule, the other side wins.
    if record.loser is None:
        raise fail("a forfeit must name the loser")
    expected_winner = Color(record.loser).other  # Color(): a record built by model_copy may hold plain strings
    expected_result = result_for(expected_winner)
    if record.winner != expected_winner or record.result != expected_result:
        raise fail(
            f"{record.loser} forfeited, so {expected_winner} wins ({expected_result}),"
            f" but the record says {record.result} (winner {record.winner})"
        )
    if termination in (Termination.TIME, Termination.ILLEGAL_MOVE) and record.loser != str(position.turn):
        raise fail(f"{record.loser} cannot lose by {termination.value}: it was {position.turn}'s turn")
    if record.black_score is not None or record.white_score is not None:
        board = position.score_outcome()
        if (record.black_score, record.white_score) != (board.black_score, board.white_score):
            raise fail(
                f"the scores are {record.black_score} - {record.white_score} but the board gives"
                f" {board.black_score:g} - {board.white_score:g}"
            )
    return position

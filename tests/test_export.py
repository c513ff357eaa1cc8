"""`alternator export`: PGN read back by a PGN parser (python-chess) and by Ordo when it is here, and CSV."""

from __future__ import annotations

import csv
import io
import os
import shutil
import subprocess
from pathlib import Path

import chess.pgn
import pytest

from referee.cli import main
from referee.commands.export import CSV_COLUMNS, pgn_game
from referee.record import GameRecord, Termination
from referee.run.rundir import RunDirectory, ScoredRow
from referee.stats.standings import ScoredGame, compute_standings
from tests.report_games import synthesize_tournament

SEVEN_TAGS = ("Event", "Site", "Date", "Round", "White", "Black", "Result")


def ordo_binary() -> str | None:
    """Ordo (github.com/michiguel/Ordo, built with `make`): $ORDO, else `ordo` on the PATH."""
    given = os.environ.get("ORDO")
    if given:
        return given if Path(given).is_file() else None
    return shutil.which("ordo")


def read_pgn(text: str) -> list[chess.pgn.Game]:
    stream = io.StringIO(text)
    found = []
    while (game := chess.pgn.read_game(stream)) is not None:
        assert not game.errors, game.errors
        found.append(game)
    return found


def check_against_records(games: list[chess.pgn.Game], records: list[GameRecord]) -> None:
    assert len(games) == len(records)
    for game, record in zip(games, records, strict=True):
        headers = game.headers
        assert list(headers)[:7] == list(SEVEN_TAGS)  # the seven tag roster, in its order
        assert headers["White"] == record.black.name  # PGN's White moves first: Alternator's Black
        assert headers["Black"] == record.white.name
        assert headers["Result"] == record.result
        assert headers["Date"] == record.started_at.strftime("%Y.%m.%d")
        assert headers["GameId"] == record.game_id
        assert headers["Komi"] == f"{record.settings.komi:g}"
        # No chess moves: the game is in the comment, whole.
        assert game.next() is None
        comment = " ".join(game.comment.split())
        moves = " ".join(move.move for move in record.moves)
        assert f"Moves: {moves or '(none)'}." in comment
        assert f"{record.termination}:" in comment


def test_a_tournament_exports_to_pgn_that_a_pgn_reader_reads_back(tmp_path: Path) -> None:
    out = tmp_path / "cup"
    argv = ["tournament", "--bot", "random", "--bot", "greedy", "--bot", "again=random", "--games", "2"]
    assert main([*argv, "--size", "4", "--komi", "0", "--tc", "5+0.1", "--out", str(out), "--quiet"]) == 0
    with RunDirectory.open(out) as run:
        assert run.source == "run.db"
        records = list(run.records())
    assert len(records) == 6
    pgn = tmp_path / "cup.pgn"
    assert main(["export", str(out), "--format", "pgn", "-o", str(pgn)]) == 0
    games = read_pgn(pgn.read_text(encoding="utf-8"))
    check_against_records(games, records)
    assert {game.headers["Event"] for game in games} == {"tournament of random, greedy, again"}
    assert sorted(int(game.headers["Round"]) for game in games) == [1, 1, 1, 2, 2, 2]
    assert all(len(line) < 80 for line in pgn.read_text(encoding="utf-8").splitlines())
    assert [p.name for p in tmp_path.iterdir() if p.name.endswith(".tmp")] == []  # no temporary left


def test_export_to_standard_output_and_as_csv(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    records = synthesize_tournament(tmp_path, 30, seed=4)
    assert main(["export", str(tmp_path)]) == 0  # PGN to standard output by default
    check_against_records(read_pgn(capsys.readouterr().out), records)

    assert main(["export", str(tmp_path), "--format", "csv"]) == 0
    rows = list(csv.DictReader(io.StringIO(capsys.readouterr().out)))
    assert len(rows) == 30 and tuple(rows[0]) == CSV_COLUMNS
    for row, record in zip(rows, records, strict=True):
        assert (row["game_id"], row["black"], row["white"]) == (record.game_id, record.black.name, record.white.name)
        assert (row["result"], row["termination"]) == (record.result, str(record.termination))
        assert row["moves"] == " ".join(move.move for move in record.moves)
        assert row["size"] == "8x8" and row["komi"] == "3.5"
        assert row["black_score"] == ("" if record.black_score is None else f"{record.black_score:g}")
    assert {row["termination"] for row in rows} >= {"normal", "time", "crash", "illegal_move"}


def test_names_and_reasons_that_would_break_a_tag_or_a_comment_are_escaped() -> None:
    row = ScoredRow(7, 0, 'say "hi"\\', "x] [White", "0-1", Termination.CRASH, None, None)
    line = {"id": "g0007", "b": row.black, "w": row.white, "W": 8, "H": 8, "k": 3.5, "tc": "10+0.1", "o": "",
            "m": "d5d4 pass", "why": "crashed: {oops} [Result \"1-0\"]", "bs": None, "ws": None, "s": None}  # fmt: skip
    text = pgn_game(row, line, 'the "cup"')
    (game,) = read_pgn(text)
    # Escaped as PGN's standard says (python-chess hands tag values over as written, escapes and all).
    assert game.headers["White"] == 'say \\"hi\\"\\\\' and game.headers["Black"] == "x] [White"
    assert game.headers["Event"] == 'the \\"cup\\"' and game.headers["Date"] == "????.??.??"
    assert game.headers["Result"] == "0-1" and game.headers["Termination"] == "rules infraction"
    assert "{" not in game.comment and "[" not in game.comment  # Ordo scans every line for its tags
    assert "(oops)" in game.comment


def test_export_errors_say_what_to_do(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["export", str(tmp_path / "nothing")]) == 2
    assert "no such directory" in capsys.readouterr().err
    synthesize_tournament(tmp_path / "run", 3)
    assert main(["export", str(tmp_path / "run"), "-o", str(tmp_path / "no" / "such" / "x.pgn")]) == 2
    assert "does not exist" in capsys.readouterr().err


def test_ordo_reads_the_pgn_and_finds_the_same_ratings_and_first_move(tmp_path: Path) -> None:
    ordo = ordo_binary()
    if ordo is None:
        pytest.skip(
            "Ordo is not here: build it (git clone https://github.com/michiguel/Ordo && make) and put `ordo` on the"
            " PATH or its path in $ORDO"
        )
    bots = ("alpha", "beta", "gamma", "delta", "epsilon")
    records = synthesize_tournament(tmp_path / "run", 600, seed=11, bots=bots)
    pgn = tmp_path / "run.pgn"
    assert main(["export", str(tmp_path / "run"), "-o", str(pgn)]) == 0
    # -z 200.24: the logistic curve's 76% (Ordo's default is 202); -W: fit the first move's worth; -a 0: mean 0.
    # No game is drawn (komi 3.5), so both fits are the logistic one with a first-move term: they agree to 0.01.
    done = subprocess.run(
        [
            ordo,
            "-p",
            str(pgn),
            "-W",
            "-D",
            "-a",
            "0",
            "-z",
            "200.24",
            "-N",
            "2",
            "-q",
            "-c",
            str(tmp_path / "ordo.csv"),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    rows = {row[1]: row for row in csv.reader((tmp_path / "ordo.csv").open()) if row and row[0] != "#"}
    ours = compute_standings(
        [ScoredGame(r.black.name, r.white.name, r.result, r.termination) for r in records], list(bots), prior_draws=1e-6
    )
    assert set(rows) == set(bots)
    for bot in ours.bots:
        row = rows[bot.name]
        rating, points, played = float(row[2]), float(row[4]), int(row[5])
        assert (points, played) == (bot.points, bot.games)  # every game read, each result the right way round
        assert bot.elo is not None and rating == pytest.approx(bot.elo, abs=0.02)
    advantage = next(line for line in done.stdout.splitlines() if "White advantage" in line)
    assert ours.first_move_elo is not None
    assert float(advantage.split("=")[1].split()[0]) == pytest.approx(ours.first_move_elo, abs=0.02)

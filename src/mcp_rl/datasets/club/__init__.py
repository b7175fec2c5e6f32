"""A members' club as a small SQLite database, with questions to answer by a query and tasks that change it.

Everything is drawn from one ``random.Random(seed)``: members with syllable-built names (the fictional
world's :class:`~mcp_rl.datasets.fictional.names.Namer`), the towns they live in and the year they joined;
classes with an instructor (a member), a weekday and a fee; and bookings of members into classes. No model
knows these facts, so an answer has to come from the database.

Files (see :func:`write`):

``seed.db``
    tables ``members(name, city, joined)``, ``classes(name, instructor, day, fee)``,
    ``bookings(member, class)``; a few hundred rows. The ``sql`` recipe's server reads it as it is; the
    ``records`` recipe copies it for every episode.
``train.jsonl`` / ``test.jsonl``
    questions: ``{"id", "question", "golden_answers", "reference_sql", "kind"}``. Kinds: lookups
    (``city``, ``joined``, ``instructor``, ``day``, ``fee``), a filter and counts (``count_city``,
    ``count_year``, ``count_city_after``, ``count_class``, ``count_member``), joins
    (``instructor_city``, ``count_class_city``) and one list (``classes_of``). ``reference_sql`` is the
    query whose result is the answer; the golden answers are that result written out.
``tasks_train.jsonl`` / ``tasks_test.jsonl``
    tasks that change records, each against a fresh copy of ``seed.db``:
    ``{"id", "question", "golden_answers": ["done"], "kind", "reference_sql", "check_sql", "state"}``.
    Kinds: ``register`` (a new member), ``book``, ``cancel``, ``move`` (a booking to another class),
    ``relocate`` (a member's city), ``fee``. ``reference_sql`` is a statement that does the task;
    ``check_sql`` returns ``ok`` = 1 when the asked-for change is there (the new or changed row exactly
    once, a cancelled booking gone); ``state`` is :data:`STATE_SQL`'s value on the database after the
    reference statement, so comparing it says that nothing else changed either.

Seed 0 with the default sizes is the copy shipped next to this file. Command line:
``python -m mcp_rl.datasets.club --seed 1 --out DIR`` (another seed: new members, classes and towns, the
same kinds of question and task).
"""

from __future__ import annotations

import argparse
import itertools
import random
import sqlite3
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from mcp_rl.datasets import write_jsonl
from mcp_rl.datasets.fictional.names import FIRST_ENDS, SUR_ENDS, TOWN_ENDS, Namer

SPLITS = ("train", "test")
TASK_SPLITS = ("tasks_train", "tasks_test")
SCHEMA = (
    "CREATE TABLE members (name TEXT PRIMARY KEY, city TEXT NOT NULL, joined INTEGER NOT NULL)",
    "CREATE TABLE classes (name TEXT PRIMARY KEY, instructor TEXT NOT NULL, day TEXT NOT NULL, "
    "fee INTEGER NOT NULL)",
    "CREATE TABLE bookings (member TEXT NOT NULL, class TEXT NOT NULL)",
)
DAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")
ACTIVITIES = (
    "Pottery", "Fencing", "Rowing", "Chess", "Archery", "Climbing", "Weaving", "Painting", "Yoga", "Judo",
    "Singing", "Dancing", "Cycling", "Swimming", "Baking", "Sketching", "Juggling", "Tennis", "Drumming",
    "Knitting", "Boxing", "Sculpture", "Gardening", "Poetry", "Pilates", "Karate", "Calligraphy",
    "Woodwork", "Origami", "Photography",
)  # fmt: skip
YEARS = range(2008, 2025)


_TABLES = {
    "members": ("name", "city", "joined"),
    "classes": ("name", "instructor", "day", "fee"),
    "bookings": ("member", "class"),
}


def _row_text(table: str, columns: Sequence[str]) -> str:
    # The whole row as one string, NULLs spelled out (a row missing a value is not the row with '').
    fields = " || '|' || ".join(f"coalesce({name}, '~null~')" for name in columns)
    return f"SELECT '{table}|' || {fields} FROM {table}"


# One number for the whole database: the sum over every row of every table of a polynomial hash of all of
# the row's characters (mod a prime), so a changed character anywhere, a row added, removed or duplicated
# moves it, in any row order. SQLite has no hash function, so a recursive query walks the characters; the
# server's read_query runs SELECTs only, hence the CTE inside a subquery. At most ~10**12, exact as a float.
# The records recipe holds a copy of this query (a test keeps the two the same).
STATE_SQL = (
    "SELECT (WITH RECURSIVE\n"
    "  rows(s) AS (\n    "
    + "\n    UNION ALL ".join(_row_text(table, columns) for table, columns in _TABLES.items())
    + "),\n"
    "  chars(s, i, h) AS (\n"
    "    SELECT s, 1, 0 FROM rows\n"
    "    UNION ALL SELECT s, i + 1, (h * 31 + unicode(substr(s, i, 1))) % 1000000007 FROM chars"
    " WHERE i <= length(s))\n"
    "  SELECT total(h) FROM chars WHERE i = length(s) + 1) AS state"
)


@dataclass
class Club:
    members: list[tuple[str, str, int]]
    classes: list[tuple[str, str, str, int]]
    bookings: list[tuple[str, str]]
    towns: list[str]
    spare_names: list[str]  # unused names for members the tasks register


def build_club(rng: random.Random, n_members: int = 240, n_classes: int = 24, n_towns: int = 12) -> Club:
    namer = Namer(rng)
    towns = [namer.unique((2, 2), TOWN_ENDS) for _ in range(n_towns)]

    def person() -> str:
        return f"{namer.unique((1, 2), FIRST_ENDS, 3, 7)} {namer.unique((1, 2), SUR_ENDS, 4, 8)}"

    members = [(person(), rng.choice(towns), rng.choice(YEARS)) for _ in range(n_members)]
    instructors = rng.sample([m[0] for m in members], n_classes)
    names = rng.sample(ACTIVITIES, n_classes)
    classes = [(c, i, rng.choice(DAYS), rng.randint(8, 45)) for c, i in zip(names, instructors, strict=True)]
    bookings = []
    for name, _, _ in members:
        for cls in rng.sample(names, rng.choice([0, 1, 1, 2, 2, 2, 3, 3])):
            bookings.append((name, cls))
    spare = [person() for _ in range(1000)]
    return Club(members, classes, bookings, towns, spare)


def write_db(club: Club, path: Path) -> Path:
    """The club as a SQLite file (rows in generation order, so the same club gives the same file)."""
    path.unlink(missing_ok=True)
    with sqlite3.connect(path) as db:
        for statement in SCHEMA:
            db.execute(statement)
        db.executemany("INSERT INTO members VALUES (?, ?, ?)", club.members)
        db.executemany("INSERT INTO classes VALUES (?, ?, ?, ?)", club.classes)
        db.executemany("INSERT INTO bookings VALUES (?, ?)", club.bookings)
    db.close()
    return path


# -- questions -----------------------------------------------------------------------------------------
def _q(sql: str) -> str:
    """A query written over several lines, on one."""
    return " ".join(sql.split())


def _question_candidates(club: Club, rng: random.Random) -> list[tuple[str, str, str]]:
    """Every (kind, question, reference_sql) over the club; answers come from running the query."""
    out: list[tuple[str, str, str]] = []

    def add(kind: str, question: str, sql: str) -> None:
        out.append((kind, question, _q(sql)))

    for name, _, _ in club.members:
        add(
            "city",
            f"Which city does the member {name} live in?",
            f"SELECT city FROM members WHERE name = '{name}'",
        )
        add(
            "joined",
            f"In which year did {name} join the club?",
            f"SELECT joined FROM members WHERE name = '{name}'",
        )
        add(
            "count_member",
            f"How many classes has {name} booked?",
            f"SELECT count(*) FROM bookings WHERE member = '{name}'",
        )
    booked: dict[str, list[str]] = {}
    for member, cls in club.bookings:
        booked.setdefault(member, []).append(cls)
    for name, classes in booked.items():
        if len(classes) >= 2:
            add(
                "classes_of",
                f"Which classes has {name} booked?",
                f"SELECT class FROM bookings WHERE member = '{name}'",
            )
    for cls, _, _, _ in club.classes:
        add(
            "instructor",
            f"Who teaches the {cls} class?",
            f"SELECT instructor FROM classes WHERE name = '{cls}'",
        )
        add("day", f"On which day is the {cls} class held?", f"SELECT day FROM classes WHERE name = '{cls}'")
        add("fee", f"What is the fee of the {cls} class?", f"SELECT fee FROM classes WHERE name = '{cls}'")
        add(
            "count_class",
            f"How many members are booked into the {cls} class?",
            f"SELECT count(*) FROM bookings WHERE class = '{cls}'",
        )
        add(
            "instructor_city",
            f"In which city does the instructor of the {cls} class live?",
            f"""SELECT members.city FROM classes JOIN members ON members.name = classes.instructor
                           WHERE classes.name = '{cls}'""",
        )
        for town in club.towns:
            add(
                "count_class_city",
                f"How many members from {town} are booked into the {cls} class?",
                f"""SELECT count(*) FROM bookings JOIN members ON members.name = bookings.member
                               WHERE bookings.class = '{cls}' AND members.city = '{town}'""",
            )
    for town in club.towns:
        add(
            "count_city",
            f"How many members live in {town}?",
            f"SELECT count(*) FROM members WHERE city = '{town}'",
        )
        for year in YEARS[::2]:
            add(
                "count_city_after",
                f"How many members from {town} joined after {year}?",
                f"SELECT count(*) FROM members WHERE city = '{town}' AND joined > {year}",
            )
    for year in YEARS:
        add(
            "count_year",
            f"How many members joined in {year}?",
            f"SELECT count(*) FROM members WHERE joined = {year}",
        )
    return out


def _answers(rows: list[tuple[object, ...]]) -> list[str]:
    """The golden answers of a one-column result: its value, or every order of a short list."""
    values = [str(row[0]) for row in rows]
    if len(values) <= 1:
        return values
    return [", ".join(order) for order in itertools.permutations(values)]


# How many of each kind in a split, out of every 20 questions: lookups and counts most, joins and lists some.
_KIND_WEIGHTS = {
    "city": 2, "joined": 2, "instructor": 2, "day": 1, "fee": 1, "count_city": 1, "count_year": 1,
    "count_city_after": 2, "count_class": 2, "count_member": 2, "instructor_city": 1,
    "count_class_city": 2, "classes_of": 1,
}  # fmt: skip


def questions(club: Club, db: Path, rng: random.Random, n_train: int, n_test: int) -> dict[str, list[dict]]:
    by_kind: dict[str, list[tuple[str, str, str]]] = {}
    for item in _question_candidates(club, rng):
        by_kind.setdefault(item[0], []).append(item)
    for items in by_kind.values():
        rng.shuffle(items)
    total = sum(_KIND_WEIGHTS.values())
    share = n_test / (n_train + n_test)
    sizes: dict[str, list[int]] = {}  # kind -> [test, train]
    for kind, weight in _KIND_WEIGHTS.items():
        # Each kind split in the same proportion (a kind with few candidates, such as the 24 classes, gives
        # fewer questions) ...
        n_kind = min(len(by_kind[kind]), round((n_train + n_test) * weight / total))
        n_te = max(1, round(n_kind * share))
        sizes[kind] = [n_te, n_kind - n_te]
    # ... and what the small kinds could not give, kinds with candidates to spare give, in turn, so a split
    # has the size asked for.
    spare = [k for k in _KIND_WEIGHTS if len(by_kind[k]) > sum(sizes[k])]
    for split, wanted in ((0, n_test), (1, n_train)):
        while spare and sum(size[split] for size in sizes.values()) < wanted:
            kind = spare.pop(0)
            sizes[kind][split] += 1
            if len(by_kind[kind]) > sum(sizes[kind]):
                spare.append(kind)
    picked: dict[str, list[tuple[str, str, str]]] = {"train": [], "test": []}
    for kind, (n_te, n_tr) in sizes.items():
        # Test first, train from the rest, so no question is in both splits.
        picked["test"] += by_kind[kind][:n_te]
        picked["train"] += by_kind[kind][n_te : n_te + n_tr]
    out: dict[str, list[dict]] = {}
    with sqlite3.connect(db) as conn:
        for split, items in picked.items():
            rng.shuffle(items)
            out[split] = [
                {
                    "id": f"{split}_{i}",
                    "question": question,
                    "golden_answers": _answers(conn.execute(sql).fetchall()),
                    "reference_sql": sql,
                    "kind": kind,
                }
                for i, (kind, question, sql) in enumerate(items)
            ]
    conn.close()
    return out


# -- tasks that change records -------------------------------------------------------------------------
def _task_candidates(club: Club, rng: random.Random, n: int) -> list[tuple[str, str, str, str]]:
    """``n`` tasks (kind, task, reference statement, check query), kinds in turn, none repeated."""
    members = [m[0] for m in club.members]
    city_of = {m[0]: m[1] for m in club.members}
    classes = [c[0] for c in club.classes]
    fee_of = {c[0]: c[3] for c in club.classes}
    booked = set(club.bookings)
    spare = iter(club.spare_names)
    kinds = ("register", "book", "cancel", "move", "relocate", "fee")
    out: list[tuple[str, str, str, str]] = []
    seen: set[str] = set()
    while len(out) < n:
        kind = kinds[len(out) % len(kinds)]
        member, cls = rng.choice(members), rng.choice(classes)
        if kind == "register":
            name, town, year = next(spare), rng.choice(club.towns), rng.choice([2025, 2026])
            item = (
                f"Register a new member: {name} from {town}, joining in {year}.",
                f"INSERT INTO members (name, city, joined) VALUES ('{name}', '{town}', {year})",
                f"SELECT count(*) AS ok FROM members "
                f"WHERE name = '{name}' AND city = '{town}' AND joined = {year}",
            )
        elif kind == "book":
            if (member, cls) in booked:
                continue
            item = (
                f"Book {member} into the {cls} class.",
                f"INSERT INTO bookings (member, class) VALUES ('{member}', '{cls}')",
                f"SELECT count(*) AS ok FROM bookings WHERE member = '{member}' AND class = '{cls}'",
            )
        elif kind == "cancel":
            member, cls = rng.choice(club.bookings)
            item = (
                f"Cancel {member}'s booking for the {cls} class.",
                f"DELETE FROM bookings WHERE member = '{member}' AND class = '{cls}'",
                f"SELECT count(*) = 0 AS ok FROM bookings WHERE member = '{member}' AND class = '{cls}'",
            )
        elif kind == "move":
            member, old = rng.choice(club.bookings)
            if (member, cls) in booked:
                continue
            item = (
                f"Move {member}'s booking from the {old} class to the {cls} class.",
                f"UPDATE bookings SET class = '{cls}' WHERE member = '{member}' AND class = '{old}'",
                _q(f"""SELECT count(*) = 1 AND sum(class = '{cls}') = 1 AS ok FROM bookings
                           WHERE member = '{member}' AND class IN ('{cls}', '{old}')"""),
            )
        elif kind == "relocate":
            town = rng.choice([t for t in club.towns if t != city_of[member]])
            item = (
                f"{member} has moved to {town}. Update the member's city.",
                f"UPDATE members SET city = '{town}' WHERE name = '{member}'",
                f"SELECT count(*) AS ok FROM members WHERE name = '{member}' AND city = '{town}'",
            )
        else:
            fee = rng.choice([f for f in range(8, 50) if f != fee_of[cls]])
            item = (
                f"Change the fee of the {cls} class to {fee}.",
                f"UPDATE classes SET fee = {fee} WHERE name = '{cls}'",
                f"SELECT count(*) AS ok FROM classes WHERE name = '{cls}' AND fee = {fee}",
            )
        if item[0] in seen:
            continue
        seen.add(item[0])
        out.append((kind, *item))
    return out


def state_after(seed_db: Path, statement: str | None) -> float:
    """:data:`STATE_SQL` on a copy of ``seed_db`` (in memory) after ``statement``."""
    with sqlite3.connect(":memory:") as db:
        with sqlite3.connect(seed_db) as seed:
            seed.backup(db)
        seed.close()
        if statement:
            db.execute(statement)
        (value,) = db.execute(STATE_SQL).fetchone()
    db.close()
    return value


def tasks(club: Club, db: Path, rng: random.Random, n_train: int, n_test: int) -> dict[str, list[dict]]:
    items = _task_candidates(club, rng, n_train + n_test)
    rng.shuffle(items)
    out: dict[str, list[dict]] = {}
    for split, part in (("tasks_test", items[:n_test]), ("tasks_train", items[n_test:])):
        out[split] = [
            {
                "id": f"{split}_{i}",
                "question": task,
                "golden_answers": ["done"],
                "kind": kind,
                "reference_sql": statement,
                "check_sql": check,
                "state": f"{state_after(db, statement):.0f}",
            }
            for i, (kind, task, statement, check) in enumerate(part)
        ]
    return out


# -- files ---------------------------------------------------------------------------------------------
def write(
    out_dir: str | Path,
    seed: int = 0,
    n_train: int = 1200,
    n_test: int = 300,
    n_tasks_train: int = 600,
    n_tasks_test: int = 200,
) -> Path:
    """Write ``seed.db``, the questions and the tasks for ``seed`` into ``out_dir`` (created if needed)."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    rng = random.Random(seed)
    club = build_club(rng)
    db = write_db(club, out / "seed.db")
    for split, rows in questions(club, db, rng, n_train, n_test).items():
        write_jsonl(out / f"{split}.jsonl", rows)
    for split, rows in tasks(club, db, rng, n_tasks_train, n_tasks_test).items():
        write_jsonl(out / f"{split}.jsonl", rows)
    return out


def main(argv: Sequence[str] | None = None, out: Callable[[str], None] = print) -> None:
    parser = argparse.ArgumentParser(
        prog="python -m mcp_rl.datasets.club",
        description="Generate the club database, its questions and its record-changing tasks.",
    )
    parser.add_argument("--seed", type=int, default=0, help="Random seed (0 is the shipped copy).")
    parser.add_argument("--out", required=True, help="Output folder (seed.db and .jsonl files).")
    parser.add_argument("--n-train", type=int, default=1200)
    parser.add_argument("--n-test", type=int, default=300)
    parser.add_argument("--n-tasks-train", type=int, default=600)
    parser.add_argument("--n-tasks-test", type=int, default=200)
    args = parser.parse_args(argv)
    path = write(args.out, args.seed, args.n_train, args.n_test, args.n_tasks_train, args.n_tasks_test)
    counts = {split: sum(1 for _ in (path / f"{split}.jsonl").open()) for split in (*SPLITS, *TASK_SPLITS)}
    out(f"wrote seed.db and {counts} rows to {path}")

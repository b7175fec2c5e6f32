"""Do the tool-verified and state-checked rewards agree with a plain reference comparison done in Python?

    python bench/reward_agreement.py [--per-recipe 200] [--records 120] [--seed 0]

Scores varied answers with each recipe's own reward functions, built from the recipe through the real tool
servers (our calculator; the third-party mcp-server-sqlite from PyPI, shared for ``sql`` and one instance
per episode for ``records``), and with a plain comparison that never calls a tool:

calculator  answers: the golden value, with a unit or a trailing ``.0``, off by one, by a cent, times ten,
            or none; plain: the answer's first number equals the exact value of the reference expression
            (``Fraction`` arithmetic on the generator's numbers).
sql         answers: the golden rows (a list in reverse order too), another row's answer of the same kind,
            a count off by one, part of a list, lower case; plain: the reference query run with ``sqlite3``
            on the seed database, its values against the answer's comma-separated values.
records     episodes: the reference statement, it with a one-letter typo in a name, it twice, it and a
            change elsewhere, it on another member or class, nothing, a statement missing part of its WHERE
            clause; plain: every table of the episode's database (``sqlite3``, after the episode) equals the
            seed with the reference statement applied, as multisets of rows. Tool side: ``change_made`` and
            ``state_correct`` both 1.

Prints the disagreements (a few of each recipe) and the agreement; the last line on stdout is one JSON
object: ``episodes``, ``agree``, ``agreement``, ``by_recipe`` {name: {episodes, agree, positives}}.
"""

from __future__ import annotations

import argparse
import random
import re
import shutil
import sqlite3
import sys
import tempfile
import time
from collections import Counter
from fractions import Fraction
from pathlib import Path
from typing import Any

from _common import finish, log  # bench/ is sys.path[0]

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "src"), str(ROOT)]

from mcp_rl.config.recipe import load_recipe  # noqa: E402
from mcp_rl.datasets import builtin_corpus  # noqa: E402
from mcp_rl.env.data import load_qa  # noqa: E402
from mcp_rl.env.recipe_checks import recipe_servers  # noqa: E402
from mcp_rl.env.trajectory import Trajectory  # noqa: E402
from mcp_rl.rewards import build_reward_functions  # noqa: E402
from mcp_rl.tools import BlockingToolPool  # noqa: E402

_NUMBER = re.compile(r"-?\d[\d,]*(?:\.\d+)?")


def answered(answer: str | None, tools: Any = None) -> Trajectory:
    trajectory = Trajectory(prompt_index=0, prompt_messages=[], prompt_ids=[], answer=answer)
    trajectory.tools = tools
    return trajectory


def rows_as_columns(rows: list[dict[str, Any]], names: tuple[str, ...]) -> dict[str, list[Any]]:
    return {name: [row[name] for row in rows] for name in names}


# -- calculator ------------------------------------------------------------------------------------------
def calculator_answers(rng: random.Random, gold: str) -> str | None:
    value = Fraction(gold)
    variants = [
        gold, gold, f"{gold} km", f"{gold}.0" if "." not in gold else gold + "0", f"${gold}",
        str(value + 1), str(float(value + Fraction(1, 100))), str(value * 10), None,
    ]  # fmt: skip
    return rng.choice(variants)


def plain_calculator(answer: str | None, expression_value: Fraction) -> bool:
    if answer is None:
        return False
    match = _NUMBER.search(answer)
    return match is not None and Fraction(match.group(0).replace(",", "")) == expression_value


def calculator(n: int, rng: random.Random) -> list[tuple[bool, bool, str]]:
    recipe = load_recipe("calculator")
    rows = [r for split in ("test", "train") for r in load_qa("arithmetic", split)]
    rows = rng.sample(rows, n)
    answers = [calculator_answers(rng, row["golden_answers"][0]) for row in rows]
    with BlockingToolPool(recipe_servers(recipe)) as pool:
        rewards, _ = build_reward_functions(recipe.rewards, pool)
        scores = rewards[0](
            trajectories=[answered(a) for a in answers], **rows_as_columns(rows, ("expression",))
        )
    out = []
    for row, answer, score in zip(rows, answers, scores, strict=True):
        # The exact value from the generator's own numbers, never through the calculator.
        plain = plain_calculator(answer, Fraction(row["golden_answers"][0]))
        out.append((score == 1.0, plain, f"{row['expression']!r} answer {answer!r}"))
    return out


# -- sql -------------------------------------------------------------------------------------------------
def sql_answers(rng: random.Random, row: dict[str, Any], same_kind: list[dict[str, Any]]) -> str | None:
    gold = row["golden_answers"]
    variants = [gold[0], gold[0], gold[-1], rng.choice(same_kind)["golden_answers"][0], gold[0].lower(), None]
    if gold[0].isdigit():
        variants.append(str(int(gold[0]) + rng.choice([-1, 1])))
    if ", " in gold[0]:
        variants.append(gold[0].split(", ")[0])
    return rng.choice(variants)


def plain_sql(answer: str | None, reference: list[tuple[Any, ...]]) -> bool:
    if answer is None:
        return False
    want = Counter(str(row[0]).strip().casefold() for row in reference)
    got = Counter(part.strip().casefold() for part in answer.split(",") if part.strip())
    return bool(got) and got == want


def sql(n: int, rng: random.Random) -> list[tuple[bool, bool, str]]:
    recipe = load_recipe("sql")
    rows = [r for split in ("test", "train") for r in load_qa("club", split)]
    by_kind: dict[str, list[dict[str, Any]]] = {}
    for row in rows:
        by_kind.setdefault(row["kind"], []).append(row)
    rows = rng.sample(rows, n)
    answers = [sql_answers(rng, row, by_kind[row["kind"]]) for row in rows]
    with BlockingToolPool(recipe_servers(recipe)) as pool:
        rewards, _ = build_reward_functions(recipe.rewards, pool)
        columns = rows_as_columns(rows, ("reference_sql",))
        scores = rewards[0](trajectories=[answered(a) for a in answers], **columns)
    out = []
    with sqlite3.connect(builtin_corpus("club")) as db:
        for row, answer, score in zip(rows, answers, scores, strict=True):
            plain = plain_sql(answer, db.execute(row["reference_sql"]).fetchall())
            out.append((score == 1.0, plain, f"{row['question']!r} answer {answer!r}"))
    db.close()
    return out


# -- records ---------------------------------------------------------------------------------------------
def record_statements(
    rng: random.Random, row: dict[str, Any], other: dict[str, Any]
) -> tuple[str, list[str]]:
    reference = row["reference_sql"]
    elsewhere = "UPDATE members SET city = city || 'x' WHERE name = (SELECT max(name) FROM members)"
    loose = (
        reference.split(" AND ")[0] if " AND " in reference else reference.replace(" WHERE ", " WHERE 1 OR ")
    )
    # One letter changed inside the statement's first quoted value (a name, a town): what a model's typo does.
    quoted = reference.split("'")[1]
    middle = len(quoted) // 2
    typo = quoted[:middle] + ("a" if quoted[middle] != "a" else "e") + quoted[middle + 1 :]
    cases = {
        "reference": [reference],
        "misspelled": [reference.replace(f"'{quoted}'", f"'{typo}'", 1)],
        "reference again": [reference],
        "twice": [reference, reference],
        "and elsewhere": [reference, elsewhere],
        "another task's": [other["reference_sql"]],
        "nothing": [],
        "loose where": [loose],
    }
    case = rng.choice(list(cases))
    return case, cases[case]


def tables(db: sqlite3.Connection) -> dict[str, Counter[tuple[Any, ...]]]:
    names = [n for (n,) in db.execute("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")]
    return {name: Counter(db.execute(f"SELECT * FROM {name}").fetchall()) for name in names}


def expected_tables(seed: Path, statement: str) -> dict[str, Counter[tuple[Any, ...]]]:
    with sqlite3.connect(":memory:") as db:
        with sqlite3.connect(seed) as source:
            source.backup(db)
        source.close()
        db.execute(statement)
        return tables(db)


def records(n: int, rng: random.Random, batch: int = 20) -> list[tuple[bool, bool, str]]:
    recipe = load_recipe("records", ["tools.mcpServers.db.warm=0"])
    seed = builtin_corpus("club")
    rows = [r for split in ("tasks_test", "tasks_train") for r in load_qa("club", split)]
    picked = rng.sample(rows, n)
    plans = [record_statements(rng, row, rng.choice(rows)) for row in picked]
    out = []
    folder = Path(tempfile.mkdtemp(prefix="agreement-"))
    try:
        with BlockingToolPool(recipe_servers(recipe)) as pool:
            rewards, _ = build_reward_functions(recipe.rewards, pool)
            change, state = rewards[0], rewards[1]
            for start in range(0, n, batch):
                rows_now, plans_now = picked[start : start + batch], plans[start : start + batch]
                episodes = pool.open_episodes(len(rows_now))
                for episode, (_, statements) in zip(episodes, plans_now, strict=True):
                    for statement in statements:
                        episode.call(
                            "write_query", {"query": statement}
                        )  # a failing statement changes nothing
                trajectories = [answered("done", episode) for episode in episodes]
                columns = rows_as_columns(rows_now, ("check_sql", "state"))
                made = change(trajectories=trajectories, **columns)
                right = state(trajectories=trajectories, **columns)
                # The plain side reads the episode's own database file directly, after its rewards.
                for i, episode in enumerate(episodes):
                    copy = folder / f"{start + i}.db"
                    shutil.copy(episode.dir / "club.db", copy)
                    with sqlite3.connect(copy) as db:
                        plain = tables(db) == expected_tables(seed, rows_now[i]["reference_sql"])
                    db.close()
                    tool = made[i] == 1.0 and right[i] == 1.0
                    case = plans_now[i][0]
                    out.append(
                        (
                            tool,
                            plain,
                            f"{case}: {rows_now[i]['question']!r} change {made[i]} state {right[i]}",
                        )
                    )
                pool.close_episodes(episodes)
                log(f"records: {len(out)}/{n}")
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--per-recipe", type=int, default=200, help="Episodes for calculator and for sql.")
    parser.add_argument("--records", type=int, default=120, help="Per-episode database episodes.")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    rng = random.Random(args.seed)
    started = time.monotonic()
    results: dict[str, list[tuple[bool, bool, str]]] = {}
    for name, run, n in (("calculator", calculator, args.per_recipe), ("sql", sql, args.per_recipe),
                         ("records", records, args.records)):  # fmt: skip
        results[name] = run(n, rng)
        log(f"{name}: {len(results[name])} episodes scored")
    by_recipe = {}
    for name, scored in results.items():
        disagreements = [what for tool, plain, what in scored if tool != plain]
        for what in disagreements[:5]:
            print(f"disagree [{name}] {what}")
        by_recipe[name] = {
            "episodes": len(scored),
            "agree": len(scored) - len(disagreements),
            "positives": sum(plain for _, plain, _ in scored),
        }
    episodes = sum(r["episodes"] for r in by_recipe.values())
    agree = sum(r["agree"] for r in by_recipe.values())
    result = {
        "episodes": episodes,
        "agree": agree,
        "agreement": round(agree / episodes, 4),
        "by_recipe": by_recipe,
        "wall_s": round(time.monotonic() - started, 1),
    }
    finish(result, f"agreement {agree}/{episodes} = {agree / episodes:.4f}")


if __name__ == "__main__":
    main()

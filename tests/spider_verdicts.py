# ruff: noqa: E501  (the SQL of CASES reads best one query a line)
"""Record Spider's own execution-match verdicts for tests/unit/verifiers/test_sql_spider.py.

Spider's official evaluation (taoyds/test-suite-sql-eval: ``exec_eval.eval_exec_match``, what
Spider's leaderboard reports execution accuracy with) is not on PyPI, so its verdicts are
recorded here from a checkout and committed (tests/data/spider_exec_verdicts.jsonl; the
header names the commit and the sqlparse it ran with). To record them again:

    git clone https://github.com/taoyds/test-suite-sql-eval /tmp/test-suite-sql-eval
    pip install sqlparse==0.5.3 tqdm        # what its parse.py and exec_eval.py import
    python -m tests.spider_verdicts /tmp/test-suite-sql-eval [COMMIT]

(COMMIT: for an exported tree without ``.git``.) Each database is built from the SQL in
``DATABASES`` as Spider lays its files out (``<db_id>/<db_id>.sqlite``) and each (gold,
predicted) pair of ``CASES`` is scored by ``eval_exec_match`` at the evaluation's defaults
(no value plugging, DISTINCT not kept).
"""

from __future__ import annotations

import contextlib
import importlib
import io
import json
import sqlite3
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

OUT = Path(__file__).parent / "data" / "spider_exec_verdicts.jsonl"

_SINGERS = [
    (1, "Joe Sharp", "Netherlands", 52, "F"),
    (2, "Timbaland", "United States", 32, "T"),
    (3, "Justin Brown", "France", 29, "T"),
    (4, "Rose White", "France", 41, "F"),
    (5, "John Nizinik", "France", 43, "T"),
    (6, "Tribal King", "France", 25, "T"),
    (7, "Anna Lee", "United States", 32, "F"),
    (8, "Ming Ho", None, None, "T"),
]
_CONCERTS = [
    (1, "Auditions", "Free choice", 1, "2014"),
    (2, "Super bootcamp", "Free choice 2", 2, "2014"),
    (3, "Home Visits", "Bleeding Love", 2, "2015"),
    (4, "Week 1", "Wide Awake", 10, "2014"),
    (5, "Week 1", "Happy Tonight", 9, "2015"),
    (6, "Week 2", "Party All Night", 7, "2015"),
    (7, "Finale", "distinct", 3, "2016"),
]
_STADIUMS = [
    (1, "Raith Rovers", "Stark's Park", 10104, 4812, 1294, 2106.5),
    (2, "Ayr United", "Somerset Park", 11998, 2363, 1057, 1477.25),
    (3, "East Fife", "Bayview Stadium", 2000, 1980, 533, 864.0),
    (7, "Stirling Albion", "Forthbank Stadium", 3808, 1125, 404, 642.0),
    (9, "Brechin City", "Glebe Park", 3960, 780, 315, 552.0),
    (10, "Queen's Park", "Hampden Park", 52500, 1763, 466, 730.0),
]
_IN_CONCERT = [(1, 2), (1, 3), (1, 5), (2, 3), (2, 6), (3, 5), (4, 4), (5, 6), (5, 3), (6, 2)]


def _inserts(table: str, rows: list[tuple[Any, ...]]) -> str:
    def value(v: Any) -> str:
        if v is None:
            return "NULL"
        if isinstance(v, str):
            return "'" + v.replace("'", "''") + "'"
        return repr(v)

    return "".join(f"INSERT INTO {table} VALUES ({', '.join(map(value, r))});\n" for r in rows)


DATABASES = {
    "concert_singer": (
        "CREATE TABLE singer(singer_id INT PRIMARY KEY, name TEXT, country TEXT, age INT, "
        "is_male TEXT);\n"
        "CREATE TABLE concert(concert_id INT PRIMARY KEY, concert_name TEXT, theme TEXT, "
        "stadium_id INT, year TEXT);\n"
        "CREATE TABLE stadium(stadium_id INT PRIMARY KEY, location TEXT, name TEXT, "
        "capacity INT, highest INT, lowest INT, average REAL);\n"
        "CREATE TABLE singer_in_concert(concert_id INT, singer_id INT);\n"
        + _inserts("singer", _SINGERS)
        + _inserts("concert", _CONCERTS)
        + _inserts("stadium", _STADIUMS)
        + _inserts("singer_in_concert", _IN_CONCERT)
    ),
    "pets_1": (
        "CREATE TABLE student(stuid INT PRIMARY KEY, lname TEXT, fname TEXT, age INT, "
        "sex TEXT, major INT, city_code TEXT);\n"
        "CREATE TABLE has_pet(stuid INT, petid INT);\n"
        "CREATE TABLE pets(petid INT PRIMARY KEY, pettype TEXT, pet_age INT, weight REAL);\n"
        + _inserts(
            "student",
            [
                (1001, "Smith", "Linda", 18, "F", 600, "BAL"),
                (1002, "Kim", "Tracy", 19, "F", 600, "HKG"),
                (1003, "Jones", "Shiela", 21, "F", 600, "WAS"),
                (1004, "Kumar", "Dinesh", 20, "M", 600, "PIT"),
                (1005, "Gompers", "Paul", 26, "M", 50, "BAL"),
                (1006, "Schultz", "Andy", 18, "M", 50, "BAL"),
                (1007, "Apap", "Lisa", 18, "F", 50, "PIT"),
            ],
        )
        + _inserts("has_pet", [(1001, 2001), (1002, 2002), (1002, 2003), (1005, 2004)])
        + _inserts(
            "pets",
            [
                (2001, "cat", 3, 12.0),
                (2002, "dog", 2, 13.4),
                (2003, "dog", 1, 9.3),
                (2004, "cat", 4, 8.25),
            ],
        )
    ),
}

# (db_id, gold, predictions): Spider-style questions, each with predictions a model might
# write: the gold itself, its columns in another order, DISTINCT added or left out, another
# row order, ORDER BY's direction, wrong filters, extra or missing columns, `> =`, errors.
CASES: list[tuple[str, str, list[str]]] = [
    ("concert_singer", "SELECT count(*) FROM singer", [
        "SELECT count(*) FROM singer",
        "SELECT count(singer_id) FROM singer",
        "SELECT count(age) FROM singer",
        "SELECT count(DISTINCT country) FROM singer",
        "SELECT count(*) FROM concert",
        "SELECT count(*), 1 FROM singer",
        "SELECT count(* FROM singer",
    ]),
    ("concert_singer", "SELECT name, country, age FROM singer ORDER BY age DESC", [
        "SELECT name, country, age FROM singer ORDER BY age DESC",
        "SELECT country, name, age FROM singer ORDER BY age DESC",
        "SELECT age, country, name FROM singer ORDER BY age DESC",
        "SELECT name, country, age FROM singer ORDER BY age",
        "SELECT name, country, age FROM singer",
        "SELECT name, country FROM singer ORDER BY age DESC",
        "SELECT name, country, age FROM singer ORDER BY age DESC, name",
        "SELECT DISTINCT name, country, age FROM singer ORDER BY age DESC",
    ]),
    ("concert_singer", "SELECT DISTINCT country FROM singer WHERE age > 20", [
        "SELECT DISTINCT country FROM singer WHERE age > 20",
        "SELECT country FROM singer WHERE age > 20",
        "SELECT country FROM singer WHERE age > 20 GROUP BY country",
        "SELECT distinct(country) FROM singer WHERE age > 20",
        "SELECT DISTINCT country FROM singer WHERE age > 30",
        "SELECT DISTINCT country FROM singer",
    ]),
    ("concert_singer", "SELECT country FROM singer WHERE age > 20", [
        "SELECT country FROM singer WHERE age > 20",
        "SELECT DISTINCT country FROM singer WHERE age > 20",
        "SELECT country FROM singer WHERE age > 20 ORDER BY country",
        "SELECT country FROM singer WHERE age > = 21",
        "SELECT country FROM singer WHERE age >= 21",
        "SELECT country FROM singer WHERE age > 20 LIMIT 3",
    ]),
    ("concert_singer", "SELECT avg(age), min(age), max(age) FROM singer WHERE country = 'France'", [
        "SELECT avg(age), min(age), max(age) FROM singer WHERE country = 'France'",
        "SELECT max(age), min(age), avg(age) FROM singer WHERE country = 'France'",
        "SELECT min(age), avg(age), max(age) FROM singer WHERE country = 'France'",
        "SELECT avg(age), min(age), max(age) FROM singer WHERE country = 'france'",
        "SELECT sum(age) * 1.0 / count(*), min(age), max(age) FROM singer WHERE country = 'France'",
        "SELECT avg(age), max(age) FROM singer WHERE country = 'France'",
    ]),
    ("concert_singer", "SELECT country, count(*) FROM singer GROUP BY country", [
        "SELECT country, count(*) FROM singer GROUP BY country",
        "SELECT count(*), country FROM singer GROUP BY country",
        "SELECT country, count(*) FROM singer GROUP BY country ORDER BY count(*) DESC",
        "SELECT country, count(name) FROM singer GROUP BY country",
        "SELECT country, count(age) FROM singer GROUP BY country",
        "SELECT country, count(*) FROM singer WHERE country IS NOT NULL GROUP BY country",
        "SELECT DISTINCT country, count(*) FROM singer GROUP BY country",
    ]),
    ("concert_singer", "SELECT name FROM stadium WHERE capacity > (SELECT avg(capacity) FROM stadium)", [
        "SELECT name FROM stadium WHERE capacity > (SELECT avg(capacity) FROM stadium)",
        "SELECT name FROM stadium WHERE capacity > 14000",
        "SELECT name FROM stadium ORDER BY capacity DESC LIMIT 1",
        "SELECT location FROM stadium WHERE capacity > (SELECT avg(capacity) FROM stadium)",
        "SELECT name FROM stadium WHERE capacity > (SELECT avg(capacity) FROM stadium",
    ]),
    ("concert_singer", "SELECT name, capacity FROM stadium ORDER BY average DESC LIMIT 1", [
        "SELECT name, capacity FROM stadium ORDER BY average DESC LIMIT 1",
        "SELECT capacity, name FROM stadium ORDER BY average DESC LIMIT 1",
        "SELECT name, capacity FROM stadium WHERE average = (SELECT max(average) FROM stadium)",
        "SELECT name, capacity FROM stadium ORDER BY average LIMIT 1",
        "SELECT name, max(average) FROM stadium",
    ]),
    ("concert_singer", "SELECT T2.name, count(*) FROM concert AS T1 JOIN stadium AS T2 ON T1.stadium_id = T2.stadium_id GROUP BY T1.stadium_id", [
        "SELECT T2.name, count(*) FROM concert AS T1 JOIN stadium AS T2 ON T1.stadium_id = T2.stadium_id GROUP BY T1.stadium_id",
        "SELECT count(*), T2.name FROM concert AS T1 JOIN stadium AS T2 ON T1.stadium_id = T2.stadium_id GROUP BY T2.name",
        "SELECT s.name, count(c.concert_id) FROM stadium s LEFT JOIN concert c ON c.stadium_id = s.stadium_id GROUP BY s.stadium_id",
        "SELECT T2.name, count(*) FROM concert AS T1 JOIN stadium AS T2 ON T1.stadium_id = T2.stadium_id GROUP BY T1.year",
    ]),
    ("concert_singer", "SELECT year FROM concert GROUP BY year ORDER BY count(*) DESC LIMIT 1", [
        "SELECT year FROM concert GROUP BY year ORDER BY count(*) DESC LIMIT 1",
        "SELECT year FROM concert GROUP BY year ORDER BY count(*) LIMIT 1",
        "SELECT year, count(*) FROM concert GROUP BY year ORDER BY count(*) DESC LIMIT 1",
        "SELECT DISTINCT year FROM concert WHERE year = '2015'",
        "SELECT '2015'",
    ]),
    ("concert_singer", "SELECT name FROM singer WHERE singer_id NOT IN (SELECT singer_id FROM singer_in_concert)", [
        "SELECT name FROM singer WHERE singer_id NOT IN (SELECT singer_id FROM singer_in_concert)",
        "SELECT name FROM singer EXCEPT SELECT T2.name FROM singer_in_concert AS T1 JOIN singer AS T2 ON T1.singer_id = T2.singer_id",
        "SELECT name FROM singer WHERE singer_id IN (SELECT singer_id FROM singer_in_concert)",
        "SELECT name FROM singer WHERE singer_id NOT IN (SELECT singer_id FROM singer_in_concert) ORDER BY name",
    ]),
    ("concert_singer", "SELECT T2.name FROM singer_in_concert AS T1 JOIN singer AS T2 ON T1.singer_id = T2.singer_id", [
        "SELECT T2.name FROM singer_in_concert AS T1 JOIN singer AS T2 ON T1.singer_id = T2.singer_id",
        "SELECT DISTINCT T2.name FROM singer_in_concert AS T1 JOIN singer AS T2 ON T1.singer_id = T2.singer_id",
        "SELECT name FROM singer WHERE singer_id IN (SELECT singer_id FROM singer_in_concert)",
        "SELECT T2.name FROM singer_in_concert AS T1 JOIN singer AS T2 ON T1.singer_id = T2.singer_id ORDER BY T2.name",
    ]),
    ("concert_singer", "SELECT name FROM singer WHERE singer_id IN (SELECT singer_id FROM singer_in_concert ORDER BY concert_id)", [
        "SELECT name FROM singer WHERE singer_id IN (SELECT singer_id FROM singer_in_concert ORDER BY concert_id)",
        "SELECT name FROM singer WHERE singer_id IN (SELECT singer_id FROM singer_in_concert) ORDER BY name DESC",
        "SELECT name FROM singer WHERE singer_id IN (SELECT singer_id FROM singer_in_concert)",
    ]),
    ("concert_singer", "SELECT name, age FROM singer WHERE is_male = 'T' ORDER  BY age", [
        "SELECT name, age FROM singer WHERE is_male = 'T' ORDER  BY age",
        "SELECT name, age FROM singer WHERE is_male = 'T' ORDER BY age DESC",
        "SELECT age, name FROM singer WHERE is_male = 'T'",
    ]),
    ("concert_singer", "SELECT concert_name FROM concert WHERE theme = 'distinct'", [
        "SELECT concert_name FROM concert WHERE theme = 'distinct'",
        "SELECT concert_name FROM concert WHERE theme = 'DISTINCT'",
        "SELECT concert_name FROM concert WHERE theme LIKE 'distinct'",
        "SELECT DISTINCT concert_name FROM concert WHERE theme = \"distinct\"",
    ]),
    ("concert_singer", "SELECT concert_name, theme, year, stadium_id FROM concert WHERE year = '2014'", [
        "SELECT concert_name, theme, year, stadium_id FROM concert WHERE year = '2014'",
        "SELECT stadium_id, year, theme, concert_name FROM concert WHERE year = '2014'",
        "SELECT theme, concert_name, stadium_id, year FROM concert WHERE year = '2014'",
        "SELECT concert_name, theme, year, concert_id FROM concert WHERE year = '2014'",
        "SELECT concert_name, theme, year, stadium_id FROM concert WHERE year = 2014",
        "SELECT concert_name, theme, year FROM concert WHERE year = '2014'",
    ]),
    ("concert_singer", "SELECT name FROM singer WHERE age > YEAR(CURDATE()) - 1990", [
        "SELECT name FROM singer WHERE age > 30",
        "SELECT name FROM singer WHERE age > YEAR(CURDATE()) - 1990",
        "SELECT name FROM singer WHERE age > 29",
    ]),
    ("concert_singer", "SELECT name FROM singer WHERE country = 'Japan'", [
        "SELECT name FROM singer WHERE country = 'Japan'",
        "SELECT name FROM singer WHERE country = 'Japan' AND age > 1",
        "SELECT name, age FROM singer WHERE country = 'Japan'",
        "SELECT name FROM singer WHERE country = 'France'",
    ]),
    ("concert_singer", "SELECT lowest, highest, average FROM stadium WHERE capacity < 5000", [
        "SELECT lowest, highest, average FROM stadium WHERE capacity < 5000",
        "SELECT highest, lowest, average FROM stadium WHERE capacity < 5000",
        "SELECT average, lowest, highest FROM stadium WHERE capacity < 5000",
        "SELECT lowest, highest, average * 1 FROM stadium WHERE capacity < 5000",
        "SELECT lowest, highest, round(average) FROM stadium WHERE capacity < 5000",
    ]),
    ("pets_1", "SELECT count(*) FROM student WHERE stuid NOT IN (SELECT stuid FROM has_pet)", [
        "SELECT count(*) FROM student WHERE stuid NOT IN (SELECT stuid FROM has_pet)",
        "SELECT count(*) FROM student AS T1 LEFT JOIN has_pet AS T2 ON T1.stuid = T2.stuid WHERE T2.petid IS NULL",
        "SELECT count(*) FROM student",
        "SELECT 4",
        "SELECT 4.0",
        "SELECT '4'",
    ]),
    ("pets_1", "SELECT pettype, avg(weight) FROM pets GROUP BY pettype", [
        "SELECT pettype, avg(weight) FROM pets GROUP BY pettype",
        "SELECT avg(weight), pettype FROM pets GROUP BY pettype",
        "SELECT pettype, sum(weight) / count(*) FROM pets GROUP BY pettype",
        "SELECT pettype, max(weight) FROM pets GROUP BY pettype",
        "SELECT pettype, avg(pet_age) FROM pets GROUP BY pettype",
    ]),
    ("pets_1", "SELECT DISTINCT T1.fname, T1.age FROM student AS T1 JOIN has_pet AS T2 ON T1.stuid = T2.stuid", [
        "SELECT DISTINCT T1.fname, T1.age FROM student AS T1 JOIN has_pet AS T2 ON T1.stuid = T2.stuid",
        "SELECT T1.fname, T1.age FROM student AS T1 JOIN has_pet AS T2 ON T1.stuid = T2.stuid",
        "SELECT T1.age, T1.fname FROM student AS T1 JOIN has_pet AS T2 ON T1.stuid = T2.stuid GROUP BY T1.stuid",
        "SELECT fname, age FROM student WHERE stuid IN (SELECT stuid FROM has_pet)",
    ]),
    ("pets_1", "SELECT major, age, sex FROM student WHERE city_code = 'BAL' ORDER BY age", [
        "SELECT major, age, sex FROM student WHERE city_code = 'BAL' ORDER BY age",
        "SELECT sex, major, age FROM student WHERE city_code = 'BAL' ORDER BY age",
        "SELECT age, age, sex FROM student WHERE city_code = 'BAL' ORDER BY age",
        "SELECT major, age, sex FROM student WHERE city_code = 'BAL' ORDER BY age DESC",
        "SELECT major, age, sex FROM student WHERE city_code = 'BAL'",
    ]),
    ("pets_1", "SELECT stuid, stuid FROM has_pet", [
        "SELECT stuid, stuid FROM has_pet",
        "SELECT stuid, petid FROM has_pet",
        "SELECT stuid FROM has_pet",
    ]),
]  # fmt: skip


def _load_peer(checkout: Path) -> Any:
    sys.path.insert(0, str(checkout))
    return importlib.import_module("exec_eval")


def _commit(checkout: Path) -> str:
    found = subprocess.run(
        ["git", "-C", str(checkout), "rev-parse", "HEAD"], capture_output=True, text=True
    )
    return found.stdout.strip() if found.returncode == 0 else sys.argv[2]


def main() -> None:
    checkout = Path(sys.argv[1])
    peer = _load_peer(checkout)
    import sqlparse

    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        paths = {}
        for db_id, setup in DATABASES.items():
            folder = Path(tmp) / db_id
            folder.mkdir()
            paths[db_id] = folder / f"{db_id}.sqlite"
            with contextlib.closing(sqlite3.connect(paths[db_id])) as conn:
                conn.executescript(setup)
                conn.commit()
        for db_id, gold, preds in CASES:
            for pred in preds:
                with contextlib.redirect_stdout(io.StringIO()):
                    verdict = peer.eval_exec_match(
                        db=str(paths[db_id]),
                        p_str=pred,
                        g_str=gold,
                        plug_value=False,
                        keep_distinct=False,
                        progress_bar_for_each_datapoint=False,
                    )
                rows.append({"db_id": db_id, "gold": gold, "pred": pred, "exec": verdict})
    header = {
        "test_suite_sql_eval_commit": _commit(checkout),
        "sqlparse": sqlparse.__version__,
        "databases": DATABASES,
        "rows": len(rows),
    }
    with OUT.open("w") as fh:
        fh.write(json.dumps(header) + "\n")
        for row in rows:
            fh.write(json.dumps(row) + "\n")
    print(f"{len(rows)} verdicts ({sum(r['exec'] for r in rows)} matches) -> {OUT}")


if __name__ == "__main__":
    main()

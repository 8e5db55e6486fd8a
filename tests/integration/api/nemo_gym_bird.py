"""Run inside NeMo Gym 0.7.0's environment (nemo_gym_peer.nemo_gym_python): NeMo Gym's own
bird_sql resources server (``resources_servers/bird_sql/app.py`` of the installed wheel, built by
its own classes, its databases folder the one given) and referee's ``/nemo-gym/{env}/verify``
(its ``REFEREE_SQL_DATABASES_DIR`` the same ``dev_databases`` folder) score the same rows and
responses: queries right and wrong, in the fences and tags models write them in. Every request
is validated by bird_sql's own request model. argv: referee's url, the BIRD folder (holding
``dev_20240627/dev_databases/<db_id>/<db_id>.sqlite``), the output path (a JSON list of
``[case, bird_sql's reward, referee's status, referee's reward]``).
"""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Any
from unittest.mock import MagicMock

from nemo_gym.server_utils import ServerClient
from nemo_gym_servers import load_app, response, said, score_both

bird = load_app("bird_sql")  # its app.py imports its eval_utils and setup_bird_sql beside it

ROWS = [
    ("SELECT name FROM singer WHERE country = 'France'", "concert"),
    ("SELECT country, COUNT(*) FROM singer GROUP BY country", "concert"),
    ("SELECT MAX(age) FROM singer", "concert"),
]
ANSWERS = [
    "```sql\n{q}\n```",
    "Reasoning first.\n\n```SQL\n{q};\n```",
    "```sql {q}```",
    "```sql\n**Query**\n{q}\n```",
    "Draft:\n```sql\nSELECT 1\n```\nFinal:\n```sql\n{q}\n```",
    "```sql\n{q}\n```\nOn second thought:\n```sql\nSELECT 1\n```",
    "{q}",
    "```\n{q}\n```",
    "```sqlite\n{q}\n```",
    "```sql\n{q} ORDER BY 1 DESC\n```",
    "```sql\nSELECT name, name FROM singer\n```",
    "```sql\nSELEC name FROM singer\n```",
    "```sql\nSELECT name FROM nowhere\n```",
    "```sql\n```",
    "",
]
SWAPS = {  # right by BIRD's set comparison though written otherwise, or wrong
    "concert": [
        "```sql\nSELECT DISTINCT name FROM singer WHERE country = 'France'\n```",
        "```sql\nSELECT name FROM singer WHERE country = 'France' UNION ALL "
        "SELECT name FROM singer WHERE country = 'France'\n```",
        "```sql\nSELECT COUNT(*), country FROM singer GROUP BY country\n```",
        "```sql\nSELECT age FROM singer ORDER BY age DESC LIMIT 1\n```",
        "```sql\nSELECT MAX(age) + 0.0 FROM singer\n```",
        "```sql\nSELECT name FROM singer WHERE country = 'france'\n```",
    ]
}


def cases() -> list[tuple[str, dict[str, Any]]]:
    out = []
    for k, (gold, db_id) in enumerate(ROWS):
        row = {
            "responses_create_params": {"input": [{"role": "user", "content": f"Question {k}"}]},
            "question": f"Question {k}",
            "gt_sql": gold,
            "db_id": db_id,
            "id": k,
        }
        for answer in [a.format(q=gold) for a in ANSWERS] + SWAPS[db_id]:
            out.append((f"row {k}: {answer[:60]!r}", {**row, "response": response([said(answer)])}))
    return out


async def main(url: str, folder: str, path: str) -> None:
    config = bird.BirdSqlResourcesServerConfig(
        host="127.0.0.1", port=0, entrypoint="", name="bird_sql", bird_sql_dir=folder
    )
    server = bird.BirdSqlResourcesServer(config=config, server_client=MagicMock(spec=ServerClient))
    results = await score_both(url, server, bird.BirdSqlVerifyRequest, cases())
    Path(path).write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2], sys.argv[3]))

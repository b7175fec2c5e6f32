"""``python -m mcp_rl.datasets.club --seed 0 --out DIR``: write the club database, questions and tasks."""

from mcp_rl.datasets.club import main

main()

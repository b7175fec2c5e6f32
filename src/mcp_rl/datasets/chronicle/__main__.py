"""``python -m mcp_rl.datasets.chronicle --seed 0 --out DIR``: write the chronicle corpus and questions."""

from mcp_rl.datasets.chronicle import main

main()

"""``python -m mcp_rl.datasets.errands --seed 0 --out DIR``: write the errands test set."""

from mcp_rl.datasets.errands import main

main()

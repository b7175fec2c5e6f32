"""``python -m mcp_rl.datasets.fictional --seed 0 --out DIR``: write a fictional world's files."""

from mcp_rl.datasets.fictional import main

main()

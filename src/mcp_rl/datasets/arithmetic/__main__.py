"""``python -m mcp_rl.datasets.arithmetic --seed 0 --out DIR``: write the arithmetic word problems."""

from mcp_rl.datasets.arithmetic import main

main()

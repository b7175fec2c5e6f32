"""``python -m tool_servers.calculator [--transport http --port N]``."""

from tool_servers.calculator.server import main

if __name__ == "__main__":
    main()

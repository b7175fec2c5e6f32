"""Recipes: the shipped ones validate, overrides and ${section.field} work, and every mistake is one line."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
import yaml
from pydantic import BaseModel

from mcp_rl.config.recipe import (
    apply_overrides,
    describe_recipe_fields,
    find_recipe,
    list_recipes,
    load_recipe,
    recipe_dirs,
    recipe_from_dict,
    recipe_to_yaml,
)
from mcp_rl.config.sections import Recipe, RewardSpec
from mcp_rl.datasets import builtin_dataset_dir
from mcp_rl.env.recipe_checks import check_recipe, recipe_servers
from mcp_rl.errors import RecipeError

ROOT = Path(__file__).resolve().parents[1]
SHIPPED = sorted(path.stem for path in (ROOT / "recipes").glob("*.yaml"))


@contextmanager
def raises_one_line(match: str) -> Iterator[None]:
    """Expect a ``RecipeError`` whose message contains ``match`` and fits on one line."""
    with pytest.raises(RecipeError) as info:
        yield
    message = str(info.value)
    assert "\n" not in message and match in message, message


# -- shipped recipes ----------------------------------------------------------------------------------
def test_shipped_recipes_are_listed_with_descriptions() -> None:
    listed = dict(list_recipes())
    assert {"search", "search-nq", "calculator"} <= set(SHIPPED) <= set(listed)
    assert all(listed[name] for name in SHIPPED)
    assert ROOT / "recipes" in recipe_dirs()


@pytest.mark.parametrize("name", SHIPPED)
def test_shipped_recipe_validates_and_round_trips(name: str) -> None:
    recipe = load_recipe(name)
    assert recipe.name == name
    assert recipe_servers(recipe)
    # What `recipes show` prints loads back to the same recipe.
    assert recipe_from_dict(yaml.safe_load(recipe_to_yaml(recipe))) == recipe


def test_search_recipe_resolves_the_builtin_corpus_into_the_server_args() -> None:
    recipe = load_recipe("search")
    corpus = str(builtin_dataset_dir("fictional") / "corpus.jsonl")
    assert recipe.data.corpus == corpus
    (server,) = recipe_servers(recipe)
    assert server.command == sys.executable  # `python` means the interpreter running mcp-rl
    assert server.args[server.args.index("--corpus") + 1] == corpus
    assert [m["role"] for m in recipe.prompt.few_shot] == ["user", "assistant"] * 4
    assert [(r.name, r.weight) for r in recipe.rewards if r.weight] == [  # weight 0: logged metrics
        ("exact_match", 1.0),
        ("f1", 0.5),
        ("answer_retrieved", 0.2),
        ("format", 0.1),
    ]
    # The numbers are tuned over time: check they arrive as written in the file, as numbers.
    written = yaml.safe_load(find_recipe("search").read_text())["trainer"]
    assert recipe.trainer["learning_rate"] == float(written["learning_rate"]) > 0
    assert recipe.trainer["loss_type"] == "dapo"


def test_search_nq_leaves_environment_variables_to_the_servers(monkeypatch: pytest.MonkeyPatch) -> None:
    recipe = load_recipe("search-nq")
    assert "${SEARCH_R1_RETRIEVER_URL:-http://127.0.0.1:8000}" in recipe.tools.mcpServers["search"]["args"]
    monkeypatch.setenv("SEARCH_R1_RETRIEVER_URL", "http://10.0.0.5:9000")
    assert "http://10.0.0.5:9000" in recipe_servers(recipe)[0].args


def test_defaults_alone_are_a_valid_recipe() -> None:
    recipe = recipe_from_dict({})
    assert recipe == Recipe(name="recipe")
    assert recipe_servers(recipe) == []


def test_every_config_field_has_help_and_is_described() -> None:
    described = describe_recipe_fields()
    sections = {
        name: info.annotation
        for name, info in Recipe.model_fields.items()
        if isinstance(info.annotation, type) and issubclass(info.annotation, BaseModel)
    }
    for cls in (Recipe, RewardSpec, *sections.values()):
        for name, info in cls.model_fields.items():
            assert info.description, f"{cls.__name__}.{name} has no help"
    for section, cls in sections.items():
        for name in cls.model_fields:
            assert f"{section}.{name}:" in described
    assert "- weight: float = 1.0" in described and "GRPOConfig" in described
    assert "Most model turns per episode. Must be at least 1." in described  # bounds are documented


# -- overrides ----------------------------------------------------------------------------------------
def test_overrides_are_parsed_as_yaml() -> None:
    recipe = load_recipe(
        "search",
        [
            "rollout.max_turns=5",
            "trainer.learning_rate=1e-5",  # YAML 1.1 reads this as a string; it is a number here
            "trainer.max_steps=3",
            "model.lora=true",
            "model.train_top_layers=null",
            "model.lora_target_modules=[q_proj, v_proj]",
            "data.eval=null",
            "rewards.1.weight=2",
            "tools.timeout_s=7",
            "prompt.system=Be brief.",
        ],
    )
    assert recipe.rollout.max_turns == 5
    assert recipe.trainer["learning_rate"] == 1e-5 and recipe.trainer["max_steps"] == 3
    assert recipe.model.lora is True and recipe.model.lora_target_modules == ["q_proj", "v_proj"]
    assert recipe.data.eval is None
    assert recipe.rewards[1].weight == 2
    assert [server.timeout_s for server in recipe_servers(recipe)] == [7.0]
    assert recipe.prompt.system == "Be brief."


def test_overrides_create_missing_sections_and_leave_the_input_alone() -> None:
    raw: dict[str, Any] = {"rollout": {"max_turns": 2}}
    changed = apply_overrides(raw, ["tools.mcpServers.echo.command=python", "rollout.max_turns=3"])
    assert changed["tools"] == {"mcpServers": {"echo": {"command": "python"}}}
    assert raw == {"rollout": {"max_turns": 2}}


# -- interpolation ------------------------------------------------------------------------------------
def _with_server(args: list[str], **data: Any) -> dict[str, Any]:
    return {"data": data, "tools": {"mcpServers": {"s": {"command": "python", "args": args}}}}


def test_dotted_references_are_interpolated_and_undotted_ones_left_for_the_environment(
    tmp_path: Path,
) -> None:
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text("{}\n")
    raw = _with_server(
        ["--corpus", "${data.corpus}", "--name=${model.name_or_path}-x", "${HOME}"], corpus=str(corpus)
    )
    recipe = recipe_from_dict(raw)
    assert recipe.tools.mcpServers["s"]["args"] == [
        "--corpus",
        str(corpus),
        "--name=smollm2-135m-x",
        "${HOME}",
    ]


def test_relative_corpus_paths_are_resolved_against_the_working_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "mine.jsonl").write_text("{}\n")
    monkeypatch.chdir(tmp_path)
    recipe = recipe_from_dict(_with_server(["${data.corpus}"], corpus="mine.jsonl"))
    assert recipe.tools.mcpServers["s"]["args"] == [str(tmp_path / "mine.jsonl")]


def test_interpolation_applies_after_overrides() -> None:
    recipe = load_recipe("search", ["data.corpus=/elsewhere/corpus.jsonl"])
    assert "/elsewhere/corpus.jsonl" in recipe_servers(recipe)[0].args


# -- mistakes -----------------------------------------------------------------------------------------
MALFORMED_OVERRIDES = [
    (["modle.name_or_path=x"], "modle: unknown section (did you mean model?)"),
    (["rollout.max_turn=3"], "rollout.max_turn: unknown field (did you mean max_turns?)"),
    (["rollout.max_turns=three"], "rollout.max_turns: expected an integer, got 'three'"),
    (["rollout.max_turns=true"], "rollout.max_turns: expected an integer, got true"),
    (["model.lora=maybe"], "model.lora: expected true or false, got 'maybe'"),
    (["model.dtype=fp16"], "model.dtype: expected one of 'auto', 'float32', 'bfloat16', got 'fp16'"),
    (
        ["rollout.observation_role=assistant"],
        "rollout.observation_role: expected one of 'user', 'tool', 'inline'",
    ),
    (
        ["rollout.on_no_action=stpo"],
        "rollout.on_no_action: expected one of 'retry', 'stop', got 'stpo' (did you mean stop?)",
    ),
    (["rollout.backend=sglang"], "rollout.backend: expected one of 'transformers', 'vllm'"),
    (["parser.name=json"], "parser.name: expected one of 'search_r1', 'tool_call', 'tags', got 'json'"),
    (["rollout.max_new_tokens=-1"], "rollout.max_new_tokens: must be at least 1, got -1"),
    (["tools.timeout_s=0"], "tools.timeout_s: must be positive, got 0"),
    (["rollout.top_p=1.5"], "rollout.top_p: must be at most 1.0, got 1.5"),
    (["data.train_limit=ten"], "data.train_limit: expected an integer or null, got 'ten'"),
    (
        ["rollout.max_new_tokens=1000"],
        "rollout.max_new_tokens: 1000 exceeds rollout.max_completion_tokens (384)",
    ),
    (
        ["trainer.learning_rat=1e-5"],
        "trainer.learning_rat: not a GRPOConfig field (did you mean learning_rate?)",
    ),
    (["trainer.learning_rate=fast"], "trainer.learning_rate: expected a number, got 'fast'"),
    (["trainer.num_generations=1"], "trainer.num_generations: must be at least 2, got 1"),
    (["trainer.use_vllm=3"], "trainer.use_vllm: expected true or false, got 3"),
    (["trainer.temperature=0.7"], "trainer.temperature: set rollout.temperature instead"),
    (
        ["trainer.max_completion_length=64"],
        "trainer.max_completion_length: set rollout.max_completion_tokens",
    ),
    (["model.train_top_layers=0"], "model.train_top_layers: must be at least 1, got 0"),
    (["model.lora=true"], "model.train_top_layers: LoRA already decides what trains"),
    (["foo"], "--set foo: expected KEY.PATH=VALUE, e.g. --set rollout.max_turns=3"),
    (["=3"], "--set =3: expected KEY.PATH=VALUE"),
    (["x=[1"], "--set x: value '[1' is not valid YAML"),
    (["rollout.max_turns.x=3"], "--set rollout.max_turns.x: rollout.max_turns is 3, which has no field 'x'"),
    (
        ["rewards=[{name: f1}, {name: format}]", "rewards.2.weight=1"],
        "--set: rewards is a list of 2 item(s); use an index 0..1",
    ),
    (["rewards=[{name: exact_match, wieght: 2}]"], "rewards[0].wieght: unknown field (did you mean weight?)"),
    (["rewards=[]"], "rewards: give at least one reward"),
    (
        ["rewards=[{name: format, options: {partial: 0.5}}]"],
        "rewards[0].options.partial: unknown field (did you mean partial_credit?)",
    ),
    (["rewards=[{name: tool_verify, options: {arguments: {}}}]"], "rewards[0].options.tool: missing"),
    (
        ["rewards=[{name: judge, options: {backend: api, model: m}}]"],
        "rewards[0].options.backend: expected one of 'openai', 'transformers', got 'api'",
    ),
    (["prompt.few_shot=[{role: bot, content: hi}]"], "prompt.few_shot[0]: expected a chat message"),
    (["prompt.few_shot=hello"], "prompt.few_shot: expected a list of mappings, got 'hello'"),
    (["prompt.user_template='Q: {question'"], "prompt.user_template: not a valid format string"),
    (["model=smollm2"], "model: expected a mapping with fields name_or_path, dtype"),
    (
        ["tools.mcpServers.search.args=${data.corpsu}"],
        "${data.corpsu} names no recipe field (did you mean data.corpus?)",
    ),
    (
        ["data.corpus=null"],
        "tools.mcpServers.search.args[3]: ${data.corpus} is null; set data.corpus in the recipe",
    ),
    (
        ["data.corpus=fictionl"],
        "data.corpus: 'fictionl' is neither a file nor a built-in dataset (did you mean fictional?)",
    ),
]


@pytest.mark.parametrize(
    ("overrides", "message"), MALFORMED_OVERRIDES, ids=[o[0] for o, _ in MALFORMED_OVERRIDES]
)
def test_malformed_recipe_is_refused_with_one_line(overrides: list[str], message: str) -> None:
    with raises_one_line(message):
        load_recipe("search", overrides)


# Mistakes only building finds: the reward's name looked up, the parser built, the servers resolved.
# Loading does none of that work, so it accepts them; check_recipe (run when an environment is built, and
# by every command right after loading) refuses them with the same one line.
UNBUILDABLE_OVERRIDES = [
    (["rewards=[{name: exact}]"], "rewards[0].name: unknown reward 'exact' (did you mean exact_match?)"),
    (["parser.options={bogus: 1}"], "parser.options: invalid options for parser 'search_r1'"),
    (["tools.mcpServers.search.comand=python"], "tools.mcpServers.search: unknown field(s) ['comand']"),
    (["tools.mcpServers.search=python"], "tools.mcpServers.search must be an object with 'command' or 'url'"),
    (["tools.mcpServers.web={url: ftp://x}"], "tools.mcpServers.web.url must start with http:// or https://"),
    (
        ["tools.mcpServers.search.args=['${NO_SUCH_VAR_42}']"],
        "environment variable NO_SUCH_VAR_42 is not set",
    ),
]


@pytest.mark.parametrize(
    ("overrides", "message"), UNBUILDABLE_OVERRIDES, ids=[o[0] for o, _ in UNBUILDABLE_OVERRIDES]
)
def test_unbuildable_recipe_loads_and_is_refused_with_one_line_when_checked(
    overrides: list[str], message: str
) -> None:
    recipe = load_recipe("search", overrides)
    with raises_one_line(message):
        check_recipe(recipe)


def test_undotted_references_are_environment_variables(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MY_CORPUS", "/from/env.jsonl")
    recipe = load_recipe("search", ["tools.mcpServers.search.args=['${MY_CORPUS}']"], check_trainer=False)
    assert recipe.tools.mcpServers["search"]["args"] == ["${MY_CORPUS}"]  # expanded when servers start
    assert recipe_servers(recipe)[0].args == ["/from/env.jsonl"]


MALFORMED_FILES = [
    ("rollout:\n  max_turns: [1\n", "not valid YAML"),
    ("- model\n- data\n", "expected a mapping of recipe sections, got list"),
    ("rollout: 3\n", "rollout: expected a mapping with fields max_turns"),
    (
        "trainer:\n  learning_rate: 1e-3\n  bf16: yes please\n",
        "trainer.bf16: expected true or false or null, got 'yes please'",
    ),
]


@pytest.mark.parametrize(("text", "message"), MALFORMED_FILES)
def test_malformed_file_is_refused_with_one_line(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text(text)
    with raises_one_line(message):
        load_recipe(str(path))


def alias_bomb(levels: int = 9, where: str = "description") -> str:
    lines = ['l0: &l0 ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]']
    lines += [f"l{i}: &l{i} [{', '.join([f'*l{i - 1}'] * 9)}]" for i in range(1, levels)]
    return "\n".join([*lines, f"{where}: *l{levels - 1}", ""])


def test_yaml_alias_bombs_and_unreadable_files_are_refused_before_anything_runs(tmp_path: Path) -> None:
    # Defect 6 of issue 11: a billion-laughs recipe reached 4 GB in 73 s; 9 levels of 9 expand to 387 M
    # strings, refused here while the document is only composed (a few hundred nodes).
    path = tmp_path / "bad.yaml"
    for text, message in [
        (alias_bomb(), "aliases expand to more than 10,000 values"),
        ("a: &a [1, *a]\n", "a YAML alias refers to a value that contains it"),
        ("rollout: " + "[" * 100_000 + "\n", "nested too deeply"),
        ("model: x\n" + "#" * 1_000_001, "larger than 1,000,000 bytes"),
    ]:
        path.write_text(text)
        with raises_one_line(message):
            load_recipe(str(path))
    path.write_bytes(b"model: caf\xe9\n")
    with raises_one_line("not UTF-8 text (byte 0xe9 at offset 10)"):
        load_recipe(str(path))
    with raises_one_line("aliases expand to more than 10,000 values"):
        load_recipe("search", ["description=" + alias_bomb().replace("\n", ", ").join("{}")])
    # Aliases within the bound still work.
    path.write_text("base: &b {max_turns: 2}\nrollout: *b\n")
    with pytest.raises(RecipeError, match="base"):  # an unknown top-level section, but parsed
        load_recipe(str(path))


def _aliased_args(text: str, copies: int) -> str:
    """A recipe whose one server's args are ``copies`` aliases of one string ``text``."""
    args = ", ".join(["*long"] * copies)
    return f"description: &long {text}\ntools: {{mcpServers: {{s: {{command: python, args: [{args}]}}}}}}\n"


def test_a_long_string_aliased_or_referenced_many_times_is_refused_by_its_size(tmp_path: Path) -> None:
    # Issue 24 item 5: few values, each a long string. Sizes here stay harmless even if the check broke.
    long_text = "x" * 100_000
    path = tmp_path / "long.yaml"
    path.write_text(_aliased_args(long_text, 20))
    with raises_one_line("long.yaml: tools.mcpServers.s.args: its YAML aliases expand to more than 1,000,"):
        load_recipe(str(path))
    path.write_text(_aliased_args(long_text, 5))  # within the bound, aliases still work
    assert load_recipe(str(path)).tools.mcpServers["s"]["args"] == [long_text] * 5
    references = {"prompt": {"system": long_text}, "tools": {"mcpServers": {"s": {"command": "python"}}}}
    references["tools"]["mcpServers"]["s"]["args"] = [" ".join(["${prompt.system}"] * 20)]
    with raises_one_line("tools.mcpServers.s.args[0]: its ${...} references expand the recipe past 1,000"):
        recipe_from_dict(references)


def test_the_issue_sized_alias_bomb_is_one_line_and_writes_nothing_under_a_memory_cap(tmp_path: Path) -> None:
    # The recipe of issue 24 item 5: a 930 KB string aliased 9,000 times (8.4 GB expanded) in a file under
    # the 1 MB bound; `mcp-rl train` had hit MemoryError under a 3 GB cap in the server's describe().
    import resource
    import subprocess

    def cap_memory() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (3 * 1024**3, 3 * 1024**3))

    path = tmp_path / "bomb.yaml"
    path.write_text(_aliased_args("x" * 930_000, 9_000))
    assert path.stat().st_size < 1_000_000
    out = tmp_path / "out"
    done = subprocess.run(
        [sys.executable, "-m", "mcp_rl.cli", "train", "--recipe", str(path), "-o", str(out)],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=tmp_path,
        preexec_fn=cap_memory,
    )
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert done.returncode == 2 and len(lines) == 1, done.stderr[-2000:]
    assert "tools.mcpServers.s.args: its YAML aliases expand to more than 1,000,000 characters" in lines[0]
    assert not out.exists() and sorted(p.name for p in tmp_path.iterdir()) == ["bomb.yaml"]


def test_missing_or_unknown_recipes(tmp_path: Path) -> None:
    with raises_one_line(f"{tmp_path / 'nope.yaml'}: no such recipe file"):
        load_recipe(str(tmp_path / "nope.yaml"))
    with raises_one_line("unknown recipe 'serch' (did you mean search?); available: calculator, records"):
        load_recipe("serch")


def test_a_recipe_over_a_base_merges_mappings_and_replaces_lists_and_values(tmp_path: Path) -> None:
    (tmp_path / "under.yaml").write_text(
        "rollout: {max_turns: 2, max_new_tokens: 32}\nprompt: {system: Be brief., few_shot: "
        "[{role: user, content: a}, {role: assistant, content: b}]}\nrewards: [{name: f1}, {name: format}]\n"
    )
    (tmp_path / "over.yaml").write_text(
        "base: under.yaml\nrollout: {max_turns: 3}\nprompt: {system: null, few_shot: []}\n"
        "rewards: [{name: exact_match}]\n"
    )
    recipe = load_recipe(str(tmp_path / "over.yaml"))
    assert (recipe.rollout.max_turns, recipe.rollout.max_new_tokens) == (3, 32)  # merged key by key
    assert recipe.prompt.system is None and recipe.prompt.few_shot == []  # null and [] replace
    assert [r.name for r in recipe.rewards] == ["exact_match"]  # a list is replaced, not appended to
    (tmp_path / "odd.yaml").write_text("base: under.yaml\nrollout: {null: x}\n")
    with raises_one_line("odd.yaml: cannot be laid over its base 'under.yaml'"):
        load_recipe(str(tmp_path / "odd.yaml"))


def test_a_recipe_file_by_path_is_named_after_its_stem(tmp_path: Path) -> None:
    path = tmp_path / "mine.yaml"
    path.write_text("rollout:\n  max_turns: 2\ntrainer:\n  learning_rate: 3e-6\n")
    recipe = load_recipe(str(path))
    assert (recipe.name, recipe.rollout.max_turns, recipe.trainer["learning_rate"]) == ("mine", 2, 3e-6)


# -- rewards of your own: file.py:function beside the recipe, package.module:function on the path -------
REWARDS_PY = '''
def bonus(*, completions, scale=1.0, **kwargs):
    """scale for every sample."""
    return [scale] * len(completions)


def strict(*, completions, scale=1.0):
    return [scale] * len(completions)


NOT_A_FUNCTION = 3
'''


def _reward_recipe(folder: Path, *rewards: dict[str, Any]) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "mine.yaml"
    path.write_text(yaml.safe_dump({"rewards": list(rewards)}))
    return path


def test_a_reward_file_is_found_beside_the_recipe_from_any_working_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from mcp_rl.rewards import build_reward_functions

    folder = tmp_path / "recipes"
    path = _reward_recipe(folder, {"name": "rewards/mine.py:bonus", "options": {"scale": 2.0}})
    (folder / "rewards").mkdir()
    (folder / "rewards" / "mine.py").write_text(REWARDS_PY)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    recipe = load_recipe(str(path))
    assert recipe.rewards[0].name == f"{folder / 'rewards' / 'mine.py'}:bonus"  # absolute from now on
    resolved = elsewhere / "resolved.yaml"  # as a run writes it: the absolute path still points at the file
    resolved.write_text(recipe_to_yaml(recipe))
    assert load_recipe(str(resolved)).rewards[0].name == recipe.rewards[0].name
    functions, weights = build_reward_functions(recipe.rewards)
    assert functions[0](completions=["a", "b"]) == [2.0, 2.0] and weights == [1.0]
    assert functions[0].__name__ == "bonus"


@pytest.mark.parametrize(
    ("reward", "message"),
    [
        (
            {"name": "missing.py:bonus"},
            "rewards[0].name: cannot import 'RECIPES/missing.py:bonus': no file RECIPES/missing.py",
        ),
        (
            {"name": "mine.py:bonu"},
            "rewards[0].name: cannot import 'RECIPES/mine.py:bonu': RECIPES/mine.py has no 'bonu' "
            "(did you mean bonus?); it has: bonus, strict",
        ),
        (
            {"name": "mine.py:NOT_A_FUNCTION"},
            "rewards[0].name: 'RECIPES/mine.py:NOT_A_FUNCTION' is int, not a function",
        ),
        (
            {"name": "broken.py:f"},
            "rewards[0].name: cannot import 'RECIPES/broken.py:f': NameError in RECIPES/broken.py: "
            "name 'undefined_name' is not defined",
        ),
        (
            {"name": "mine.py:strict", "options": {"scale": 2, "offset": 1}},
            "rewards[0].options: offset not parameter(s) of strict; remove them from the options or add them "
            "to the function",
        ),
        (
            {"name": "no_such_package.rewards:score"},
            "rewards[0].name: cannot import 'no_such_package.rewards:score': No module named "
            "'no_such_package'; install its package or put its folder on PYTHONPATH, or name a file next to "
            "the recipe as 'file.py:function'",
        ),
        (
            {"name": "exact_mach"},
            "rewards[0].name: unknown reward 'exact_mach' (did you mean exact_match?)",
        ),
    ],
)
def test_a_reward_that_cannot_be_used_is_one_line_when_checked(
    tmp_path: Path, reward: dict[str, Any], message: str
) -> None:
    folder = tmp_path / "recipes"
    path = _reward_recipe(folder, reward)
    (folder / "mine.py").write_text(REWARDS_PY)
    (folder / "broken.py").write_text("x = undefined_name\n")
    recipe = load_recipe(str(path))  # the file is not imported yet
    with raises_one_line(message.replace("RECIPES", str(folder.resolve()))):
        check_recipe(recipe)


def test_every_built_in_reward_has_an_options_model() -> None:
    from mcp_rl.config.reward_options import BUILTIN_REWARD_OPTIONS
    from mcp_rl.rewards import BUILTIN_REWARDS

    assert list(BUILTIN_REWARD_OPTIONS) == list(BUILTIN_REWARDS)


def test_a_package_reward_imports_from_the_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "my_task_rewards.py").write_text(REWARDS_PY)
    monkeypatch.syspath_prepend(str(tmp_path))
    recipe = recipe_from_dict({"rewards": [{"name": "my_task_rewards:strict", "options": {"scale": 0.5}}]})
    assert recipe.rewards[0].name == "my_task_rewards:strict"  # a module path is left as written

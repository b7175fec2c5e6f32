"""Train on your own questions with your own reward, from Python: the README's example, runnable.

python examples/python_api.py [--model smollm2-135m] [--steps 30] [--output-dir runs/python-api]
"""

import argparse

from datasets import Dataset
from trl import GRPOConfig

from mcp_rl import (
    BlockingToolPool,
    Environment,
    MCPGRPOTrainer,
    ModelConfig,
    PromptConfig,
    RolloutConfig,
    Rubric,
    builtin_dataset_dir,
    load_model,
    parse_mcp_servers,
)

SYSTEM = "Search with <search> query </search>, then reply <answer> year </answer>."


def birth_year_found(trajectories, expected, **columns):
    """Your reward: any dataset column arrives by name; each trajectory holds the whole episode."""
    answers = [t.answer.strip() if t.answer else None for t in trajectories]
    return [float(answer == year) for answer, year in zip(answers, expected, strict=True)]


def main(model_name: str, steps: int, output_dir: str) -> None:
    dataset = Dataset.from_list(
        [  # your own rows and column names; the prompt template picks the columns
            {"query": "In which year was Rirnar Drosk born?", "expected": "1632"},
            {"query": "In which year was the inventor of the Varom Gauge born?", "expected": "1762"},
        ]
    )
    corpus = builtin_dataset_dir("fictional") / "corpus.jsonl"
    search = {"command": "python", "args": ["-m", "tool_servers.search", "--corpus", str(corpus)]}
    rollout = RolloutConfig(max_turns=3, max_new_tokens=48, temperature=0.8)
    prompt = PromptConfig(system=SYSTEM, user_template="Question: {query}")
    rubric = Rubric([birth_year_found], weights=[1.0])  # a weight of 0 logs a metric without training on it
    pool = BlockingToolPool(parse_mcp_servers({"mcpServers": {"search": search}}))
    with pool, Environment(pool=pool, prompt=prompt, rollout=rollout, rubric=rubric) as env:
        model, tokenizer = load_model(ModelConfig(name_or_path=model_name))
        env.use_model(model, tokenizer)  # the generator, and a check that the prompt fits the model
        args = GRPOConfig(  # TRL's loss must score with the rollout's sampling and budget (checked)
            output_dir=output_dir,
            max_steps=steps,
            num_generations=4,
            per_device_train_batch_size=4,
            learning_rate=5e-5,
            temperature=rollout.temperature,
            max_completion_length=rollout.max_completion_tokens,
            use_cpu=True,
            bf16=False,
            report_to="none",
            save_strategy="no",
        )
        trainer = MCPGRPOTrainer(
            model=model,
            args=args,
            train_dataset=dataset,
            processing_class=tokenizer,
            environment=env,
            trace_path=f"{output_dir}/traces.jsonl",  # every episode: turns, calls, observations, rewards
        )
        trainer.train()
        trainer.save_model(output_dir)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="smollm2-135m")
    parser.add_argument("--steps", type=int, default=30)
    parser.add_argument("--output-dir", default="runs/python-api")
    options = parser.parse_args()
    main(options.model, options.steps, options.output_dir)

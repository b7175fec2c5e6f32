"""Train on your own questions with your own reward, from Python: the README's example, runnable.

python examples/python_api.py [--model smollm2-135m] [--steps 30] [--output-dir runs/python-api]
"""

import argparse

from datasets import Dataset
from trl import GRPOConfig

from mcp_rl import (
    BlockingToolPool,
    MCPGRPOTrainer,
    PromptConfig,
    RolloutConfig,
    RolloutPipeline,
    TransformersGenerator,
    parse_mcp_servers,
)
from mcp_rl.config.sections import ModelConfig
from mcp_rl.datasets import builtin_dataset_dir
from mcp_rl.generation.models import load_model

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
    pool = BlockingToolPool(parse_mcp_servers({"mcpServers": {"search": search}})).start()
    model, tokenizer = load_model(ModelConfig(name_or_path=model_name))
    pipeline = RolloutPipeline(
        tokenizer,
        TransformersGenerator(model, tokenizer),
        pool=pool,
        parser="search_r1",
        prompt=PromptConfig(system=SYSTEM, user_template="Question: {query}"),
        rollout=RolloutConfig(max_turns=3, max_new_tokens=48, temperature=0.8),
    )
    args = GRPOConfig(
        output_dir=output_dir,
        max_steps=steps,
        num_generations=4,
        per_device_train_batch_size=4,
        learning_rate=5e-5,
        use_cpu=True,
        bf16=False,
        report_to="none",
        save_strategy="no",
    )
    trainer = MCPGRPOTrainer(
        model=model,
        reward_funcs=[birth_year_found],
        args=args,
        train_dataset=dataset,
        processing_class=tokenizer,
        pipeline=pipeline,
        trace_path=f"{output_dir}/traces.jsonl",  # every episode: turns, calls, observations, rewards
    )
    trainer.train()  # closes the pipeline and its search server when done
    trainer.save_model(output_dir)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="smollm2-135m")
    parser.add_argument("--steps", type=int, default=30)
    parser.add_argument("--output-dir", default="runs/python-api")
    options = parser.parse_args()
    main(options.model, options.steps, options.output_dir)

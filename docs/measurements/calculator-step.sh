# The calculator's GRPO step after a warm start (arm g of calc-pooled-grpo, what recipes/calculator.yaml ran
# before it took 8 questions, then groups of 16) as `mcp-rl train` overrides, for the run.sh of each recipe it
# was measured on: lr 1e-5, KL 0.1 to the warm-started policy, dynamic sampling, groups of 8, 4 questions a step
# (per_device_train_batch_size 4 x gradient_accumulation_steps 8), 32 extra rollouts; checkpoints every 10
# steps, drift probes on 32 held-out demonstrations.
# shellcheck disable=SC2034  # used by the scripts that source this
CALCULATOR_STEP=(--set trainer.learning_rate=1e-5 --set trainer.beta=0.1 --set grpo.dynamic_sampling=true
  --set grpo.max_extra_rollouts=32 --set trainer.num_generations=8 --set trainer.per_device_train_batch_size=4
  --set trainer.gradient_accumulation_steps=8 --set trainer.save_steps=10 --set probes.demonstrations=32)

# recipes/calculator.yaml as the calculator's own measurements ran it, written out so that each reruns as
# measured whatever the recipe ships now. Put them before a script's own --set (the last one wins).
# Until the pooled warm start: 256 demonstrations in the shipped phrasing, GRPO on train_varied, 2 questions
# x 8 samples a step, 16 extra rollouts, KL 0.04, 20 steps.
CALCULATOR_256=(--set warm_start.episodes=256 --set warm_start.split=train --set data.train_split=train_varied
  --set trainer.learning_rate=1e-5 --set trainer.beta=0.04 --set grpo.dynamic_sampling=true
  --set trainer.num_generations=8 --set trainer.gradient_accumulation_steps=4 --set grpo.max_extra_rollouts=16
  --set trainer.max_steps=20)
# From the broad curriculum until 2,048 demonstrations: 384 demonstrations from [train, train_broad], GRPO on
# train_broad, 4 questions x 8 samples a step, 32 extra rollouts, KL 0.1, 20 steps (8 questions: add CALCULATOR_8Q).
CALCULATOR_384=(--set warm_start.episodes=384 --set "warm_start.split=[train, train_broad]"
  --set data.train_split=train_broad --set trainer.learning_rate=1e-5 --set trainer.beta=0.1
  --set grpo.dynamic_sampling=true --set trainer.num_generations=8 --set trainer.gradient_accumulation_steps=8
  --set grpo.max_extra_rollouts=32 --set trainer.max_steps=20)
CALCULATOR_8Q=(--set trainer.gradient_accumulation_steps=16 --set grpo.max_extra_rollouts=64)

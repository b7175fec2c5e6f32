# The calculator's GRPO step after a warm start (arm g of calc-pooled-grpo, what recipes/calculator.yaml runs) as
# `mcp-rl train` overrides, for the run.sh of each recipe it was measured on: lr 1e-5, KL 0.1 to the
# warm-started policy, dynamic sampling, groups of 8, 4 questions a step (per_device_train_batch_size 4 x
# gradient_accumulation_steps 8), 32 extra rollouts; checkpoints every 10 steps, drift probes on 32 held-out
# demonstrations.
# shellcheck disable=SC2034  # used by the scripts that source this
CALCULATOR_STEP=(--set trainer.learning_rate=1e-5 --set trainer.beta=0.1 --set grpo.dynamic_sampling=true
  --set grpo.max_extra_rollouts=32 --set trainer.num_generations=8 --set trainer.per_device_train_batch_size=4
  --set trainer.gradient_accumulation_steps=8 --set trainer.save_steps=10 --set probes.demonstrations=32)

"""Training beside the model: tasks for the one train loop (optimization.loop), one LR schedule, checkpoints.

- `training.train`: the `transformer-explorer train` command (language modelling on the corpus;
  its options in `training.options`, residual dropout in `training.regularization`);
- `training.sweep`: several recipes of one model side by side, the best kept (made for a lent GPU);
- `training.translate`: tiny-translator (numbers -> English words / Chinese numerals);
- `training.heads`, `training.sample`: score a checkpoint's heads, continue a prompt.

model/ never imports this package.
"""

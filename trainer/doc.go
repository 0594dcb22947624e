// Package trainer is agentrl's RL loop: collect episodes, store them,
// learn from them, checkpoint, one iteration at a time. What the loop
// joins is a package of its own beside it: the run's data (datasets), its
// models, checkpoints and export (models), the supervised warm start
// (warmstart), the rollouts (rollout, through the agent), the update
// (learner) and the trajectory store (store). The job around a run (ranks,
// the run folder's lock and logs, the printed results) is package job;
// `trainer train --dry-run` is package dryrun.
//
// A command drives a run with New and Run:
//
//	t, err := trainer.New(ctx, cfg, trainer.Options{Log: log, Progress: bars})
//	if err != nil {
//		return err
//	}
//	defer t.Close()
//	table, err := t.Run(ctx, stop) // nil table: stopped, with a checkpoint
//
// and Run drives the loop (run.go, shortened):
//
//	if !t.state.WarmedUp {
//		t.warmStart(ctx, stop)       // warmstart.Run, once
//		t.models.FreezeReference()   // the KL reference is the warm-started policy
//		t.iterationZero(ctx)         // the baselines, stored as iteration 0
//		t.checkpoint()
//	}
//	for t.state.Iteration < cfg.Run.Iterations && !stopped {
//		iter := t.state.Iteration + 1
//		t.iteration(ctx, iter)       // iteration.go:
//		//	b := t.batches.next(ctx, iter)      rollouts: lockstep, or the rollout role (async.go)
//		//	t.learn(iter, trainable(b.trs), m)  learner.Update
//		//	t.batches.published(iter, version)  the decoder takes the new weights
//		//	t.evaluateSets(...)                 every run.eval_every (evaluate.go)
//		//	t.rec.Submit(iter, m, trajectories) the store and TensorBoard (package records)
//		t.state.Iteration = iter
//		t.checkpoint()               // every run.save_every and at the end
//	}
//	t.models.ExportFinal()           // <run>/final
//	return t.rec.Results(...)
//
// Every rank of a data-parallel job runs the same loop; rank 0 alone keeps
// the records and writes the checkpoints. The rollouts of an iteration
// (sampling.go, gather.go) are each rank's share, gathered whole on every
// rank.
package trainer

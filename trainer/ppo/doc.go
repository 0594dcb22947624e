// Package ppo is the learner: it owns the policy, the critic (none, a value
// head shared with the policy, or a separate model), the reference, their
// optimizers and the data-parallel group, and turns an iteration's
// trajectories, with their advantages, into optimizer steps.
//
// Every optimizer step, of the policy, of a separate critic or of the
// supervised warm start, is the same sequence (step.go):
//
//	this rank's shard of the mini-batch
//	  -> micro-batches: forward, loss, backward (gradients accumulate)
//	  -> all-reduce the gradients over the ranks
//	  -> agree whether any rank saw a non-finite loss
//	  -> clip the gradient norm
//	  -> step, or drop the gradients and count the step as skipped
//
// and only the loss differs (policy.go, critic.go, sft.go).
package ppo

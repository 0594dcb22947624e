// Package learner owns the update: the policy, the critic (none, a value
// head shared with the policy, or a separate model), the reference, their
// optimizers and the data-parallel group. One Update turns an iteration's
// Batch into optimizer steps, in CleanRL's order, top to bottom in one
// file (update.go):
//
//	the soft overlong penalty on the rewards (DAPO, when set)
//	  -> filter the groups whose rewards do not vary
//	  -> old and reference logprobs, values (no gradients)
//	  -> the KL to the reference
//	  -> advantages and returns (the estimator)
//	  -> overlong filtering: truncated episodes leave the losses' batch (when set)
//	  -> epochs of shuffled mini-batches, one optimizer step each
//	  -> diagnostics
//
// An on-policy update, one optimizer step over the whole batch with
// nothing needing the old logprobs before it (updateOnPolicy), skips their
// pass: the step's training forward gives them, and the mismatch and the
// KL to the reference are measured after it.
//
// Every optimizer step, of the policy, of a separate critic or of the
// supervised warm start (sft.go), is the same sequence:
//
//	this rank's shard of the mini-batch
//	  -> micro-batches: forward, loss, backward (gradients accumulate),
//	     the loss and its figures read back in one copy
//	  -> all-reduce the gradients over the ranks
//	  -> agree whether any rank saw a non-finite loss
//	  -> clip the gradient norm
//	  -> step, or drop the gradients and count the step as skipped
//
// and only the loss differs.
//
// A Batch carries its units (batch.go): each trajectory alone, or, with
// packing (algorithm.pack_segments), an episode's segments together. The
// mini-batches, the ranks' shards and the micro-batches keep a unit
// whole, and a micro-batch of episodes of several segments runs them as
// prefix trees, one episode a row, whose outputs are laid out as the
// unpacked forward's (forward.go): the losses do not know the difference.
package learner

// Package memory estimates what training and decoding hold in memory, in
// bytes: the gradients and optimizer state of the parameters
// (TrainingState), the decode engine's per-slot state (DecodeState) and
// the activations one micro-batch of the training forward keeps for its
// backward (Activations). The dry run (trainer train --dry-run) adds them
// up for a job, and trainer bench train reports them beside the peak it
// measures; docs/memory.md says how they were checked.
package memory

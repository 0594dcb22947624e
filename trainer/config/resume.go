package config

import "strings"

// resumeFixed are the keys (a section ends in ".") that a resumed run
// cannot change: what they set was decided when the run began and is
// restored from its checkpoint, so a new value would be ignored while the
// saved config.yaml claimed it.
//
//	model.          the weights, critic and reference come from the checkpoint
//	data.           the questions, their order and the cursor come from the checkpoint
//	run.seed        the random state comes from the checkpoint
//	sft.            the warm start is done
//	store.path      the run's history is in its store
//	algorithm.estimator  whether a critic was trained and saved is fixed
var resumeFixed = []string{"model.", "data.", "run.seed", "sft.", "store.path", "algorithm.estimator"}

// ResumeConflicts lists the keys whose value in c differs from saved (the
// config a run began with) although a resume cannot honour them (see
// resumeFixed), in declaration order.
func (c Config) ResumeConflicts(saved Config) []string {
	var out []string
	for _, k := range c.Diff(saved) {
		if fixedOnResume(k) {
			out = append(out, k)
		}
	}
	return out
}

func fixedOnResume(path string) bool {
	for _, f := range resumeFixed {
		if path == f || (strings.HasSuffix(f, ".") && strings.HasPrefix(path, f)) {
			return true
		}
	}
	return false
}

package synth

import "github.com/agentrl/agentrl/envs"

// Texts returns every text the world produces (passage titles and texts,
// questions and answers of every split, the out-of-domain and validation ones included)
// so that a word-level tokenizer can be built from them. Tool-output framing and chat templates are not in it.
func (w *World) Texts() []string {
	var ts []string
	for _, p := range w.Passages {
		ts = append(ts, p.Title, p.Text)
	}
	for _, split := range [][]envs.Task{w.Train, w.Test, w.OOD, w.Val} {
		for _, t := range split {
			ts = append(ts, t.Question)
			ts = append(ts, t.Answers...)
		}
	}
	return ts
}

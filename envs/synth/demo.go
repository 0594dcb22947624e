package synth

import (
	"fmt"

	"github.com/agentrl/agentrl/envs"
)

// Step is one search of an expert trajectory.
type Step struct {
	Query string // what to search for: the name of the next entity
	Title string // the passage that search must return (its title)
	Found string // what that passage gives: the next entity's name, or the answer at the last step
}

// Demo is the scripted expert trajectory for a question: one search per
// hop, then the answer.
type Demo struct {
	Steps  []Step
	Answer string
}

// Demonstration returns the expert trajectory for a task of this world:
// search the start entity, read the next entity off its passage, search
// that, and so on until the passage that holds the answer.
func (w *World) Demonstration(t envs.Task) (Demo, error) {
	c, ok := w.chains[t.ID]
	if !ok {
		return Demo{}, fmt.Errorf("synth: task %q is not a question of this world", t.ID)
	}
	d := Demo{Answer: w.answer(c)}
	for i := range c.hops() {
		name := w.Entities[c.path[i]].Name
		found := d.Answer
		if i+1 < c.hops() {
			found = w.Entities[c.path[i+1]].Name
		}
		d.Steps = append(d.Steps, Step{Query: name, Title: name, Found: found})
	}
	return d, nil
}

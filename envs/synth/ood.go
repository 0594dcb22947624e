package synth

import (
	"fmt"
	"math/rand/v2"

	"github.com/agentrl/agentrl/envs"
)

// composes reports whether the chain follows one of the compositions held
// out (schema.heldOut): one relation followed directly by the other. Each
// relation of a held-out pair still occurs in in-domain questions, alone
// and in other compositions, so the split tests composition, not unseen
// words.
func (c chain) composes(heldOut [][2]string) bool {
	for i := 1; i < len(c.rels); i++ {
		for _, h := range heldOut {
			if c.rels[i-1].name == h[0] && c.rels[i].name == h[1] {
				return true
			}
		}
	}
	return false
}

// makeOOD draws Config.OODQuestions out-of-domain questions, hops cycling
// 2..MaxHops, each a chain with a held-out composition, distinct from
// every question drawn before, and under the same no-leak rule as the
// in-domain multi-hop questions.
func (w *World) makeOOD(rng *rand.Rand, seen map[string]bool) error {
	mentions := w.mentionIndex()
	for i := range w.Config.OODQuestions {
		hops := 2 + i%(w.Config.MaxHops-1)
		var c chain
		found := false
		for range maxDraws {
			var ok bool
			c, ok = w.draw(rng, hops)
			if ok && !seen[c.key()] && c.composes(w.schema.heldOut) && !w.leaks(c, mentions) {
				found = true
				break
			}
		}
		if !found {
			return fmt.Errorf("synth: no new %d-hop out-of-domain question for question %d of %d after %d draws: use more Entities or fewer OODQuestions", hops, i+1, w.Config.OODQuestions, maxDraws)
		}
		seen[c.key()] = true
		t := w.task(c, fmt.Sprintf("synth-%d-ood-%05d", w.Config.Seed, i), rng)
		t.Meta = map[string]string{"split": "ood"}
		w.OOD = append(w.OOD, t)
	}
	return nil
}

// task words chain c as the task id.
func (w *World) task(c chain, id string, rng *rand.Rand) envs.Task {
	t := envs.Task{
		ID:       id,
		Dataset:  "synthetic",
		Question: w.question(c, openers[rng.IntN(len(openers))]),
		Answers:  []string{w.answer(c)},
		Hops:     c.hops(),
	}
	for _, e := range c.path[:c.hops()] {
		t.Support = append(t.Support, w.Entities[e].Name)
	}
	w.chains[t.ID] = c
	return t
}

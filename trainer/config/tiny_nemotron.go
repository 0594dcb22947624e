package config

import "strings"

// validateTinyNemotron checks model.tiny.nemotron_pattern: blocks Nemotron-H
// has (M, *, -, E) for a nemotron_h model, its default for the others (which
// have no such blocks: a pattern set there would be ignored).
func (c *Config) validateTinyNemotron(p *problems) {
	t, d := c.Model.Tiny, Default().Model.Tiny
	if t.ModelType != "nemotron_h" {
		if t.NemotronPattern != d.NemotronPattern {
			p.add("model.tiny.nemotron_pattern", "%q, but model.tiny.model_type is %s: it applies to nemotron_h only", t.NemotronPattern, t.ModelType)
		}
		return
	}
	if t.NemotronPattern == "" || strings.Trim(t.NemotronPattern, "M*-E") != "" {
		p.add("model.tiny.nemotron_pattern", "%q, want a nonempty string of M (Mamba-2), * (attention), - (MLP) and E (mixture of experts)", t.NemotronPattern)
	}
}

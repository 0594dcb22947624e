package config

// validateTinyGemma4 refuses, for a gemma4_text model created from scratch,
// what Gemma 4 does not run yet: activation checkpointing and LoRA.
func (c *Config) validateTinyGemma4(p *problems) {
	if c.Model.Path != "" || c.Model.Tiny.ModelType != "gemma4_text" {
		return
	}
	if c.Model.Checkpointing {
		p.add("model.checkpointing", "true, but model.tiny.model_type is gemma4_text: activation checkpointing is not supported for Gemma 4 yet")
	}
	if c.Model.LoRA.On() {
		p.add("model.lora.rank", "%d, but model.tiny.model_type is gemma4_text: LoRA on Gemma 4 is not supported yet", c.Model.LoRA.Rank)
	}
}

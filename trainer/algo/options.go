package algo

import "github.com/agentrl/agentrl/internal/deftag"

// Options configure the advantage estimators. Start from DefaultOptions:
// the zero value turns the advantage mask off. The struct tags hold each
// setting's one default and description: DefaultOptions reads them, and
// the trainer's configuration inlines Options in its algorithm section
// (algorithm.gamma, ...).
type Options struct {
	// Gamma is the per-token discount of gae and reinforce_pp.
	Gamma float64 `yaml:"gamma" default:"1.0" doc:"per-token discount"`
	// Lambda is the GAE trace-decay parameter.
	Lambda float64 `yaml:"lambda" default:"1.0" doc:"GAE trace decay"`
	// NormByStd divides the grpo advantage by the group's reward std;
	// false is Dr. GRPO (arXiv:2503.20783), which only subtracts the mean.
	NormByStd bool `yaml:"norm_by_std" default:"true" doc:"divide GRPO advantages by the group std (false = Dr. GRPO)"`
	// Eps keeps the grpo division finite when a group's std is 0.
	Eps float64 `yaml:"eps" default:"1e-6" doc:"added to the group std before dividing"`
	// TurnGamma is the per-turn discount of the turn-level estimators
	// (gigpo, turn_rloo): a turn's return is its reward plus TurnGamma times
	// the next turn's return. GiGPO's paper uses 0.95.
	TurnGamma float64 `yaml:"turn_gamma" default:"0.95" doc:"per-turn discount of the step returns of gigpo and turn_rloo"`
	// StepWeight is GiGPO's omega: the weight of the step-level advantage
	// added to the episode-level one (1 in the paper).
	StepWeight float64 `yaml:"step_weight" default:"1.0" doc:"GiGPO's omega: weight of the step-level (anchor-state) advantage"`
	// Whiten standardises the gae advantages over the batch's credited
	// tokens after the returns are taken, as verl's
	// compute_gae_advantage_return does. reinforce_pp and
	// reinforce_pp_baseline always whiten: it is part of the algorithm.
	Whiten bool `yaml:"whiten" default:"true" doc:"standardise GAE advantages over the batch"`
	// KLCoef is beta of the KL-in-reward penalty: r_t -= beta*kl_t on
	// action tokens, for the kl slices handed to the estimator.
	KLCoef float64 `yaml:"kl_coef" default:"0.0" doc:"weight of the KL to the reference"`
	// AdvantageMask (on by default) makes the tokens the policy generated
	// (Mask == 1) the steps of the advantage: the gae and reinforce_pp
	// recursions step from one action token to the next, bootstrapping
	// across the tool-response and template tokens between turns; those
	// tokens carry the advantage of the action that follows them (returns:
	// A + their own V for gae, the carried G for reinforce_pp), as verl's
	// multi-turn GAE does; whitening takes its statistics over the action
	// tokens. The outcome estimators (grpo, rloo, reinforce_pp_baseline)
	// give the sequence advantage to the action tokens only.
	//
	// Off is the ablation of Agent-R1 (arXiv:2511.14460): every token after
	// the prompt is a step. The gae and reinforce_pp recursions then step
	// through every token after the prompt, tool-response tokens included,
	// each one with reward 0 and (for gae) its own value V_t, so the critic's
	// values on tool tokens enter the action tokens' advantages when
	// gamma*lambda < 1; the outcome estimators broadcast the sequence
	// advantage to every token after the prompt; whitening takes its
	// statistics over all of them. With gamma = lambda = 1 the gae advantage
	// of an action token is the reward-to-go minus its own value either way
	// (the sum telescopes): there only the whitening statistics differ.
	// What never changes: prompt tokens get nothing, rewards enter at the
	// last action token of their turn, and the KL penalty applies to action
	// tokens only (only they were sampled). Which tokens count in the
	// losses is the loss mask's business (trainer: algorithm.loss_mask).
	AdvantageMask bool `yaml:"advantage_mask" default:"true" doc:"credit only policy-generated tokens in the advantage"`
}

// DefaultOptions returns the defaults of the struct tags, verl's (gamma =
// lambda = 1, std normalisation with eps 1e-6, whitened gae advantages),
// with the advantage mask on and no KL penalty.
func DefaultOptions() Options {
	var o Options
	deftag.MustApply(&o)
	return o
}

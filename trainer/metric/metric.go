// Package metric declares every metric the training loop records per
// iteration: its name as stored (store.IterationMetrics), what it means,
// and whether and where the report draws it; and computes them, one file
// per kind: what a batch of episodes measures (episode.go), what an
// update measures (step.go, over the token statistics of tokens.go and the
// rollout/training mismatch of mismatch.go), and where the time and
// memory went (timing.go). The producers (the trainer and its learner),
// the report and the experiment use these names, so a metric is renamed,
// documented, computed or plotted in one place.
package metric

import (
	"regexp"
	"strconv"
	"strings"

	"github.com/agentrl/agentrl/envs/reward"
)

// Names of the per-iteration metrics, as stored.
const (
	// Episodes (training trajectories; Eval and NaiveRAG prefix the same
	// names for evaluation and the naive-RAG baseline).
	RewardMean      = "reward_mean"
	RewardStd       = "reward_std"
	EM              = reward.NameEM // reward components: the mean of each
	F1              = reward.NameF1
	SubstringEM     = reward.NameSubstringEM
	Format          = reward.NameFormat
	RewardTotal     = reward.NameTotal
	ResponseLenMean = "response_len_mean"
	TurnsMean       = "turns_mean"
	ToolCallsMean   = "tool_calls_mean"
	ToolSuccess     = "tool_success"
	TruncationRate  = "truncation_rate"
	ErrorRate       = "error_rate"
	N               = "n"
	PrefixMatchRate = "prefix_match_rate"
	EvidenceRecall  = "evidence_recall"

	// The update.
	GroupRewardStd     = "group_reward_std"
	GroupsDropped      = "groups_dropped"
	LogprobMismatchMax = "logprob_mismatch_max"
	MismatchKL         = "mismatch_kl"
	MismatchRatioMax   = "mismatch_ratio_max"
	MismatchRatioMin   = "mismatch_ratio_min"
	MismatchBeyond     = "mismatch_beyond_bound"
	StalenessMean      = "staleness_mean"
	StalenessMax       = "staleness_max"
	RolloutWeightMean  = "rollout_weight_mean"
	KLRef              = "kl_ref"
	PolicyLoss         = "policy_loss"
	KLLoss             = "kl_loss"
	Entropy            = "entropy"
	ClipFracLow        = "clip_frac_low"
	ClipFracHigh       = "clip_frac_high"
	ApproxKL           = "approx_kl"
	RouterAuxLoss      = "router_aux_loss"
	GradNorm           = "grad_norm"
	OptimizerSteps     = "optimizer_steps"
	SkippedUpdates     = "skipped_updates"
	AdvMean            = "adv_mean"
	AdvStd             = "adv_std"
	AdvMin             = "adv_min"
	AdvMax             = "adv_max"
	ReturnMean         = "return_mean"
	ValueLoss          = "value_loss"
	CriticGradNorm     = "critic_grad_norm"
	ExplainedVariance  = "explained_variance"
	LR                 = "lr"
	EchoTrapSignals    = "echo_trap_signals"
	OverlongPenalty    = "overlong_penalty_mean"
	OverlongMasked     = "overlong_masked"
	NumGenBatches      = "num_gen_batches"
	GroupsZeroVariance = "groups_zero_variance"

	// Time, throughput and memory.
	TokensPerSRollout = "tokens_per_s_rollout"
	TokensPerSUpdate  = "tokens_per_s_update"
	UpdateTokens      = "update_tokens"
	UpdateTokensNaive = "update_tokens_unpacked"
	TimeRolloutS      = "time_rollout_s"
	TimeDecodeS       = "time_decode_s"
	TimePrefillS      = "time_prefill_s"
	TimeToolWaitS     = "time_tool_wait_s"
	DecodeBatchMean   = "decode_batch_mean"
	TimeUpdateS       = "time_update_s"
	TimeIterationS    = "time_iteration_s"
	CUDAAllocatedGB   = "cuda_allocated_gb"
	CUDAPeakGB        = "cuda_peak_gb"
	CUDAGraphs        = "cuda_graphs"
	CUDAGraphCaptures = "cuda_graph_captures"
	EngineRefreshes   = "engine_refreshes"
	EngineEagerSteps  = "engine_eager_steps"
	HostMappedGB      = "host_mapped_gb"
	HostPeakGB        = "host_peak_gb"
)

// Prefixes of the episode metrics of the evaluation split and of the
// naive-RAG baseline (iteration 0), and of the same two on the
// out-of-domain split (the synthetic world's held-out compositions).
const (
	Eval        = "eval/"
	NaiveRAG    = "baseline/naive_rag/"
	EvalOOD     = "eval_ood/"
	NaiveRAGOOD = "baseline/naive_rag_ood/"
)

// Def declares one metric.
type Def struct {
	Name string
	Doc  string
	// Episode: also recorded under the Eval, NaiveRAG, EvalOOD and
	// NaiveRAGOOD prefixes.
	Episode bool
}

// Defs are the metrics, in the order the docs list them. Besides these an
// episode records EM and evidence recall by hop count, as em_hopN and
// evidence_recall_hopN.
var Defs = []Def{
	{RewardMean, "mean scalar reward (outcome + process rewards)", true},
	{RewardStd, "population std (ddof 0) of the reward over the batch", true},
	{EM, "exact match of the answer (a reward component; 0 when the reward has none)", true},
	{F1, "token F1 of the answer (a reward component)", true},
	{SubstringEM, "a gold answer occurs in the answer (a reward component)", true},
	{Format, "format score of the turns (a reward component)", true},
	{RewardTotal, "the reward as the environment computed it (a reward component)", true},
	{ResponseLenMean, "mean number of tokens the policy generated per trajectory", true},
	{TurnsMean, "mean number of assistant turns", true},
	{ToolCallsMean, "mean number of tool calls (malformed ones included)", true},
	{ToolSuccess, "mean fraction of a trajectory's tool calls that succeeded", true},
	{TruncationRate, "fraction of trajectories stopped by a token or turn limit", true},
	{ErrorRate, "fraction of episodes that failed: an environment error, or an agent program's failure (agent.command)", true},
	{N, "number of episodes (an agent program's episode of several ledger segments counts once)", true},
	{EvidenceRecall, "mean share of a task's supporting passages the episode retrieved, over the episodes whose task names them (by hop count as evidence_recall_hopN)", true},
	{PrefixMatchRate, "agent programs (agent.command): fraction of an episode's requests after its first whose rendered prompt extended the previous prompt and completion token for token (the rest start new segments)", true},
	{GroupRewardStd, "mean within-group reward std (ddof 1) over groups of two or more, before the variance filter: the echo-trap signal", false},
	{GroupsDropped, "groups the variance filter (algorithm.filter_keep_ratio) dropped", false},
	{LogprobMismatchMax, "largest gap between a sampled token's logprob and the training forward's (0 when rollouts and training agree)", false},
	{MismatchKL, "rollout/training mismatch: mean k3 estimate of KL(behaviour || training forward) over the action tokens, r = pi_train/pi_behaviour", false},
	{MismatchRatioMax, "largest ratio pi_train/pi_behaviour of an action token", false},
	{MismatchRatioMin, "smallest ratio pi_train/pi_behaviour of an action token", false},
	{MismatchBeyond, "fraction of action tokens whose ratio pi_train/pi_behaviour lies outside [1/C, C] (C = algorithm.rollout_correction_bound)", false},
	{StalenessMean, "asynchronous training (rollout.max_staleness > 0): mean version lag of the trained turns, the policy versions between the one that sampled a turn's first token and the one the update starts from", false},
	{StalenessMax, "asynchronous training: the largest version lag of a trained turn (at most rollout.max_staleness)", false},
	{RolloutWeightMean, "mean rollout-correction weight over the action tokens (with algorithm.rollout_correction on)", false},
	{KLRef, "mean k-estimator KL to the reference over the action tokens", false},
	{PolicyLoss, "policy loss (algorithm.policy_loss: ppo, gspo or cispo), mean over optimizer steps", false},
	{KLLoss, "KL-to-reference loss term, mean over optimizer steps (kl_mode loss)", false},
	{Entropy, "policy entropy in nats per loss token", false},
	{ClipFracLow, "fraction of loss tokens whose ratio (gspo: sequence ratio; cispo: IS weight) was clipped below 1-clip_low", false},
	{ClipFracHigh, "fraction of loss tokens whose ratio (gspo: sequence ratio; cispo: IS weight) was clipped above 1+clip_high", false},
	{ApproxKL, "approximate KL from the old to the updated policy per loss token", false},
	{RouterAuxLoss, "mixture-of-experts policies whose config sets output_router_logits: the routers' load-balancing loss (its router_aux_loss_coef multiple is in the loss), mean over optimizer steps", false},
	{GradNorm, "policy gradient norm before clipping, mean over the steps taken", false},
	{OptimizerSteps, "policy optimizer steps taken", false},
	{SkippedUpdates, "optimizer steps skipped for a non-finite loss or gradient norm", false},
	{AdvMean, "mean advantage over the action tokens", false},
	{AdvStd, "population std of the advantages over the action tokens", false},
	{AdvMin, "smallest advantage of an action token", false},
	{AdvMax, "largest advantage of an action token", false},
	{ReturnMean, "mean return over the action tokens", false},
	{ValueLoss, "clipped value loss, mean over critic steps (with a critic)", false},
	{CriticGradNorm, "critic gradient norm before clipping (with a critic)", false},
	{ExplainedVariance, "1 - Var[R-V]/Var[R] over the action tokens (with a critic)", false},
	{LR, "policy learning rate of the iteration's last optimizer step", false},
	{EchoTrapSignals, "echo-trap signals raised this iteration (reward std or entropy collapse, gradient-norm spike)", false},
	{OverlongPenalty, "mean soft overlong penalty added to the rewards (algorithm.overlong_buffer)", false},
	{OverlongMasked, "episodes cut by the token budget masked out of the policy loss (algorithm.overlong_filter)", false},
	{NumGenBatches, "draws of rollout.batch_size prompts this iteration made (algorithm.dynamic_sampling; 1 without it)", false},
	{GroupsZeroVariance, "groups dynamic sampling dropped because their rewards all agreed (algorithm.dynamic_sampling)", false},
	{TokensPerSRollout, "tokens generated per second of rollout", false},
	{TokensPerSUpdate, "trajectory tokens per second of update (times epochs)", false},
	{UpdateTokens, "tokens the policy's training forwards ran through the model (all epochs, padding left out): an episode's segments packed (algorithm.pack_segments) count their shared prefixes once", false},
	{UpdateTokensNaive, "the same trajectories' tokens as samples of their own, one per segment: update_tokens without packing", false},
	{TimeRolloutS, "wall time of the training rollout", false},
	{TimeDecodeS, "time in decode steps", false},
	{TimePrefillS, "time prefilling prompts and observations", false},
	{TimeToolWaitS, "time waiting for tools with no slot able to decode", false},
	{DecodeBatchMean, "mean number of slots per decode step", false},
	{TimeUpdateS, "wall time of advantages and update", false},
	{TimeIterationS, "wall time of the whole iteration", false},
	{CUDAAllocatedGB, "CUDA memory allocated at the end of the iteration (CUDA only)", false},
	{CUDAPeakGB, "peak CUDA memory (CUDA only)", false},
	{CUDAGraphs, "decode steps the sampler holds captured as CUDA graphs, one per row count (CUDA only; 0 once a capture failed and steps run eagerly, which the log says why)", false},
	{CUDAGraphCaptures, "CUDA graph captures of decode steps this iteration (CUDA only; after the first iterations 0: a graph per row count, captured once)", false},
	{EngineRefreshes, "rewrites of the sampler's fused weights from the policy's this iteration (the fused path: once per change of the weights)", false},
	{EngineEagerSteps, "decode steps this iteration not replayed from a CUDA graph (every step on the CPU)", false},
	{HostMappedGB, "memory the host cache holds for tensors of 4 MB and up, in use or kept for reuse, at the end of the iteration (CPU only)", false},
	{HostPeakGB, "the most memory tensors of 4 MB and up have had in use at once (CPU only)", false},
}

// Chart is one chart of the report and the metrics it draws, each with
// its legend label.
type Chart struct {
	File, Title string
	Keys        []Series
}

// Series is one metric of a chart.
type Series struct{ Key, Label string }

// Charts are the report's charts, in page order.
var Charts = []Chart{
	{"reward", "Train reward", []Series{{RewardMean, "mean reward (train)"}}},
	{"eval", "Evaluation EM / F1", []Series{{Eval + EM, "EM"}, {Eval + F1, "F1"}, {EvalOOD + EM, "EM (out of domain)"}}},
	{"evidence", "Evidence recall (supporting passages retrieved)", []Series{{EvidenceRecall, "train"}, {Eval + EvidenceRecall, "evaluation"}}},
	{"kl", "KL divergence", []Series{{KLRef, "KL to reference"}, {ApproxKL, "approx KL (old to new policy)"}}},
	{"mismatch", "Rollout/training mismatch", []Series{{MismatchKL, "k3 KL(behaviour || training)"}, {MismatchBeyond, "fraction of tokens beyond [1/C, C]"}}},
	{"mismatch_ratio", "Ratio π_train/π_behaviour", []Series{{MismatchRatioMax, "largest"}, {MismatchRatioMin, "smallest"}}},
	{"staleness", "Version lag (asynchronous training)", []Series{{StalenessMean, "mean"}, {StalenessMax, "largest"}}},
	{"entropy", "Policy entropy", []Series{{Entropy, "entropy (nats per token)"}}},
	{"clip", "Clip fraction", []Series{{ClipFracLow, "low (ratio < 1-ε)"}, {ClipFracHigh, "high (ratio > 1+ε)"}}},
	{"response_len", "Response length (tokens)", []Series{{ResponseLenMean, "mean response length"}}},
	{"turns", "Turns and tool calls per episode", []Series{{TurnsMean, "turns"}, {ToolCallsMean, "tool calls"}}},
	{"throughput", "Throughput (tokens/s)", []Series{{TokensPerSRollout, "rollout"}, {TokensPerSUpdate, "update"}}},
}

// Plotted reports whether a chart of the report draws the metric name.
func Plotted(name string) bool {
	for _, c := range Charts {
		for _, s := range c.Keys {
			if s.Key == name {
				return true
			}
		}
	}
	return false
}

// EMHopPrefix starts the names of the exact match by hop count.
const EMHopPrefix = "em_hop"

// EMHop is the name of the exact match over the questions of h hops.
func EMHop(h int) string { return EMHopPrefix + strconv.Itoa(h) }

// EvidenceHop is the name of the evidence recall over the questions of h
// hops.
func EvidenceHop(h int) string { return EvidenceRecall + "_hop" + strconv.Itoa(h) }

var hopEM = regexp.MustCompile(`^(em|evidence_recall)_hop[0-9]+$`)

// Declared reports whether name is a declared metric: one of Defs, an
// episode metric under an evaluation prefix, em_hopN or
// evidence_recall_hopN.
func Declared(name string) bool {
	episode := false
	for _, p := range []string{Eval, NaiveRAG, EvalOOD, NaiveRAGOOD} {
		if rest, ok := strings.CutPrefix(name, p); ok {
			name, episode = rest, true
		}
	}
	if hopEM.MatchString(name) {
		return true
	}
	for _, d := range Defs {
		if d.Name == name {
			return d.Episode || !episode
		}
	}
	return false
}

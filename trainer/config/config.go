// Package config is the trainer's configuration: one YAML file whose every
// key has a default and a one-line description, both kept in the struct
// tags below (default:"..." and doc:"..."), so Default, Docs, the docs'
// configuration table and the command-line flags all come from the same source.
//
// Precedence, lowest first: built-in defaults, the YAML file (Load),
// per-key flags (ApplyFlags), then --set key=value overrides (Set).
//
// A default tag holds a YAML scalar or flow list, parsed exactly as a
// --set value is. An enum tag lists the allowed values of a string key,
// separated by "|"; Validate checks them and Docs shows them.
package config

import (
	"time"

	"github.com/agentrl/agentrl/decoding"
	"github.com/agentrl/agentrl/envs"
	"github.com/agentrl/agentrl/tokenizer"
	"github.com/agentrl/agentrl/trainer/algo"
)

// Config is the whole trainer configuration, one field per YAML section.
type Config struct {
	Run       RunConfig       `yaml:"run" doc:"the run: name, output folder, length, seed"`
	Device    DeviceConfig    `yaml:"device" doc:"where and in which precision the model runs"`
	Model     ModelConfig     `yaml:"model" doc:"the policy, critic and reference models"`
	Data      DataConfig      `yaml:"data" doc:"training and evaluation questions"`
	Tools     ToolsConfig     `yaml:"tools" doc:"the tools the agent may call"`
	Env       envs.EnvConfig  `yaml:"env" doc:"episode limits and reward weights"`
	Rollout   RolloutConfig   `yaml:"rollout" doc:"sampling of trajectories"`
	Algorithm AlgorithmConfig `yaml:"algorithm" doc:"advantage estimator and policy/value losses"`
	Optim     OptimConfig     `yaml:"optim" doc:"AdamW optimiser and learning-rate schedule"`
	SFT       SFTConfig       `yaml:"sft" doc:"supervised warm-up on demonstrations"`
	Store     StoreConfig     `yaml:"store" doc:"the SQLite trajectory store"`
	Logging   LoggingConfig   `yaml:"logging" doc:"log level and format"`
	Eval      EvalConfig      `yaml:"eval" doc:"evaluation during and after training"`
	Dist      DistConfig      `yaml:"dist" doc:"data-parallel training across processes (c10d)"`
	Agent     AgentConfig     `yaml:"agent" doc:"an agent program in any language, run per episode through the OpenAI-compatible gateway in place of the built-in ToolEnv loop"`
}

// AgentConfig runs an agent program once per episode: it gets the task
// (AGENTRL_TASK and stdin, JSON) and OPENAI_BASE_URL / OPENAI_API_KEY /
// OPENAI_MODEL naming its episode on the gateway, and prints its answer
// (or a JSON object with "answer" and optionally "reward").
type AgentConfig struct {
	Command    []string      `yaml:"command" default:"[]" doc:"the agent program and its arguments, run once per episode in place of the built-in ToolEnv loop ([] = the built-in loop)"`
	Dir        string        `yaml:"dir" default:"" doc:"working folder of the program (\"\" = the trainer's)"`
	Env        []string      `yaml:"env" default:"[]" doc:"KEY=VALUE entries added to the program's environment"`
	Timeout    time.Duration `yaml:"timeout" default:"120s" doc:"wall time of one episode; then the program's process group is killed (stop program_timeout)"`
	Parallel   int           `yaml:"parallel" default:"0" doc:"programs running at once (0 = rollout.slots)"`
	MaxStdout  int           `yaml:"max_stdout" default:"65536" doc:"bytes of stdout an episode may print; more ends it (stop output_flood)"`
	StderrTail int           `yaml:"stderr_tail" default:"2000" doc:"bytes of the end of the program's stderr kept with a failed episode"`
	Model      string        `yaml:"model" default:"policy" doc:"the model name the gateway serves the policy under (OPENAI_MODEL)"`
}

// RunConfig names the run and sets its length.
type RunConfig struct {
	Name       string `yaml:"name" default:"default" doc:"run name; outputs go to <run.dir>/<run.name>"`
	Dir        string `yaml:"dir" default:"runs" doc:"folder holding all runs"`
	Seed       int    `yaml:"seed" default:"1" doc:"seed of every random choice of the run"`
	Iterations int    `yaml:"iterations" default:"20" doc:"RL iterations (rollout + update) to run"`
	EvalEvery  int    `yaml:"eval_every" default:"20" doc:"evaluate every N iterations (0 = only at the end)"`
	SaveEvery  int    `yaml:"save_every" default:"10" doc:"checkpoint every N iterations (0 = only at the end)"`
	Resume     bool   `yaml:"resume" default:"false" doc:"continue from the run's latest checkpoint"`
}

// DeviceConfig picks the device and precision.
type DeviceConfig struct {
	Device   string `yaml:"device" default:"cpu" doc:"cpu, cuda or cuda:N"`
	DType    string `yaml:"dtype" default:"f32" enum:"f32|bf16|f16" doc:"parameter dtype"`
	Threads  int    `yaml:"threads" default:"0" doc:"CPU threads of libtorch (0 = all cores)"`
	Autocast bool   `yaml:"autocast" default:"false" doc:"mixed precision: forward passes (training, logprobs, decoding) under bf16 autocast while weights, gradients and optimizer state stay in device.dtype; meant for CUDA, works on the CPU"`
}

// ModelConfig locates or creates the models.
type ModelConfig struct {
	Path          string     `yaml:"path" default:"" doc:"Hugging Face model folder of the policy, or a model id (Qwen/Qwen3.5-0.8B, or ...@REVISION) read offline from the local Hugging Face cache (\"\" = create a tiny model from model.tiny)"`
	Tiny          TinyConfig `yaml:"tiny" doc:"shape of the tiny model created when model.path is empty"`
	Critic        string     `yaml:"critic" default:"separate" enum:"separate|shared" doc:"value head on a separate model or on the policy trunk"`
	CriticPath    string     `yaml:"critic_path" default:"" doc:"model folder of a separate critic (\"\" = start from the policy's weights)"`
	Checkpointing bool       `yaml:"checkpointing" default:"false" doc:"activation checkpointing in the training forward: recompute each layer in the backward pass (less memory, about a third more compute)"`
	LogitsChunk   int        `yaml:"logits_chunk" default:"256" doc:"tokens per chunk of the LM head in the training, logprob and reference forwards: the taken tokens' logprobs and entropies are computed a chunk at a time and recomputed in the backward pass, so the [tokens x vocabulary] logits are never held whole (0 = all at once)"`
	RefPath       string     `yaml:"ref_path" default:"" doc:"model folder of the KL reference (\"\" = copy of the initial policy; with model.lora, the base itself, adapters off)"`
	LoRA          LoRAConfig `yaml:"lora" doc:"low-rank adapters (PEFT's LoRA) over a frozen base: only the adapters train (docs/lora.md)"`
	Chat          ChatConfig `yaml:"chat" doc:"switches of the policy's chat template, as the template defines them (docs/chat-templates.md); one the template lacks is refused"`
}

// ChatConfig holds the switches of a chat template that agentrl renders
// (tokenizer.ChatOptions). Each belongs to the templates that have it; a
// value other than the default is refused for a template without it.
type ChatConfig struct {
	ReasoningEffort  string `yaml:"reasoning_effort" default:"" doc:"Qwen3.8's reasoning_effort: xhigh, medium or low (\"\" = the template's default, xhigh); while thinking is on, xhigh and low write the template's instruction at the head of the system turn, medium none"`
	PreserveThinking bool   `yaml:"preserve_thinking" default:"true" doc:"Qwen3.8's preserve_thinking: false drops the think blocks of the assistant turns up to the last user query (true = the template's default, every turn keeps its think block)"`
}

// Options are the chat format's options these keys ask for.
func (c ChatConfig) Options() tokenizer.ChatOptions {
	return tokenizer.ChatOptions{ReasoningEffort: c.ReasoningEffort, DropThinking: !c.PreserveThinking}
}

// LoRAConfig trains low-rank adapters over the frozen base model, as PEFT's
// LoraConfig: rank r, lora_alpha, lora_dropout, target_modules.
type LoRAConfig struct {
	Rank          int      `yaml:"rank" default:"0" doc:"adapter rank r (0 = off: full fine-tuning)"`
	Alpha         float64  `yaml:"alpha" default:"32" doc:"lora_alpha: the adapters' update is scaled by alpha / rank"`
	Dropout       float64  `yaml:"dropout" default:"0" doc:"lora_dropout on the adapters' input while training, in [0, 1) (> 0 needs model.checkpointing off)"`
	TargetModules []string `yaml:"target_modules" default:"[all-linear]" doc:"projections adapted, by Hugging Face name (q_proj, k_proj, v_proj, o_proj; Qwen3.5's in_proj_qkv, in_proj_z, in_proj_b, in_proj_a, out_proj; gate_proj, up_proj, down_proj; Nemotron-H's Mamba-2 in_proj, its attention and MLP blocks' under the names above; Gemma 4's per_layer_input_gate, per_layer_projection, per_layer_model_projection), or all-linear for all the model has (the LM head never)"`
	Path          string   `yaml:"path" default:"" doc:"PEFT adapter folder to start from (adapter_config.json, adapter_model.safetensors) over model.path; its r, lora_alpha, lora_dropout and target_modules must equal the keys above (\"\" = fresh adapters)"`
	Merge         bool     `yaml:"merge" default:"false" doc:"the final export (<run>/final) is a full Hugging Face model folder with the adapters merged in, instead of the PEFT adapter folder"`
}

// TinyConfig is the shape of a freshly created model: Qwen2-, Qwen3- or
// Qwen3.5-style (a hybrid of Gated DeltaNet layers and gated attention
// layers, sized by the linear_* keys and full_attention_interval), a
// Qwen3 MoE (every MLP a mixture of experts, sized by the experts keys),
// Nemotron-H or Gemma 4 (with its MoE block where moe_block is set).
type TinyConfig struct {
	ModelType    string `yaml:"model_type" default:"qwen2" enum:"qwen2|qwen3|qwen3_5|qwen3_moe|nemotron_h|gemma4_text" doc:"architecture: qwen2, qwen3 (RMSNorm on each head's queries and keys, no q/k/v biases), qwen3_5 (Qwen3.5's hybrid: Gated DeltaNet layers and, every full_attention_interval-th layer, gated attention with partial RoPE; it uses Qwen3.5's chat format, tool calls in XML), qwen3_moe (Qwen3 with every MLP a mixture of experts: experts, experts_per_token, moe_intermediate), or nemotron_h (Nemotron-H's hybrid: single blocks, Mamba-2, attention without RoPE or relu² MLP, as nemotron_pattern lists them; Qwen3's chat format), or gemma4_text (Gemma 4's text model: every sixth layer and the last full attention, the others sliding-window attention over 128 tokens; full layers of twice the head size with proportional RoPE, per-layer inputs of 16, logits capped at 30, tied embeddings; Qwen3's chat format)"`
	Hidden       int    `yaml:"hidden" default:"128" doc:"hidden size"`
	Intermediate int    `yaml:"intermediate" default:"256" doc:"MLP intermediate size"`
	Layers       int    `yaml:"layers" default:"2" doc:"transformer layers"`
	Heads        int    `yaml:"heads" default:"4" doc:"attention heads"`
	KVHeads      int    `yaml:"kv_heads" default:"2" doc:"key/value heads (grouped-query attention)"`
	MaxPositions int    `yaml:"max_positions" default:"1024" doc:"maximum sequence length"`
	// The Qwen3.5 keys (model_type qwen3_5), as Qwen3_5TextConfig names
	// them: full_attention_interval, linear_num_key_heads, ...
	FullAttentionInterval int `yaml:"full_attention_interval" default:"2" doc:"qwen3_5: every N-th layer is a gated attention layer, the others Gated DeltaNet layers (Qwen3.5's own models use 4; 2 makes the default 2 layers one of each)"`
	LinearKeyHeads        int `yaml:"linear_key_heads" default:"2" doc:"qwen3_5: query/key heads of the Gated DeltaNet layers (linear_num_key_heads)"`
	LinearValueHeads      int `yaml:"linear_value_heads" default:"4" doc:"qwen3_5: value heads of the Gated DeltaNet layers, a multiple of linear_key_heads (linear_num_value_heads)"`
	LinearKeyDim          int `yaml:"linear_key_dim" default:"32" doc:"qwen3_5: size of a Gated DeltaNet query/key head (linear_key_head_dim)"`
	LinearValueDim        int `yaml:"linear_value_dim" default:"32" doc:"qwen3_5: size of a Gated DeltaNet value head (linear_value_head_dim)"`
	ConvKernel            int `yaml:"conv_kernel" default:"4" doc:"qwen3_5: width of the Gated DeltaNet layers' causal convolution (linear_conv_kernel_dim), at most max_positions"`
	// The Qwen3 MoE keys (model_type qwen3_moe), as Qwen3MoeConfig names
	// them: num_experts, num_experts_per_tok, moe_intermediate_size.
	Experts         int `yaml:"experts" default:"4" doc:"qwen3_moe, nemotron_h's E blocks, gemma4_text with moe_block: experts of each mixture-of-experts MLP (num_experts)"`
	ExpertsPerToken int `yaml:"experts_per_token" default:"2" doc:"qwen3_moe, nemotron_h's E blocks, gemma4_text with moe_block: experts each token takes, its router's top-k (num_experts_per_tok), at most experts"`
	MoEIntermediate int `yaml:"moe_intermediate" default:"64" doc:"qwen3_moe, nemotron_h's E blocks, gemma4_text with moe_block: each expert's MLP intermediate size (moe_intermediate_size)"`
	// The Gemma 4 key (model_type gemma4_text): Gemma4TextConfig's enable_moe_block.
	MoEBlock bool `yaml:"moe_block" default:"false" doc:"gemma4_text: every layer adds Gemma 4's MoE block beside its MLP (enable_moe_block, as 26B-A4B): experts GELU-tanh experts of moe_intermediate, experts_per_token per token (top_k_experts)"`
	// The Nemotron-H key (model_type nemotron_h).
	NemotronPattern string `yaml:"nemotron_pattern" default:"M*-" doc:"nemotron_h: the layers' blocks as Nemotron-H's hybrid_override_pattern spells them (M a Mamba-2 layer of heads heads of 2 x hidden/heads with a state of 16, * attention, - a relu² MLP of width intermediate, E a mixture of experts: experts relu² experts of moe_intermediate, experts_per_token per token by sigmoid scores, and a relu² shared expert of intermediate), repeated to fill layers"`
}

// DataConfig picks the questions.
type DataConfig struct {
	Source    string          `yaml:"source" default:"synthetic" enum:"synthetic|files" doc:"generated world or dataset files"`
	Train     []string        `yaml:"train" default:"[]" doc:"training dataset files (data.source files)"`
	Eval      []string        `yaml:"eval" default:"[]" doc:"evaluation dataset files (data.source files)"`
	Format    string          `yaml:"format" default:"" doc:"dataset layout of the files (\"\" = detect)"`
	MaxTrain  int             `yaml:"max_train" default:"0" doc:"use at most N training questions (0 = all)"`
	MaxEval   int             `yaml:"max_eval" default:"0" doc:"load at most N evaluation questions (0 = all)"`
	Synthetic SyntheticConfig `yaml:"synthetic" doc:"the generated multi-hop world (data.source synthetic)"`
}

// SyntheticConfig shapes the generated multi-hop question world.
type SyntheticConfig struct {
	Seed         int     `yaml:"seed" default:"7" doc:"seed of the generated world"`
	Relations    string  `yaml:"relations" default:"basic" enum:"basic|rich" doc:"the world's relations: basic (six: birthplace, employer, nation, capital, headquarters, founder) or rich (fourteen: also home, mentor, mayor, twin, leader, ally, owner, chief, with four more compositions held out of domain), for splits larger than a basic world of the same size holds"`
	Entities     int     `yaml:"entities" default:"100" doc:"entities in the world (at most about 83333 with fresh_worlds, 333333 without: the words the name generator can draw)"`
	MaxHops      int     `yaml:"max_hops" default:"3" doc:"most hops a question needs"`
	TestFraction float64 `yaml:"test_fraction" default:"0.4" doc:"fraction of questions held out for evaluation"`
	Questions    int     `yaml:"questions" default:"500" doc:"questions generated"`
	OODQuestions int     `yaml:"ood_questions" default:"100" doc:"out-of-domain questions, evaluated as their own split: 2 to max_hops hops, each composing relations in a way no training or test question does (0 = none, and in-domain questions use every composition)"`
	ValQuestions int     `yaml:"val_questions" default:"0" doc:"validation questions, taken from the questions not held out for test and never trained on; eval.split validation evaluates them (0 = none, and the train and test splits are as without)"`
	FreshWorlds  bool    `yaml:"fresh_worlds" default:"true" doc:"a world of its own for every training batch (each draw of each iteration: rollout.batch_size questions), for the warm start's demonstrations (rollout.batch_size per world) and for evaluation, each world drawn from seed, role and number with its own search index and its entities named from one fixed pool (so the vocabulary is fixed and an answer differs from world to world); the test questions (questions x test_fraction), the out-of-domain and the validation ones are spread over eval_worlds worlds of their own that no batch trains on"`
	EvalWorlds   int     `yaml:"eval_worlds" default:"10" doc:"with fresh_worlds: how many worlds the test and out-of-domain questions (and, apart, the validation questions) are spread over"`
}

// ToolsConfig enables and configures tools.
type ToolsConfig struct {
	Enabled    []string         `yaml:"enabled" default:"[search]" doc:"tools the agent may call, by registered name"`
	Schemas    string           `yaml:"schemas" default:"auto" enum:"auto|show|hide" doc:"list the tools' JSON schemas in the system prompt (auto: hide for the synthetic world's from-scratch models, which learn the protocol from demonstrations; show otherwise)"`
	Search     SearchConfig     `yaml:"search" doc:"the BM25 passage search tool"`
	Calculator CalculatorConfig `yaml:"calculator" doc:"the calculator tool (no settings)"`
	Code       CodeConfig       `yaml:"code" doc:"the sandboxed Python tool (enable it with tools.enabled: [code])"`
	MCP        []MCPServer      `yaml:"mcp" default:"[]" doc:"MCP servers whose tools the agent may call, besides tools.enabled: each entry starts a server over stdio (command) or connects to one over streamable HTTP (url), once per run"`
	HTTP       []HTTPTool       `yaml:"http" default:"[]" doc:"JSON-over-HTTP tools the agent may call, besides tools.enabled: each entry is one tool, called by POSTing {\"name\", \"arguments\"} to its url"`
}

// CodeConfig sets the limits of the code tool's sandbox (bubblewrap).
type CodeConfig struct {
	Python    string        `yaml:"python" default:"/usr/bin/python3" doc:"Python interpreter, under /usr (the only host folder the sandbox sees)"`
	CPUTime   time.Duration `yaml:"cpu_time" default:"5s" doc:"CPU time of one run (whole seconds)"`
	WallTime  time.Duration `yaml:"wall_time" default:"10s" doc:"wall time of one run (env.tool_timeout also bounds it)"`
	MemoryMB  int           `yaml:"memory_mb" default:"512" doc:"memory of the whole call (all its processes and files, in a memory cgroup of its own) and address space of each process, in MiB"`
	Processes int           `yaml:"processes" default:"16" doc:"processes and threads a run may have at once"`
	DiskMB    int           `yaml:"disk_mb" default:"16" doc:"all a run may write, in MiB: its throwaway /tmp (also its /dev/shm); the rest is read-only"`
	MaxOutput int           `yaml:"max_output" default:"4000" doc:"bytes of stdout and of stderr kept"`
}

// MCPServer is one entry of tools.mcp.
type MCPServer struct {
	Name         string        `yaml:"name" default:"" doc:"server name, for messages (required, unique)"`
	Command      string        `yaml:"command" default:"" doc:"program speaking MCP on stdin/stdout (stdio transport)"`
	Args         []string      `yaml:"args" default:"[]" doc:"its arguments"`
	Env          []string      `yaml:"env" default:"[]" doc:"KEY=VALUE entries added to its environment"`
	URL          string        `yaml:"url" default:"" doc:"streamable HTTP endpoint, instead of a command"`
	Headers      []string      `yaml:"headers" default:"[]" doc:"\"Name: value\" headers sent with every HTTP request"`
	Tools        []string      `yaml:"tools" default:"[]" doc:"expose only these of the server's tools ([] = all)"`
	Prefix       string        `yaml:"prefix" default:"" doc:"prepended to the server's tool names"`
	StartTimeout time.Duration `yaml:"start_timeout" default:"30s" doc:"time to start the server and finish the handshake"`
	MaxMessageMB int           `yaml:"max_message_mb" default:"16" doc:"most MiB of one message from the server (a stdio line, an HTTP response body or event stream); more fails the call"`
}

// HTTPTool is one entry of tools.http.
type HTTPTool struct {
	Name                 string   `yaml:"name" default:"" doc:"tool name, as the agent calls it (required, unique)"`
	URL                  string   `yaml:"url" default:"" doc:"where calls are POSTed; the answer is {\"content\": text} or {\"error\": text}"`
	Description          string   `yaml:"description" default:"" doc:"what the tool does, shown to the model"`
	Parameters           string   `yaml:"parameters" default:"" doc:"JSON schema of the arguments (\"\" = any object)"`
	Headers              []string `yaml:"headers" default:"[]" doc:"\"Name: value\" headers sent with every call"`
	Retries              int      `yaml:"retries" default:"0" doc:"extra attempts when the service fails (unreachable, 5xx)"`
	CrossOriginRedirects bool     `yaml:"cross_origin_redirects" default:"false" doc:"follow a redirect to another origin (scheme, host, port) than url's; the headers are never sent there. Off, such a redirect fails the call"`
}

// SearchConfig configures the search tool.
type SearchConfig struct {
	Index string `yaml:"index" default:"" doc:"SQLite FTS5 index file (\"\" = built from the data's corpus)"`
	K     int    `yaml:"k" default:"2" doc:"passages returned per search"`
}

// CalculatorConfig configures the calculator tool, which has no settings.
type CalculatorConfig struct{}

// RolloutConfig sets how trajectories are sampled.
type RolloutConfig struct {
	BatchSize       int        `yaml:"batch_size" default:"16" doc:"prompts per iteration"`
	GroupSize       int        `yaml:"group_size" default:"4" doc:"samples per prompt (the GRPO group)"`
	Slots           int        `yaml:"slots" default:"32" doc:"sequences decoded together"`
	Temperature     float64    `yaml:"temperature" default:"1.0" doc:"sampling temperature of training rollouts"`
	TopP            float64    `yaml:"top_p" default:"1.0" doc:"nucleus sampling mass (1 = off)"`
	TopK            int        `yaml:"top_k" default:"0" doc:"sample among the K likeliest tokens (0 = off)"`
	EvalTemperature float64    `yaml:"eval_temperature" default:"0" doc:"sampling temperature of evaluation (0 = greedy)"`
	DType           string     `yaml:"dtype" default:"auto" enum:"auto|f32|bf16|f16" doc:"precision the rollouts decode in (auto = the model's; bf16 decodes from a bf16 copy of the weights, refreshed before every rollout, while training stays in device.dtype; old logprobs are recomputed by the training forward either way)"`
	Deterministic   bool       `yaml:"deterministic" default:"false" doc:"wait for all tool calls of a step before decoding on: reproducible runs, no overlap of tool latency"`
	MaxStaleness    int        `yaml:"max_staleness" default:"0" doc:"asynchronous training: the rollouts of the next k iterations are sampled while an update runs, and an update never learns from a turn sampled by a policy more than k versions old (0 = the synchronous loop; k > 0 also with data parallelism and with agent.command, but not with algorithm.dynamic_sampling on several ranks)"`
	Engine          string     `yaml:"engine" default:"builtin" enum:"builtin|vllm" doc:"the engine rollouts decode with: builtin (agentrl's own, in this binary) or vllm (an external vLLM server, rollout.vllm, given the policy's weights before every rollout: docs/rollout-engines.md)"`
	VLLM            VLLMConfig `yaml:"vllm" doc:"the vLLM server of rollout.engine vllm"`
}

// Samplings are the samplings rollouts send: the training draws' and the
// evaluations'.
func (r RolloutConfig) Samplings() []decoding.Sampling {
	return []decoding.Sampling{{Temperature: r.Temperature, TopK: r.TopK, TopP: r.TopP}, {Temperature: r.EvalTemperature}}
}

// VLLMConfig is the vLLM server of rollout.engine vllm: one already
// running at Address, or one the trainer starts with Command and
// supervises. Set with any other engine, it is refused.
type VLLMConfig struct {
	Address        string        `yaml:"address" default:"" doc:"base URL of the vLLM server (http://host:port): one already running, or where rollout.vllm.command listens"`
	Command        []string      `yaml:"command" default:"[]" doc:"the program and arguments that start the vLLM server (vllm serve MODEL --port N ...), run by the trainer in a process group of its own with its log in the run folder and stopped with the run (SIGTERM, then SIGKILL); [] = the server at rollout.vllm.address is already running"`
	StartupTimeout time.Duration `yaml:"startup_timeout" default:"10m" doc:"how long the trainer waits for the server to answer /health and /v1/models"`
	RequestTimeout time.Duration `yaml:"request_timeout" default:"10m" doc:"how long one request to the server (a generation, a weight update) may take before it is an error"`
	LoRA           string        `yaml:"lora" default:"merged" enum:"merged|adapters" doc:"with model.lora, how the policy reaches the server: merged (base plus adapters written as full weights and reloaded at every sync) or adapters (the server holds the base and loads the adapters as vLLM LoRA adapters at every sync, the completions naming them; it needs --enable-lora and a --max-lora-rank of at least model.lora.rank)"`
}

// AlgorithmConfig picks the advantage estimator and shapes the losses.
type AlgorithmConfig struct {
	Estimator string `yaml:"estimator" default:"grpo" doc:"advantage estimator: gae, grpo, rloo, reinforce_pp, reinforce_pp_baseline, gigpo (episode- plus anchor-state step-level advantages) or turn_rloo (per-turn returns with a leave-one-out per-turn baseline, for process rewards)"`
	// Options are the estimators' settings (gamma, lambda, norm_by_std,
	// eps, turn_gamma, step_weight, whiten, kl_coef, advantage_mask), keys
	// of this section.
	algo.Options `yaml:",inline"`
	// LossConfig is the losses' settings (policy_loss, clip_low,
	// clip_high, dual_clip, loss_agg, kl_estimator, kl_mode, entropy_coef,
	// vf_coef, value_clip), keys of this section, read where the losses
	// use them.
	algo.LossConfig `yaml:",inline"`
	Epochs          int     `yaml:"epochs" default:"1" doc:"passes over each iteration's batch"`
	MiniBatch       int     `yaml:"mini_batch" default:"32" doc:"trajectories per optimiser step"`
	MicroBatch      int     `yaml:"micro_batch" default:"8" doc:"trajectories per forward/backward pass (gradient accumulation)"`
	LossMask        bool    `yaml:"loss_mask" default:"true" doc:"count only policy-generated tokens in the losses"`
	PackSegments    bool    `yaml:"pack_segments" default:"true" doc:"train the segments of an episode whose context was rewritten (env.context, agent programs' ledger segments) packed: mini- and micro-batches keep an episode's segments together, and they run as one prefix tree per episode, their shared prefixes once, with the same losses and gradients as separate samples (docs/contexts.md); episodes of one segment run as before"`
	FilterKeepRatio float64 `yaml:"filter_keep_ratio" default:"1.0" doc:"fraction of groups kept, largest reward std first (1 = all)"`
	CriticWarmup    int     `yaml:"critic_warmup" default:"0" doc:"iterations training only the critic"`
	// RolloutCorrection corrects the policy gradient for the rollout
	// engine's distribution differing from the training forward's (see
	// Config.RolloutCorrection for auto).
	RolloutCorrection      string  `yaml:"rollout_correction" default:"auto" enum:"auto|off|tis|tis_seq|mis|mis_seq" doc:"correction of the rollout/training mismatch on the policy-gradient term: truncated importance sampling (weight min(r, C), r = pi_train/pi_behaviour, per token or per sequence) or masked importance sampling (tokens or sequences with r outside [1/C, C] dropped); auto = tis when rollout.dtype differs from device.dtype or rollout.max_staleness > 0 (turns sampled by older weights: decoupled PPO), else off"`
	RolloutCorrectionBound float64 `yaml:"rollout_correction_bound" default:"2.0" doc:"C of the rollout correction, and the bound the mismatch telemetry counts tokens beyond (> 1)"`
	MismatchWarnKL         float64 `yaml:"mismatch_warn_kl" default:"0.05" doc:"warn when an iteration's rollout/training mismatch KL exceeds this, which a correct pipeline never reaches (0 = never)"`
	RoutingReplay          bool    `yaml:"routing_replay" default:"false" doc:"mixture-of-experts policies: the rollout records the experts each token took at every sparse layer (stored with the trajectory), and the training forwards (the old logprobs' and the update's) route each token to those experts instead of their routers' top-k, weighted by the routers' probabilities of them, so that a router on a near tie cannot make training compute another distribution than the one that sampled (verl's routing replay); refused for dense models, agent programs (agent.command) and packed segments"`
	// OldLogprobs says where PPO's old logprobs come from (learner.Settings.OldLogprobs).
	OldLogprobs string `yaml:"old_logprobs" default:"auto" enum:"auto|recompute" doc:"where PPO's old logprobs come from: auto = from the training forward of the update's single optimizer step when the update is on-policy (epochs 1, mini_batch covering the batch, the policy training, no rollout correction, no KL in the reward, no LoRA dropout), skipping a no-gradient forward over the batch, else recomputed; recompute = always recomputed in a pass of their own before the step"`
	// OverlongFilter and OverlongBuffer are DAPO's overlong handling
	// (docs/algorithms.md).
	OverlongFilter bool                 `yaml:"overlong_filter" default:"false" doc:"DAPO's overlong filtering: episodes cut by the token budget (stop max_tokens) keep their place in their group's advantages but are masked out of the policy loss"`
	OverlongBuffer OverlongBufferConfig `yaml:"overlong_buffer" doc:"DAPO's soft overlong punishment (verl's overlong_buffer): a linear reward penalty over the last len tokens of env.max_tokens"`
	// DynamicSampling is DAPO's dynamic sampling (verl's filter_groups).
	DynamicSampling  bool `yaml:"dynamic_sampling" default:"false" doc:"DAPO's dynamic sampling: groups whose rewards all agree (zero variance) are dropped, and more prompts are drawn (rollout.batch_size at a time) until the batch has rollout.batch_size informative groups or algorithm.max_num_gen_batches draws were made"`
	MaxNumGenBatches int  `yaml:"max_num_gen_batches" default:"10" doc:"the most draws of rollout.batch_size prompts one iteration of dynamic sampling makes (DAPO's max_num_gen_batches, 1 to 100); at the cap it trains on the informative groups it has"`
	// NearMiss and NearMissSamples are the near-miss continuations
	// (algo.NearMisses, rollout.Prefix).
	NearMiss        bool `yaml:"near_miss" default:"false" doc:"near-miss continuations (David-GRPO's evidence-guided exploration): in each group of a draw, the wrong-answered episode that retrieved the most supporting passages is continued near_miss_samples more times from its last turn that retrieved a new one (its turns replayed as context, in no loss); the continuations join the group"`
	NearMissSamples int  `yaml:"near_miss_samples" default:"2" doc:"continuations of each near miss (algorithm.near_miss; 1 to rollout.slots)"`
}

// MaxPenaltyFactor bounds algorithm.overlong_buffer.penalty_factor: the
// penalty is added to rewards of order 1, and a factor near 1e154 would
// overflow a group's standard deviation.
const MaxPenaltyFactor = 100

// MaxGenBatches bounds algorithm.max_num_gen_batches, so that an iteration
// of dynamic sampling whose groups never vary ends (verl's 0 would draw
// without end).
const MaxGenBatches = 100

// OverlongBufferConfig is DAPO's soft overlong punishment, named as verl's
// reward_model.overlong_buffer: with L = len and Lmax = env.max_tokens,
// an episode of n tokens gets penalty_factor * clamp(((Lmax - L) - n) / L,
// -1, 0) added to its reward.
type OverlongBufferConfig struct {
	Enable        bool    `yaml:"enable" default:"false" doc:"add the soft overlong penalty to the rewards"`
	Len           int     `yaml:"len" default:"0" doc:"L, the buffer: the penalty grows linearly over the last L tokens of env.max_tokens (0 < L < env.max_tokens when enabled)"`
	PenaltyFactor float64 `yaml:"penalty_factor" default:"1.0" doc:"the penalty at the budget's end (0 to 100)"`
}

// On is the buffer length L the penalty runs over, 0 when it is off.
func (b OverlongBufferConfig) On() int {
	if !b.Enable {
		return 0
	}
	return b.Len
}

// OptimConfig sets the optimiser and its learning-rate schedule.
type OptimConfig struct {
	LR          float64 `yaml:"lr" default:"1e-4" doc:"policy learning rate"`
	CriticLR    float64 `yaml:"critic_lr" default:"5e-4" doc:"critic learning rate"`
	Beta1       float64 `yaml:"beta1" default:"0.9" doc:"Adam beta1"`
	Beta2       float64 `yaml:"beta2" default:"0.999" doc:"Adam beta2"`
	Eps         float64 `yaml:"eps" default:"1e-8" doc:"Adam epsilon"`
	WeightDecay float64 `yaml:"weight_decay" default:"0.0" doc:"decoupled weight decay"`
	WarmupSteps int     `yaml:"warmup_steps" default:"0" doc:"linear warm-up steps"`
	Schedule    string  `yaml:"schedule" default:"constant" enum:"constant|cosine|linear" doc:"learning-rate schedule after warm-up"`
	MinLRRatio  float64 `yaml:"min_lr_ratio" default:"0.1" doc:"final learning rate / lr for cosine and linear"`
	MaxGradNorm float64 `yaml:"max_grad_norm" default:"1.0" doc:"gradient-norm clip (0 = off)"`
}

// SFTConfig sets the supervised warm-up.
type SFTConfig struct {
	Data              string  `yaml:"data" default:"" doc:"demonstrations file (\"\" = scripted demonstrations of the synthetic world)"`
	WarmStart         string  `yaml:"warm_start" default:"calls" enum:"general|calls|follow|expert" doc:"what the synthetic world's scripted demonstrations teach: general skills (reading passages in the naive-RAG prompt, single searches of 1-hop questions; not the multi-hop search strategy), calls (general's, with a multi-hop question's first search and a search confirming a 1-hop answer's name; still no chain), follow (calls' with the confirmation replaced by a search for the question's text then the name it mentions, the answer read off the second result; still no chain) or the multi-hop expert (one search per hop)"`
	Epochs            int     `yaml:"epochs" default:"3" doc:"passes over the demonstrations"`
	LR                float64 `yaml:"lr" default:"1e-3" doc:"learning rate"`
	Schedule          string  `yaml:"schedule" default:"constant" enum:"constant|cosine|linear" doc:"learning-rate schedule after warm-up: constant, or down to 0 at the last step (cosine, linear)"`
	WarmupSteps       int     `yaml:"warmup_steps" default:"0" doc:"linear warm-up steps, at most the warm start's (sft.demos or sft.data's demonstrations over sft.batch, times sft.epochs)"`
	Batch             int     `yaml:"batch" default:"16" doc:"demonstrations per optimiser step"`
	Demos             int     `yaml:"demos" default:"25600" doc:"scripted demonstrations generated"`
	ImperfectFraction float64 `yaml:"imperfect_fraction" default:"0.3" doc:"fraction of the expert's demonstrations (sft.warm_start expert) that stop after the first hop and answer wrongly"`
}

// StoreConfig locates the trajectory store.
type StoreConfig struct {
	Path        string `yaml:"path" default:"" doc:"SQLite file (\"\" = <run.dir>/<run.name>/store.db)"`
	WriterDepth int    `yaml:"writer_depth" default:"2" doc:"iterations queued for the background writer"`
}

// LoggingConfig sets the log level and format.
type LoggingConfig struct {
	Level  string `yaml:"level" default:"info" enum:"trace|debug|info|warn|error" doc:"least severe level logged"`
	Format string `yaml:"format" default:"auto" enum:"auto|console|json" doc:"console on a terminal and JSON otherwise (auto), or forced"`
}

// EvalConfig sets evaluation.
type EvalConfig struct {
	Baselines bool `yaml:"baselines" default:"true" doc:"evaluate the baselines too (the initial policy before training)"`
	MaxEval   int  `yaml:"max_eval" default:"0" doc:"questions per evaluation pass (0 = all loaded)"`
	// Split is the in-domain split evaluated (config.EvalConfig docs).
	Split string `yaml:"split" default:"test" enum:"test|validation" doc:"in-domain split to evaluate: test, or the synthetic world's validation questions (data.synthetic.val_questions), for choosing settings before the test split is read; with validation the out-of-domain questions are not evaluated"`
}

// DistConfig sets data-parallel training across processes. Under torchrun,
// Slurm or Kubernetes the RANK, WORLD_SIZE, MASTER_ADDR and MASTER_PORT
// environment places each process and dist.nproc is not used.
type DistConfig struct {
	NProc             int           `yaml:"nproc" default:"1" doc:"local ranks that trainer train starts and supervises itself (1 = this process trains alone)"`
	Backend           string        `yaml:"backend" default:"auto" enum:"auto|gloo|nccl" doc:"collective backend: gloo on the CPU, nccl on CUDA (auto picks by device.device)"`
	Timeout           time.Duration `yaml:"timeout" default:"5m" doc:"how long ranks wait for each other at the rendezvous, and for a missing heartbeat, before the job stops with an error"`
	CollectiveTimeout time.Duration `yaml:"collective_timeout" default:"30m" doc:"how long one collective may wait for the other ranks (they wait there while rank 0 writes a checkpoint); a dead rank is found sooner, by its closed connections or its heartbeat"`
	BucketMB          float64       `yaml:"bucket_mb" default:"25" doc:"size of the flat buckets the gradient all-reduce sends, in MiB"`
	Zero              int           `yaml:"zero" default:"0" doc:"ZeRO stage: 0 keeps the whole optimizer state on every rank; 1 shards the f32 master weights and AdamW moments across the ranks; 2 reduce-scatters the gradients too (docs/distributed.md)"`
}

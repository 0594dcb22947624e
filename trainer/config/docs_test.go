package config

import (
	"slices"
	"strings"
	"testing"
)

// wantKeys lists every leaf key of the config, in file order, plus
// algorithm.eps and algorithm.whiten (the estimator options of
// trainer/algo), the reward names of envs/reward and
// rollout.deterministic (added by the RL loop), the external tools and
// rewards (with the keys of tools.mcp and tools.http entries). A new key
// goes here too.
var wantKeys = strings.Fields(`
run.name run.dir run.seed run.iterations run.eval_every run.save_every run.resume
device.device device.dtype device.threads device.autocast
model.path model.tiny.model_type model.tiny.hidden model.tiny.intermediate model.tiny.layers model.tiny.heads
model.tiny.kv_heads model.tiny.max_positions model.tiny.full_attention_interval model.tiny.linear_key_heads
model.tiny.linear_value_heads model.tiny.linear_key_dim model.tiny.linear_value_dim model.tiny.conv_kernel model.tiny.experts model.tiny.experts_per_token model.tiny.moe_intermediate model.tiny.moe_block model.tiny.nemotron_pattern model.critic model.critic_path model.checkpointing model.logits_chunk model.ref_path
model.lora.rank model.lora.alpha model.lora.dropout model.lora.target_modules model.lora.path model.lora.merge
model.chat.reasoning_effort model.chat.preserve_thinking
data.source data.train data.eval data.format data.max_train data.max_eval
data.synthetic.seed data.synthetic.relations data.synthetic.entities data.synthetic.max_hops data.synthetic.test_fraction data.synthetic.questions data.synthetic.ood_questions data.synthetic.val_questions
data.synthetic.fresh_worlds data.synthetic.eval_worlds
tools.enabled tools.schemas tools.search.index tools.search.k
tools.code.python tools.code.cpu_time tools.code.wall_time tools.code.memory_mb tools.code.processes
tools.code.disk_mb tools.code.max_output
tools.mcp tools.mcp[].name tools.mcp[].command tools.mcp[].args tools.mcp[].env tools.mcp[].url
tools.mcp[].headers tools.mcp[].tools tools.mcp[].prefix tools.mcp[].start_timeout tools.mcp[].max_message_mb
tools.http tools.http[].name tools.http[].url tools.http[].description tools.http[].parameters
tools.http[].headers tools.http[].retries tools.http[].cross_origin_redirects
env.max_turns env.max_tokens env.max_turn_tokens env.tool_timeout env.max_observation_chars env.context env.context_turns
env.rewards.scorer env.rewards.outcome env.rewards.format env.rewards.valid_call env.rewards.support
env.rewards.invalid_call env.rewards.repeat_call
env.rewards.external.command env.rewards.external.url env.rewards.external.timeout env.rewards.external.weight
env.rewards.external.max_output_mb
rollout.batch_size rollout.group_size rollout.slots rollout.temperature rollout.top_p rollout.top_k rollout.eval_temperature rollout.dtype rollout.deterministic
rollout.max_staleness
rollout.engine rollout.vllm.address rollout.vllm.command rollout.vllm.startup_timeout rollout.vllm.request_timeout rollout.vllm.lora
algorithm.estimator algorithm.gamma algorithm.lambda algorithm.norm_by_std algorithm.eps algorithm.turn_gamma
algorithm.step_weight algorithm.whiten
algorithm.kl_coef algorithm.advantage_mask
algorithm.policy_loss
algorithm.clip_low algorithm.clip_high algorithm.dual_clip algorithm.loss_agg
algorithm.kl_estimator algorithm.kl_mode algorithm.entropy_coef algorithm.vf_coef algorithm.value_clip
algorithm.epochs algorithm.mini_batch algorithm.micro_batch algorithm.loss_mask algorithm.pack_segments
algorithm.filter_keep_ratio algorithm.critic_warmup
algorithm.rollout_correction algorithm.rollout_correction_bound algorithm.mismatch_warn_kl algorithm.routing_replay algorithm.old_logprobs
algorithm.overlong_filter algorithm.overlong_buffer.enable algorithm.overlong_buffer.len algorithm.overlong_buffer.penalty_factor
algorithm.dynamic_sampling algorithm.max_num_gen_batches algorithm.near_miss algorithm.near_miss_samples
optim.lr optim.critic_lr optim.beta1 optim.beta2 optim.eps optim.weight_decay optim.warmup_steps
optim.schedule optim.min_lr_ratio optim.max_grad_norm
sft.data sft.warm_start sft.epochs sft.lr sft.schedule sft.warmup_steps sft.batch sft.demos sft.imperfect_fraction
store.path store.writer_depth
logging.level logging.format
eval.baselines eval.max_eval eval.split
dist.nproc dist.backend dist.timeout dist.collective_timeout dist.bucket_mb dist.zero
agent.command agent.dir agent.env agent.timeout agent.parallel agent.max_stdout agent.stderr_tail agent.model`)

func TestDocsCoverEveryKey(t *testing.T) {
	docs := Docs()
	var paths []string
	for _, d := range docs {
		paths = append(paths, d.Path)
		if d.Doc == "" || d.Type == "" || d.Default == "" {
			t.Errorf("%s: incomplete %+v", d.Path, d)
		}
	}
	if !slices.Equal(paths, wantKeys) {
		t.Errorf("Docs paths\n%q\nwant\n%q", paths, wantKeys)
	}
}

func TestDocsContent(t *testing.T) {
	byPath := map[string]KeyDoc{}
	for _, d := range Docs() {
		byPath[d.Path] = d
	}
	want := []KeyDoc{
		{Path: "env.tool_timeout", Type: "duration", Default: "5s"},
		{Path: "tools.enabled", Type: "list", Default: "[search]"},
		{Path: "model.path", Type: "string", Default: `""`},
		{Path: "optim.lr", Type: "float", Default: "1e-4"},
		{Path: "run.resume", Type: "bool", Default: "false"},
		{Path: "run.seed", Type: "int", Default: "1"},
	}
	for _, w := range want {
		got := byPath[w.Path]
		if got.Type != w.Type || got.Default != w.Default {
			t.Errorf("%s: type %q default %q, want %q %q", w.Path, got.Type, got.Default, w.Type, w.Default)
		}
	}
	if d := byPath["algorithm.kl_mode"].Doc; !strings.HasSuffix(d, "(one of loss, reward, off)") {
		t.Errorf("kl_mode doc %q does not list its values", d)
	}
}

func TestMarkdownTable(t *testing.T) {
	lines := strings.Split(strings.TrimSuffix(MarkdownTable(), "\n"), "\n")
	if len(lines) != 2+len(wantKeys) {
		t.Fatalf("%d lines, want header, rule and %d rows", len(lines), len(wantKeys))
	}
	if lines[0] != "| key | type | default | description |" {
		t.Errorf("header %q", lines[0])
	}
	for _, l := range lines[2:] {
		// 5 unescaped pipes make 4 cells
		if n := strings.Count(l, "|") - strings.Count(l, `\|`); n != 5 {
			t.Errorf("row has %d cell borders: %q", n, l)
		}
	}
	if !strings.Contains(MarkdownTable(), "| `algorithm.clip_high` | float | `0.28` | ratio clip above") {
		t.Error("clip_high row missing")
	}
}

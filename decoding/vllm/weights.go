package vllm

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
)

// The routes below are vLLM's RL routes (vllm/entrypoints/rl/online and
// vllm/entrypoints/serve/dev in vLLM 0.32), served only when the server
// runs with VLLM_SERVER_DEV_MODE=1 (DevModeEnv).

// PauseMode is how /pause treats the requests in flight.
type PauseMode string

// vLLM's pause modes.
const (
	// PauseAbort aborts the requests in flight.
	PauseAbort PauseMode = "abort"
	// PauseWait lets the requests in flight finish first.
	PauseWait PauseMode = "wait"
	// PauseKeep freezes them, to go on after /resume.
	PauseKeep PauseMode = "keep"
)

// Pause stops generation for a weight update (POST /pause?mode=...).
func (c *Client) Pause(ctx context.Context, mode PauseMode) error {
	_, err := c.post(ctx, "/pause?mode="+url.QueryEscape(string(mode)), nil)
	return err
}

// Resume starts generation again after Pause (POST /resume).
func (c *Client) Resume(ctx context.Context) error {
	_, err := c.post(ctx, "/resume", nil)
	return err
}

// rpcRequest is the body of POST /collective_rpc: a method every worker
// runs, its arguments strings.
type rpcRequest struct {
	Method string            `json:"method"`
	Kwargs map[string]string `json:"kwargs,omitempty"`
}

// ReloadWeights makes every worker load the weights of the Hugging Face
// checkpoint folder dir (safetensors; a path on the server's machine) in
// place of its own, through the workers' reload_weights (POST
// /collective_rpc). It is the weight update vLLM's CPU build supports: its
// weight-transfer backends all need CUDA.
func (c *Client) ReloadWeights(ctx context.Context, dir string) error {
	_, err := c.post(ctx, "/collective_rpc", rpcRequest{Method: "reload_weights", Kwargs: map[string]string{"weights_path": dir}})
	return err
}

// ResetPrefixCache drops the server's cached prefixes (POST
// /reset_prefix_cache): after new weights, a prefix cached under the old
// ones would be reused with their keys and values. vLLM refuses while
// blocks are still held by running requests; that is an error.
func (c *Client) ResetPrefixCache(ctx context.Context) error {
	raw, err := c.post(ctx, "/reset_prefix_cache", nil)
	if err != nil {
		return err
	}
	var r struct {
		Success *bool `json:"success"`
	}
	if err := json.Unmarshal(raw, &r); err != nil || r.Success == nil {
		return fmt.Errorf("vllm: POST %s/reset_prefix_cache: malformed response %s", c.base, errorMessage(raw))
	}
	if !*r.Success {
		return fmt.Errorf("vllm: POST %s/reset_prefix_cache: the server could not reset its prefix cache (requests still running)", c.base)
	}
	return nil
}

// SetWeightVersion names the weights the server holds (POST
// /update_weight_version).
func (c *Client) SetWeightVersion(ctx context.Context, version string) error {
	_, err := c.post(ctx, "/update_weight_version", struct {
		NewVersion string `json:"new_version"`
	}{version})
	return err
}

// WeightVersion is the name of the weights the server holds (GET
// /weight_info), empty when none was set.
func (c *Client) WeightVersion(ctx context.Context) (string, error) {
	raw, err := c.do(ctx, "GET", "/weight_info", nil)
	if err != nil {
		return "", err
	}
	var r struct {
		WeightVersion *string `json:"weight_version"`
	}
	if err := json.Unmarshal(raw, &r); err != nil {
		return "", fmt.Errorf("vllm: GET %s/weight_info: malformed response: %v", c.base, err)
	}
	if r.WeightVersion == nil {
		return "", nil
	}
	return *r.WeightVersion, nil
}

// SyncFromCheckpoint puts the weights of checkpoint folder dir into the
// server as version: generation paused (requests in flight finish first),
// the weights reloaded, the prefix cache dropped, the version set,
// generation resumed. A failure after the pause still resumes; the error
// is the first step's that failed.
func (c *Client) SyncFromCheckpoint(ctx context.Context, dir, version string) error {
	return c.sync(ctx, version, func() error { return c.ReloadWeights(ctx, dir) })
}

// SyncAdapter puts the LoRA adapters of the PEFT folder dir into the
// server under name, in place of the adapters of that name it holds, as
// version: as SyncFromCheckpoint, with LoadAdapter in place of the reload.
func (c *Client) SyncAdapter(ctx context.Context, name, dir, version string) error {
	return c.sync(ctx, version, func() error { return c.LoadAdapter(ctx, name, dir) })
}

// sync pauses generation (requests in flight finish first), runs load,
// drops the prefix cache, sets the weight version and resumes. A failure
// after the pause still resumes; the error is the first step's that
// failed.
func (c *Client) sync(ctx context.Context, version string, load func() error) (err error) {
	if err := c.Pause(ctx, PauseWait); err != nil {
		return err
	}
	defer func() {
		if rerr := c.Resume(ctx); err == nil {
			err = rerr
		}
	}()
	if err := load(); err != nil {
		return err
	}
	if err := c.ResetPrefixCache(ctx); err != nil {
		return err
	}
	return c.SetWeightVersion(ctx, version)
}

// LoadAdapter makes the server load the LoRA adapters of the PEFT folder
// dir (adapter_config.json, adapter_model.safetensors; a path on the
// server's machine) under name, replacing the adapters of that name it
// holds (POST /v1/load_lora_adapter with load_inplace). A completion
// naming name as its model then runs the server's weights with these
// adapters. The server must run with --enable-lora, a --max-lora-rank of
// at least their rank, and LoRAUpdateEnv.
func (c *Client) LoadAdapter(ctx context.Context, name, dir string) error {
	_, err := c.post(ctx, "/v1/load_lora_adapter", struct {
		Name        string `json:"lora_name"`
		Path        string `json:"lora_path"`
		LoadInplace bool   `json:"load_inplace"`
	}{name, dir, true})
	return err
}

// NCCLInit is the init_info of vLLM's NCCL weight-transfer backend
// (NCCLWeightTransferInitInfo) for a trainer that joins over a TCPStore
// rendezvous: the trainer is rank 0 of a group of WorldSize ranks, the
// server's workers ranks RankOffset and up.
type NCCLInit struct {
	MasterAddress string `json:"master_address"`
	MasterPort    int    `json:"master_port"`
	RankOffset    int    `json:"rank_offset"`
	WorldSize     int    `json:"world_size"`
	// Packed sends the tensors through a few reused buffers of
	// PackedBufferSizeBytes (0: vLLM's default) rather than one broadcast
	// each.
	Packed                bool `json:"packed"`
	PackedBufferSizeBytes int  `json:"packed_buffer_size_bytes,omitempty"`
	PackedNumBuffers      int  `json:"packed_num_buffers,omitempty"`
}

// NCCLUpdate is the update_info of one round of the NCCL backend
// (NCCLWeightTransferUpdateInfo): the tensors the trainer broadcasts next,
// in order, by checkpoint name, dtype name (float32, bfloat16, ...) and
// shape.
type NCCLUpdate struct {
	Names      []string  `json:"names"`
	DTypeNames []string  `json:"dtype_names"`
	Shapes     [][]int64 `json:"shapes"`
}

// InitWeightTransfer opens the transfer channel of the server's
// weight-transfer backend, once before training (POST
// /init_weight_transfer_engine). The server must have been started with
// --weight-transfer-config '{"backend": "nccl"}'.
func (c *Client) InitWeightTransfer(ctx context.Context, info NCCLInit) error {
	_, err := c.post(ctx, "/init_weight_transfer_engine", struct {
		InitInfo NCCLInit `json:"init_info"`
	}{info})
	return err
}

// StartWeightUpdate opens one weight update (POST /start_weight_update).
func (c *Client) StartWeightUpdate(ctx context.Context) error {
	_, err := c.post(ctx, "/start_weight_update", nil)
	return err
}

// UpdateWeights announces one chunk of the update (POST /update_weights);
// the workers then receive its tensors over the channel.
func (c *Client) UpdateWeights(ctx context.Context, u NCCLUpdate) error {
	if len(u.DTypeNames) != len(u.Names) || len(u.Shapes) != len(u.Names) {
		return fmt.Errorf("vllm: update weights: %d names, %d dtypes and %d shapes", len(u.Names), len(u.DTypeNames), len(u.Shapes))
	}
	_, err := c.post(ctx, "/update_weights", struct {
		UpdateInfo NCCLUpdate `json:"update_info"`
	}{u})
	return err
}

// FinishWeightUpdate closes the update and names the new weights version
// (POST /finish_weight_update).
func (c *Client) FinishWeightUpdate(ctx context.Context, version string) error {
	_, err := c.post(ctx, "/finish_weight_update", struct {
		WeightVersion string `json:"weight_version"`
	}{version})
	return err
}

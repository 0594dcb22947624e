package learner

import (
	"fmt"
	"path/filepath"
	"strconv"

	"github.com/agentrl/agentrl/torch"
	"github.com/agentrl/agentrl/torch/peft"
	"github.com/agentrl/agentrl/torch/safetensors"
)

// The files of a learner's state in a checkpoint folder.
const (
	optimizerFile       = "optimizer.safetensors"        // the policy's AdamW
	criticOptimizerFile = "critic_optimizer.safetensors" // a separate critic's AdamW
	criticDir           = "critic"                       // a separate critic, as a Hugging Face folder (LoRA: a PEFT adapter folder)
)

// CriticDir is where Save puts a separate critic's weights under dir.
func CriticDir(dir string) string { return filepath.Join(dir, criticDir) }

// OptimizerState is the optimizers' state, whole, as Save writes it.
type OptimizerState struct {
	policy, critic optimizerFileData
}

// optimizerFileData is one optimizer's safetensors file: its tensors and
// metadata.
type optimizerFileData struct {
	tensors []safetensors.Tensor
	meta    map[string]string
	done    func() // releases what the tensors' Fill holds
}

// write writes the file at path and releases what its tensors held.
func (f optimizerFileData) write(path string) error {
	if f.done != nil {
		defer f.done()
	}
	return safetensors.Write(path, f.tensors, f.meta)
}

// GatherOptimizers collects the optimizers' whole state for Save. With
// ZeRO each rank holds a range of it: every rank must call it (the ranges
// are gathered), and only rank 0 keeps the result; the others get an empty
// state. Without ZeRO the state is read as Save writes it, one parameter
// at a time, so Save must come before the next step. The file format is
// the same whatever the number of ranks.
func (l *Learner) GatherOptimizers() (*OptimizerState, error) {
	keep := l.dist.Leader()
	st := &OptimizerState{}
	var err error
	if st.policy, err = gatherOptimizer(l.opt, l.policy.Names(), keep); err != nil {
		return nil, err
	}
	if l.mode == SeparateCritic {
		if st.critic, err = gatherOptimizer(l.criticOpt, l.critic.Names(), keep); err != nil {
			return nil, err
		}
	}
	return st, nil
}

// Save writes the learner's state into the folder dir: the policy's
// optimizer state st (GatherOptimizers'), and a separate critic's weights
// and optimizer state. The policy's weights are the caller's to export
// (with its tokenizer).
func (l *Learner) Save(dir string, st *OptimizerState) error {
	if err := st.policy.write(filepath.Join(dir, optimizerFile)); err != nil {
		return err
	}
	if l.mode != SeparateCritic {
		return nil
	}
	if err := saveCritic(l.critic, CriticDir(dir)); err != nil {
		return err
	}
	return st.critic.write(filepath.Join(dir, criticOptimizerFile))
}

// Load restores the optimizer state Save wrote into dir and the number of
// policy steps taken (the schedule's position). The models' weights are
// read when the models are made (a separate critic from CriticDir).
func (l *Learner) Load(dir string, steps int) error {
	if err := loadOptimizer(l.opt, l.policy.Names(), filepath.Join(dir, optimizerFile)); err != nil {
		return err
	}
	if l.mode == SeparateCritic {
		if err := loadOptimizer(l.criticOpt, l.critic.Names(), filepath.Join(dir, criticOptimizerFile)); err != nil {
			return err
		}
	}
	l.steps = steps
	return nil
}

// saveCritic writes a separate critic as a Hugging Face folder, or a LoRA
// critic as a PEFT adapter folder (naming no base: it is the policy's).
func saveCritic(c *torch.Model, dir string) error {
	if c.LoRA() != nil {
		return peft.Save(dir, c, "")
	}
	return c.Save(dir)
}

// gatherOptimizer collects AdamW's moments as <param>.exp_avg/.exp_avg_sq
// tensors, a bf16/f16 parameter's f32 master weights as <param>.master,
// and each parameter's step count in the metadata; without keep it takes
// part in the gathering and keeps nothing. A sharded state (ZeRO) is
// gathered whole now, every rank taking part in each parameter's
// collective in turn. An unsharded one is only described: each tensor's
// bytes are copied out when Save writes it, so that a checkpoint holds one
// parameter's state at a time beside the optimizer's own.
func gatherOptimizer(o *torch.AdamW, names []string, keep bool) (optimizerFileData, error) {
	var f optimizerFileData
	if keep {
		f.meta = map[string]string{}
	}
	lazy := !o.Sharded()
	cache := &stateCache{o: o}
	for i, n := range names {
		st, err := o.State(i)
		if err != nil {
			return f, err
		}
		if !keep {
			st.Free()
			continue
		}
		f.meta[n] = strconv.FormatInt(st.Step, 10)
		for _, x := range []struct {
			suffix string
			kind   func(torch.ParamState) *torch.Tensor
		}{
			{".exp_avg", func(s torch.ParamState) *torch.Tensor { return s.M }},
			{".exp_avg_sq", func(s torch.ParamState) *torch.Tensor { return s.V }},
			{".master", func(s torch.ParamState) *torch.Tensor { return s.Master }},
		} {
			t := x.kind(st)
			if t == nil {
				continue
			}
			shape, err := t.Shape()
			if err != nil {
				st.Free()
				return f, err
			}
			ten := safetensors.Tensor{Name: n + x.suffix, DType: safetensors.F32, Shape: shape}
			if lazy {
				ten.Fill = func(dst []byte) error {
					s, err := cache.get(i)
					if err != nil {
						return err
					}
					return x.kind(s).CopyBytes(torch.Float32, dst)
				}
			} else if ten.Data, err = t.Bytes(torch.Float32); err != nil {
				st.Free()
				return f, err
			}
			f.tensors = append(f.tensors, ten)
		}
		st.Free()
	}
	f.done = cache.free
	return f, nil
}

// stateCache holds the state of the one parameter whose tensors Save is
// writing: its moments and master weights are written one after the
// other, and are fetched once.
type stateCache struct {
	o     *torch.AdamW
	i     int
	st    torch.ParamState
	valid bool
}

// get returns parameter i's state, fetching it unless it is held.
func (c *stateCache) get(i int) (torch.ParamState, error) {
	if c.valid && c.i == i {
		return c.st, nil
	}
	c.free()
	st, err := c.o.State(i)
	if err != nil {
		return st, err
	}
	c.i, c.st, c.valid = i, st, true
	return st, nil
}

// free releases the state held.
func (c *stateCache) free() {
	if c.valid {
		c.st.Free()
		c.valid = false
	}
}

// loadOptimizer reads the whole state into o, which keeps its range of it.
func loadOptimizer(o *torch.AdamW, names []string, path string) error {
	r, err := safetensors.Open(path)
	if err != nil {
		return fmt.Errorf("optimizer state: %w", err)
	}
	defer r.Close()
	meta := r.Metadata()
	for i, n := range names {
		steps, ok := meta[n]
		if !ok {
			return fmt.Errorf("optimizer state %s: no step count for %s", path, n)
		}
		step, err := strconv.ParseInt(steps, 10, 64)
		if err != nil {
			return fmt.Errorf("optimizer state %s: step of %s: %w", path, n, err)
		}
		if step == 0 {
			continue
		}
		read := func(name string) (*torch.Tensor, error) {
			info, ok := r.Info(name)
			if !ok {
				return nil, fmt.Errorf("optimizer state %s: tensor %s is missing", path, name)
			}
			b, err := r.Bytes(name)
			if err != nil {
				return nil, err
			}
			return torch.FromBytes(b, torch.Float32, torch.CPU, info.Shape...)
		}
		var st torch.ParamState
		st.Step = step
		if st.M, err = read(n + ".exp_avg"); err == nil {
			st.V, err = read(n + ".exp_avg_sq")
		}
		if _, ok := r.Info(n + ".master"); ok && err == nil {
			st.Master, err = read(n + ".master")
		}
		if err == nil {
			err = o.SetState(i, st)
		}
		st.Free()
		if err != nil {
			return fmt.Errorf("optimizer state %s: %s: %w", path, n, err)
		}
	}
	return nil
}

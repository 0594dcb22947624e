package models

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/agentrl/agentrl/internal/atomicfile"
	"github.com/agentrl/agentrl/trainer/config"
	"github.com/agentrl/agentrl/trainer/dist"
	"github.com/agentrl/agentrl/trainer/learner"
)

// A checkpoint is a folder <run>/checkpoints/iter-NNNNNN holding:
//
//	policy/                  the policy as a Hugging Face folder, with its tokenizer; with
//	                         model.lora a PEFT adapter folder (the base is model.path or <run>/base)
//	critic/                  a separate critic (value head in value_head.safetensors); with
//	                         model.lora its adapters as a PEFT folder
//	optimizer.safetensors    AdamW moments per parameter (<name>.exp_avg, .exp_avg_sq), the f32
//	                         master weights of bf16/f16 parameters (<name>.master), steps in the metadata
//	critic_optimizer.safetensors
//	state.json               iteration, data cursor and order, RNG state
//
// <run>/checkpoints/latest names the newest complete one. A checkpoint is
// written under a temporary name and renamed, and the folder latest names
// is never deleted or replaced while latest names it, so a kill at any
// moment leaves a run that resumes: from the old checkpoint or the new one.
// Should latest itself be broken (a damaged disk, a hand edit), a resume
// falls back, with a warning, to the newest complete iter-* folder.
const keepCheckpoints = 2

func checkpointsDir(run string) string { return filepath.Join(run, "checkpoints") }

// complete reports whether dir is a whole checkpoint: state.json is the
// last file written into it before it was renamed into place.
func complete(dir string) bool {
	_, err := os.Stat(filepath.Join(dir, "state.json"))
	return err == nil
}

// latestName returns the checkpoint name that <run>/checkpoints/latest
// holds, "" when there is no such file.
func latestName(run string) (string, error) {
	b, err := os.ReadFile(filepath.Join(checkpointsDir(run), "latest"))
	if os.IsNotExist(err) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	return strings.TrimSpace(string(b)), nil
}

// FindCheckpoint returns the checkpoint a resume of the run in folder run
// starts from: the one checkpoints/latest names when it is complete; when
// latest is missing, unreadable or names an incomplete or missing folder,
// the newest complete iter-* folder, with a warning saying so. It returns
// "" when the run has no complete checkpoint.
func FindCheckpoint(run string) (dir, warning string, err error) {
	root := checkpointsDir(run)
	name, err := latestName(run)
	if err == nil && name != "" && !strings.ContainsAny(name, `/\`) && strings.HasPrefix(name, "iter-") && complete(filepath.Join(root, name)) {
		return filepath.Join(root, name), "", nil
	}
	why := "it is missing"
	switch {
	case err != nil:
		why = err.Error()
	case name != "":
		why = fmt.Sprintf("it names %q, which is not a complete checkpoint", name)
	}
	names, derr := checkpointNames(root)
	if derr != nil && !os.IsNotExist(derr) {
		return "", "", derr
	}
	for i := len(names) - 1; i >= 0; i-- {
		if d := filepath.Join(root, names[i]); complete(d) {
			return d, fmt.Sprintf("%s/latest is broken (%s): resuming from the newest complete checkpoint, %s", root, why, names[i]), nil
		}
	}
	return "", "", nil
}

// Resume is the checkpoint the run in folder run starts from: with
// run.resume the one FindCheckpoint finds, and a warning when latest was
// broken; without, none, and a run that has checkpoints is refused. Rank
// 0 decides; the other ranks of g load the same checkpoint (a resumed
// multi-node run needs the run folder on a shared filesystem).
func Resume(cfg config.Config, run string, g *dist.Group) (ck, warning string, err error) {
	if g.Leader() {
		if ck, warning, err = FindCheckpoint(run); err != nil {
			return "", "", err
		}
		if !cfg.Run.Resume {
			warning = ""
		}
		if cfg.Run.Resume && ck == "" {
			return "", "", fmt.Errorf("run %s: --resume given but %s has no checkpoint", cfg.Run.Name, run)
		}
		if !cfg.Run.Resume && ck != "" {
			return "", "", fmt.Errorf("run %s already has checkpoints in %s: resume it with --resume, or choose another run.name", cfg.Run.Name, run)
		}
	}
	if ck, err = dist.FromLeader(g, ck); err != nil {
		return "", "", err
	}
	if ck != "" && !g.Leader() {
		if _, err := os.Stat(filepath.Join(ck, "state.json")); err != nil {
			return "", "", fmt.Errorf("rank %d cannot read rank 0's checkpoint (a resumed multi-node run needs the run folder on a shared filesystem): %w", g.Rank(), err)
		}
	}
	return ck, warning, nil
}

// checkpointNames lists the iter-* folders of root, oldest first.
func checkpointNames(root string) ([]string, error) {
	ents, err := os.ReadDir(root)
	if err != nil {
		return nil, err
	}
	var names []string
	for _, e := range ents {
		if e.IsDir() && strings.HasPrefix(e.Name(), "iter-") {
			names = append(names, e.Name())
		}
	}
	sort.Strings(names)
	return names, nil
}

// CheckpointStage, when set (by the kill tests), is called at each step
// of writing a checkpoint or the final policy, before the step is taken:
// "write", "rename", "latest", "prune", "final".
var CheckpointStage func(stage string)

func stage(name string) {
	if CheckpointStage != nil {
		CheckpointStage(name)
	}
}

// Checkpoint writes the checkpoint of iteration iter into the run's
// folder: the models with the optimizers' state opt (gathered whole), and
// state, the run state the trainer continues from, as state.json.
func (m *Set) Checkpoint(iter int, opt *learner.OptimizerState, state []byte) error {
	name := fmt.Sprintf("iter-%06d", iter)
	root := checkpointsDir(m.dir)
	final := filepath.Join(root, name)
	// A checkpoint of this iteration that latest already names holds this
	// very state (a stop right after a saved iteration saves it again):
	// it stays as it is, never deleted and rewritten under latest's feet.
	if latest, err := latestName(m.dir); err == nil && latest == name && complete(final) {
		return nil
	}
	tmp := filepath.Join(root, ".tmp-"+name)
	stage("write")
	if err := os.RemoveAll(tmp); err != nil {
		return err
	}
	if err := os.MkdirAll(tmp, 0o755); err != nil {
		return err
	}
	if err := m.save(tmp, opt); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(tmp, "state.json"), state, 0o644); err != nil {
		return err
	}
	stage("rename")
	// final is not what latest names (checked above): replacing it cannot
	// break a resume.
	if err := os.RemoveAll(final); err != nil {
		return err
	}
	if err := os.Rename(tmp, final); err != nil {
		return err
	}
	stage("latest")
	if err := atomicfile.Write(filepath.Join(root, "latest"), func(w io.Writer) error {
		_, err := io.WriteString(w, name+"\n")
		return err
	}); err != nil {
		return err
	}
	stage("prune")
	return pruneCheckpoints(root, name)
}

// pruneCheckpoints removes the oldest iter-* folders beyond
// keepCheckpoints, never keep (the one latest names).
func pruneCheckpoints(root, keep string) error {
	names, err := checkpointNames(root)
	if err != nil {
		return err
	}
	for len(names) > keepCheckpoints {
		if names[0] != keep {
			if err := os.RemoveAll(filepath.Join(root, names[0])); err != nil {
				return err
			}
		}
		names = names[1:]
	}
	return nil
}

package main

import (
	"fmt"
	"path/filepath"

	"github.com/urfave/cli/v2"

	"github.com/agentrl/agentrl/tokenizer"
	"github.com/agentrl/agentrl/trainer/config"
)

// The flags that locate things have one spelling each, in every
// subcommand:
//
//	--run-dir DIR     the folder holding the runs (the key run.dir)
//	--run NAME        the run (run.name)
//	--model DIR       the Hugging Face model folder, or a model id in the
//	                  local Hugging Face cache (model.path)
//	--resume          continue what was started (run.resume; a switch)
//	--adapter DIR     a PEFT LoRA adapter folder over --model
//	--tokenizer DIR   the tokenizer that shows a run's tokens as text
//	--store PATH      a trajectory store file, or a run folder holding one
//	                  (inspect: or a folder of runs); a store is never an
//	                  argument
//
// The commands that take the config's flags (train, sft, eval, experiment)
// get the first four from config.Flags under these same names
// (config.FlagName); the others, and every command the last three, build
// them with the constructors below.
var (
	flagRunDir    = config.FlagName("run.dir")
	flagRun       = config.FlagName("run.name")
	flagModel     = config.FlagName("model.path")
	flagResume    = config.FlagName("run.resume")
	flagAdapter   = "adapter"
	flagTokenizer = "tokenizer"
	flagStore     = "store"
)

// runDirFlag is --run-dir DIR, the folder holding the runs.
func runDirFlag() cli.Flag {
	return &cli.StringFlag{Name: flagRunDir, Value: config.Default().Run.Dir, Usage: "folder holding the runs", TakesFile: true}
}

// runFlag is --run NAME, the run a command works on, with its default
// ("" = none) and what the command does with it.
func runFlag(value, usage string) cli.Flag {
	return &cli.StringFlag{Name: flagRun, Value: value, Usage: usage}
}

// runsFlag is --run NAME, repeatable, for the commands that take several
// runs.
func runsFlag(usage string) cli.Flag {
	return &cli.StringSliceFlag{Name: flagRun, Usage: usage + " (repeatable)"}
}

// modelFlag is --model DIR, a Hugging Face model folder, with what the
// command does with it.
func modelFlag(usage string) cli.Flag {
	return &cli.StringFlag{Name: flagModel, Usage: usage, TakesFile: true}
}

// adapterFlag is --adapter DIR, a PEFT LoRA adapter folder, with what the
// command does with it after the folder's description.
func adapterFlag(does string) cli.Flag {
	return &cli.StringFlag{Name: flagAdapter, Usage: "PEFT LoRA adapter `DIR` (adapter_config.json, adapter_model.safetensors)" + does, TakesFile: true}
}

// tokenizerFlag is --tokenizer DIR, the tokenizer that shows the tokens of
// a run's store as text; runTokenizer loads it.
func tokenizerFlag() cli.Flag {
	return &cli.StringFlag{Name: flagTokenizer, Usage: "tokenizer `DIR` to show tokens as text (default: the run's final policy, when it has one; else ids)", TakesFile: true}
}

// runTokenizer is the tokenizer --tokenizer names, or by default the one
// of the final policy of the run whose store is store: nil when that has
// none (the tokens are then shown as ids). A --tokenizer that does not
// load is an error.
func runTokenizer(c *cli.Context, store string) (*tokenizer.Tokenizer, error) {
	if dir := c.String(flagTokenizer); dir != "" {
		tok, err := tokenizer.Load(dir)
		if err != nil {
			return nil, fmt.Errorf("--%s %s: %w", flagTokenizer, dir, err)
		}
		return tok, nil
	}
	tok, err := tokenizer.Load(filepath.Join(filepath.Dir(store), "final"))
	if err != nil {
		return nil, nil
	}
	return tok, nil
}

// storeFlag is --store PATH, the store a command reads, with its usage.
func storeFlag(usage string) cli.Flag {
	return &cli.StringFlag{Name: flagStore, Usage: usage, TakesFile: true}
}

// storesFlag is --store PATH, repeatable, for the commands that read
// several stores.
func storesFlag(usage string) cli.Flag {
	return &cli.StringSliceFlag{Name: flagStore, Usage: usage + " (repeatable)", TakesFile: true}
}

// renamedFlags are the spellings the locating flags had before, each with
// the flag that replaced it.
var renamedFlags = []struct {
	old, now string
	isBool   bool
}{
	{"runs", flagRunDir, false},
	{"of", flagRun, false},
	{"name", flagRun, false},
	{"run-name", flagRun, false},
	{"model-path", flagModel, false},
	{"run-resume", flagResume, true},
}

// refuseRenamed gives every command and subcommand a hidden flag for each
// old spelling it does not define itself: given, it is refused with an
// error naming the flag that replaced it, never ignored.
func refuseRenamed(cmds []*cli.Command) []*cli.Command {
	for _, cmd := range cmds {
		refuseRenamed(cmd.Subcommands)
		if cmd.Action == nil {
			continue
		}
		defined := map[string]bool{}
		for _, f := range cmd.Flags {
			for _, n := range f.Names() {
				defined[n] = true
			}
		}
		for _, r := range renamedFlags {
			if !defined[r.old] {
				cmd.Flags = append(cmd.Flags, renamedFlag(r.old, r.now, r.isBool))
			}
		}
	}
	return cmds
}

// renamedFlag is the hidden flag --old whose use is refused, naming --now.
func renamedFlag(old, now string, isBool bool) cli.Flag {
	refuse := func(c *cli.Context) error {
		return fmt.Errorf("%s: --%s was renamed: use --%s", c.Command.FullName(), old, now)
	}
	if isBool {
		return &cli.BoolFlag{Name: old, Hidden: true, Action: func(c *cli.Context, _ bool) error { return refuse(c) }}
	}
	return &cli.StringFlag{Name: old, Hidden: true, Action: func(c *cli.Context, _ string) error { return refuse(c) }}
}

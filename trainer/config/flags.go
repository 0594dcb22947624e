package config

import (
	"fmt"
	"reflect"
	"strings"
	"time"

	"github.com/urfave/cli/v2"
)

// Names of the flags that are not keys.
const (
	FlagConfig = "config" // --config FILE: the YAML file read over the defaults
	FlagSet    = "set"    // --set key=value, repeatable: applied last, in order
)

// flagNames are the flags of the keys that locate things, named as every
// trainer subcommand names them (cmd/trainer's table of locating flags):
// the run is --run, its model --model, resuming it --resume; the runs'
// folder, run.dir, is --run-dir by the rule.
var flagNames = map[string]string{
	"run.name":   "run",
	"run.resume": "resume",
	"model.path": "model",
}

// flagAliases are short names of the most used keys.
var flagAliases = map[string][]string{
	"run.seed":            {"seed"},
	"run.iterations":      {"iterations"},
	"device.device":       {"device"},
	"device.threads":      {"threads"},
	"algorithm.estimator": {"estimator"},
	"dist.nproc":          {"nproc"},
}

// FlagName is the flag of a key: its dotted path with dots and
// underscores turned into dashes (algorithm.clip_high ->
// algorithm-clip-high), except the keys of flagNames (run.name -> run).
func FlagName(path string) string {
	if name, ok := flagNames[path]; ok {
		return name
	}
	return strings.NewReplacer(".", "-", "_", "-").Replace(path)
}

// Flags returns --config, --set and one flag per key (see FlagName), with
// the key's doc as usage, its default as default text and its section as
// category. Pass them to a cli.Command and read them back with ApplyFlags.
func Flags() []cli.Flag {
	flags := []cli.Flag{
		&cli.StringFlag{Name: FlagConfig, Usage: "YAML config `FILE` read over the defaults", TakesFile: true},
		&cli.GenericFlag{Name: FlagSet, Usage: "override a key, e.g. --set algorithm.clip_high=0.3 (repeatable; applied last)", Value: &setList{}},
	}
	c := Default()
	for _, k := range leaves(reflect.ValueOf(&c).Elem(), "") {
		flags = append(flags, keyFlag(k))
	}
	return flags
}

// keyFlag is the typed flag of the leaf key k.
func keyFlag(k node) cli.Flag {
	name, aliases := FlagName(k.path), flagAliases[k.path]
	usage := k.field.Tag.Get("doc")
	if e := enumOf(k.field); e != nil {
		usage += " (one of " + strings.Join(e, ", ") + ")"
	}
	def := k.field.Tag.Get("default")
	if def == "" {
		def = `""`
	}
	category, _, _ := strings.Cut(k.path, ".")
	if isEntryList(k.value.Type()) {
		return &cli.StringFlag{Name: name, Aliases: aliases, Usage: usage + " (a YAML flow list, e.g. [{name: a, command: b}])", DefaultText: def, Category: category}
	}
	switch k.value.Interface().(type) {
	case bool:
		return &cli.BoolFlag{Name: name, Aliases: aliases, Usage: usage, DefaultText: def, Category: category}
	case int:
		return &cli.IntFlag{Name: name, Aliases: aliases, Usage: usage, DefaultText: def, Category: category}
	case float64:
		return &cli.Float64Flag{Name: name, Aliases: aliases, Usage: usage, DefaultText: def, Category: category}
	case time.Duration:
		return &cli.DurationFlag{Name: name, Aliases: aliases, Usage: usage, DefaultText: def, Category: category}
	case []string:
		return &cli.StringSliceFlag{Name: name, Aliases: aliases, Usage: usage + " (comma-separated or repeated)", DefaultText: def, Category: category}
	}
	return &cli.StringFlag{Name: name, Aliases: aliases, Usage: usage, DefaultText: def, Category: category}
}

// ApplyFlags applies the command line to cfg (normally Default()) in
// order of precedence: the --config file, then every key flag that was
// given, then each --set in order. It does not validate: call
// cfg.Validate afterwards. On error cfg may hold the steps already
// applied.
func ApplyFlags(c *cli.Context, cfg *Config) error {
	if c.IsSet(FlagConfig) {
		if err := cfg.Merge(c.String(FlagConfig)); err != nil {
			return err
		}
	}
	root := reflect.ValueOf(cfg).Elem()
	for _, k := range leaves(root, "") {
		name := FlagName(k.path)
		if !c.IsSet(name) {
			continue
		}
		if isEntryList(k.value.Type()) {
			if err := setValue(root, k, c.String(name)); err != nil {
				return fmt.Errorf("--%s: %w", name, err)
			}
			continue
		}
		var v any
		switch k.value.Interface().(type) {
		case bool:
			v = c.Bool(name)
		case int:
			v = c.Int(name)
		case float64:
			v = c.Float64(name)
		case time.Duration:
			v = c.Duration(name)
		case []string:
			v = c.StringSlice(name)
		default:
			v = c.String(name)
		}
		k.value.Set(reflect.ValueOf(v))
	}
	if s, ok := c.Generic(FlagSet).(*setList); ok {
		for _, expr := range *s {
			if err := cfg.Set(expr); err != nil {
				return fmt.Errorf("--%s: %w", FlagSet, err)
			}
		}
	}
	return nil
}

// setList collects repeated --set values verbatim: unlike a string-slice
// flag it never splits at commas, so flow lists such as [a, b] survive.
type setList []string

// Set appends one --set value.
func (s *setList) Set(v string) error {
	*s = append(*s, v)
	return nil
}

// String lists the values given so far.
func (s *setList) String() string {
	return strings.Join(*s, " ")
}

package main

import (
	"fmt"

	"github.com/urfave/cli/v2"

	"github.com/agentrl/agentrl/trainer/config"
)

// configFlags are --config, --set and one flag per config key.
func configFlags() []cli.Flag { return config.Flags() }

func configCommand() *cli.Command {
	return &cli.Command{
		Name:  "config",
		Usage: "show the configuration keys, or check a config file",
		Subcommands: []*cli.Command{
			{
				Name:  "print",
				Usage: "print every key with its default and doc (--markdown for the table in docs/configuration.md, --yaml for a full default file)",
				Flags: []cli.Flag{
					&cli.BoolFlag{Name: "markdown", Usage: "print a Markdown table"},
					&cli.BoolFlag{Name: "yaml", Usage: "print the default config as YAML"},
				},
				Action: func(c *cli.Context) error {
					switch {
					case c.Bool("markdown"):
						fmt.Print(config.MarkdownTable())
					case c.Bool("yaml"):
						y, err := config.Default().YAML()
						if err != nil {
							return err
						}
						fmt.Print(string(y))
					default:
						for _, d := range config.Docs() {
							fmt.Printf("%-36s %-9s %-14s %s\n", d.Path, d.Type, d.Default, d.Doc)
						}
					}
					return nil
				},
			},
			{
				Name:      "check",
				Usage:     "validate a config FILE (unknown keys, types, ranges) and print the effective config",
				ArgsUsage: "FILE",
				Action: func(c *cli.Context) error {
					if c.NArg() != 1 {
						return exitErr("config check: give one config FILE")
					}
					cfg, err := config.Load(c.Args().First())
					if err != nil {
						return err
					}
					if err := cfg.Validate(); err != nil {
						return fmt.Errorf("%s: %w", c.Args().First(), err)
					}
					y, err := cfg.YAML()
					if err != nil {
						return err
					}
					fmt.Print(string(y))
					fmt.Printf("# %s: ok\n", c.Args().First())
					return nil
				},
			},
		},
	}
}

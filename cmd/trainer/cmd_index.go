package main

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/agentrl/agentrl/envs/tools/search"
	"github.com/agentrl/agentrl/internal/progress"
)

func indexCommand() *cli.Command {
	return &cli.Command{
		Name:  "index",
		Usage: "build a BM25 (SQLite FTS5) search index from a passage corpus",
		Description: "The corpus is JSONL with one {\"title\": ..., \"text\": ...} per line, or one of the layouts of\n" +
			"HotpotQA ({title: [sentences]}), 2WikiMultihopQA ([{title, text}]) or FlashRAG ({id, contents}).\n\n" +
			"Example:\n  trainer index --corpus data/hotpotqa_corpus.json --out runs/hotpot.db",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "corpus", Required: true, Usage: "passage corpus `FILE`", TakesFile: true},
			&cli.StringFlag{Name: "out", Required: true, Usage: "index `DB` to write (replaced atomically; an existing file must be a search index)"},
		},
		Action: func(c *cli.Context) error {
			corpus, out := c.String("corpus"), c.String("out")
			if sameFile(corpus, out) {
				return exitErr("index: --out %s is the corpus %s: write the index to another file", out, corpus)
			}
			if err := search.CanReplace(out); err != nil {
				return fmt.Errorf("index: %w", err)
			}
			ps, err := search.LoadCorpus(corpus)
			if err != nil {
				return err
			}
			bar := progress.New(os.Stderr, "indexing", len(ps))
			err = search.BuildIndex(c.Context, out, ps, func(done, total int) { bar.Set(done) })
			bar.Done()
			if err != nil {
				return err
			}
			fmt.Printf("indexed %d passages from %s into %s\n", len(ps), corpus, out)
			return nil
		},
	}
}

// sameFile reports whether paths a and b name one existing file, under
// the same name or not (a link).
func sameFile(a, b string) bool {
	fa, err := os.Stat(a)
	if err != nil {
		return false
	}
	fb, err := os.Stat(b)
	return err == nil && os.SameFile(fa, fb)
}

func searchCommand() *cli.Command {
	return &cli.Command{
		Name:      "search",
		Usage:     "query a search index, to inspect the retriever",
		ArgsUsage: "QUERY",
		Description: "Example:\n  trainer search --index runs/hotpot.db --k 5 \"who directed the film\"\n" +
			"  trainer search --index runs/hotpot.db --json \"Paris\" | jq .title",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "index", Required: true, Usage: "index `DB` built by trainer index", TakesFile: true},
			&cli.IntFlag{Name: "k", Value: 5, Usage: "number of passages"},
			&cli.BoolFlag{Name: "json", Usage: "one JSON object per hit: title, text, score"},
		},
		Action: func(c *cli.Context) error {
			q := strings.Join(c.Args().Slice(), " ")
			if q == "" {
				return exitErr("search: give a QUERY")
			}
			idx, err := search.Open(c.String("index"))
			if err != nil {
				return err
			}
			defer idx.Close()
			hits, err := idx.Search(c.Context, q, c.Int("k"))
			if err != nil {
				return err
			}
			enc := json.NewEncoder(os.Stdout)
			for i, h := range hits {
				if c.Bool("json") {
					if err := enc.Encode(map[string]any{"title": h.Title, "text": h.Text, "score": h.Score}); err != nil {
						return err
					}
					continue
				}
				fmt.Printf("%d. %s  (score %.3f)\n   %s\n", i+1, h.Title, h.Score, h.Text)
			}
			if len(hits) == 0 && !c.Bool("json") {
				fmt.Println("no results")
			}
			return nil
		},
	}
}

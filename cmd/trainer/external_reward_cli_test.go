package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A tiny training run scored also by an external command
// (examples/rewards/turn_cost.py: -0.1 per assistant turn): its
// reward and component are stored with the built-in ones, and the outcome
// is EM + 0.1 x format + the external reward, for every trajectory.
func TestTrainWithExternalReward(t *testing.T) {
	if _, err := os.Stat("/usr/bin/python3"); err != nil {
		t.Skip("the example scorer needs /usr/bin/python3")
	}
	script, err := filepath.Abs("../../examples/rewards/turn_cost.py")
	if err != nil {
		t.Fatal(err)
	}
	runs := filepath.Join(workDir, "runs")
	args := append([]string{"train", "--run-dir", runs, "--run", "external"}, tinyRun...)
	args = append(args, "--set", "env.rewards.external.command=[/usr/bin/python3, "+script+"]", "--set", "eval.baselines=false")
	ok(t, args...)
	store := filepath.Join(runs, "external", "store.db")
	// Turns counted from the turns table, independently of the script;
	// every trajectory checked, and the tiny model's episodes have 1 or 2
	// turns, so the check tells them apart.
	q := `SELECT COUNT(*),
	  SUM(json_extract(components, '$."external.turns"') = (SELECT COUNT(*) FROM turns u WHERE u.tid = t.tid)),
	  SUM(ABS(json_extract(components, '$.external') + 0.1 * (SELECT COUNT(*) FROM turns u WHERE u.tid = t.tid)) < 1e-9),
	  SUM(ABS(outcome - json_extract(components, '$.em') - 0.1 * json_extract(components, '$.format') - json_extract(components, '$.external')) < 1e-9),
	  SUM(json_extract(components, '$.external_failed') IS NULL),
	  COUNT(DISTINCT n_turns)
	FROM trajectories t`
	out := lines(ok(t, "rollouts", "sql", "--store", store, q).stdout)
	f := strings.Fields(out[len(out)-1])
	if len(f) != 6 || f[0] == "0" || f[1] != f[0] || f[2] != f[0] || f[3] != f[0] || f[4] != f[0] || f[5] == "1" {
		t.Fatalf("want all %s trajectories scored by the command:\n%s", f[0], strings.Join(out, "\n"))
	}
}

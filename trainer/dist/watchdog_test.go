package dist

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/agentrl/agentrl/torch"
)

const watchTimeout = 3 * time.Second

// TestHeartbeatFindsDeadRank: two ranks join and then compute without any
// collective (a long rollout, say); one is killed. The other must learn it
// from the heartbeat alone, within the timeout (rank 1 killed: its counter
// stops) or at once (rank 0 killed: the store it serves is gone).
func TestHeartbeatFindsDeadRank(t *testing.T) {
	if err := torch.Check(); err != nil {
		t.Skipf("libtorch shim not available: %v", err)
	}
	for _, victim := range []int{1, 0} {
		t.Run(fmt.Sprintf("kill rank %d", victim), func(t *testing.T) {
			port, err := FreePort()
			if err != nil {
				t.Fatal(err)
			}
			type proc struct {
				cmd    *exec.Cmd
				joined chan struct{}
				done   chan string // the last line it printed
			}
			var ps []*proc
			for r := 0; r < 2; r++ {
				cmd := exec.Command(os.Args[0], "-test.run=^TestHeartbeatRank$")
				cmd.Env = append(os.Environ(), Env{Rank: r, World: 2, LocalRank: r, LocalWorld: 2, MasterAddr: "127.0.0.1", MasterPort: port}.Vars()...)
				cmd.Env = append(cmd.Env, "AGENTRL_HEARTBEAT_TEST=1")
				out, err := cmd.StdoutPipe()
				if err != nil {
					t.Fatal(err)
				}
				cmd.Stderr = cmd.Stdout
				if err := cmd.Start(); err != nil {
					t.Fatal(err)
				}
				p := &proc{cmd: cmd, joined: make(chan struct{}), done: make(chan string, 1)}
				go func() {
					sc := bufio.NewScanner(out)
					last := ""
					for sc.Scan() {
						if sc.Text() == "joined" {
							close(p.joined)
						}
						last = sc.Text()
					}
					_ = cmd.Wait()
					p.done <- last
				}()
				ps = append(ps, p)
				defer cmd.Process.Kill()
			}
			for _, p := range ps {
				select {
				case <-p.joined:
				case <-time.After(30 * time.Second):
					t.Fatal("ranks did not join")
				}
			}
			time.Sleep(watchTimeout / 2) // a few heartbeats go by
			if err := ps[victim].cmd.Process.Kill(); err != nil {
				t.Fatal(err)
			}
			killed := time.Now()
			select {
			case last := <-ps[1-victim].done:
				took := time.Since(killed)
				t.Logf("rank %d stopped %s after rank %d was killed: %s", 1-victim, took.Round(time.Millisecond), victim, last)
				if code := ps[1-victim].cmd.ProcessState.ExitCode(); code != 3 || !strings.HasPrefix(last, "lost: ") {
					t.Errorf("exit %d, last line %q: want the heartbeat's report", code, last)
				}
				if took > watchTimeout+5*time.Second {
					t.Errorf("took %s with a %s timeout", took, watchTimeout)
				}
			case <-time.After(watchTimeout + 20*time.Second):
				t.Fatalf("rank %d still runs after rank %d was killed", 1-victim, victim)
			}
		})
	}
}

// TestHeartbeatRank is one rank of TestHeartbeatFindsDeadRank: it joins,
// then idles without collectives until the heartbeat ends it.
func TestHeartbeatRank(t *testing.T) {
	if os.Getenv("AGENTRL_HEARTBEAT_TEST") == "" {
		t.Skip("a rank of TestHeartbeatFindsDeadRank, run in its own process")
	}
	env, _, err := FromEnv()
	if err != nil {
		t.Fatal(err)
	}
	g, err := Join(env, Options{Backend: "gloo", Device: torch.CPU, Timeout: watchTimeout, Log: zerolog.Nop(),
		OnLost: func(err error) { fmt.Println("lost: " + err.Error()); os.Exit(3) }})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	fmt.Println("joined")
	time.Sleep(time.Minute)
	fmt.Println("rank " + strconv.Itoa(env.Rank) + " was never told")
}

// TestAgentStore: under torchrun the launcher's agent already serves the
// store at MASTER_ADDR:MASTER_PORT (TORCHELASTIC_USE_AGENT_STORE=True), so
// no rank may serve it; every rank joins as a client, with its keys under
// the attempt's prefix. Here the test serves the store, as the agent does.
func TestAgentStore(t *testing.T) {
	if err := torch.Check(); err != nil {
		t.Skipf("libtorch shim not available: %v", err)
	}
	port, err := FreePort()
	if err != nil {
		t.Fatal(err)
	}
	agent, err := torch.NewKVStore("127.0.0.1", port, true, 0, 30*time.Second, "")
	if err != nil {
		t.Fatal(err)
	}
	defer agent.Close()
	var cmds []*exec.Cmd
	for r := 0; r < 2; r++ {
		cmd := exec.Command(os.Args[0], "-test.run=^TestAgentStoreRank$", "-test.v")
		cmd.Env = append(os.Environ(), Env{Rank: r, World: 2, LocalRank: r, LocalWorld: 2, MasterAddr: "127.0.0.1", MasterPort: port}.Vars()...)
		cmd.Env = append(cmd.Env, "AGENTRL_AGENT_STORE_TEST=1", "TORCHELASTIC_USE_AGENT_STORE=True", "TORCHELASTIC_RESTART_COUNT=3")
		cmds = append(cmds, cmd)
	}
	outs := make([][]byte, 2)
	errs := make([]error, 2)
	done := make(chan int, 2)
	for r, cmd := range cmds {
		go func(r int, cmd *exec.Cmd) { outs[r], errs[r] = cmd.CombinedOutput(); done <- r }(r, cmd)
	}
	<-done
	<-done
	for r := range cmds {
		if errs[r] != nil || !strings.Contains(string(outs[r]), "--- PASS: TestAgentStoreRank") {
			t.Fatalf("rank %d: %v\n%s", r, errs[r], outs[r])
		}
	}
	// Both ranks left their marks under the attempt's prefix.
	for r := 0; r < 2; r++ {
		if v, err := agent.Add(fmt.Sprintf("/worker/attempt_3/%s", finishedKey(r)), 0); err != nil || v != 1 {
			t.Errorf("rank %d's finished mark under /worker/attempt_3: %d, %v", r, v, err)
		}
	}
}

// TestAgentStoreRank is one rank of TestAgentStore.
func TestAgentStoreRank(t *testing.T) {
	if os.Getenv("AGENTRL_AGENT_STORE_TEST") == "" {
		t.Skip("a rank of TestAgentStore, run in its own process")
	}
	env, _, err := FromEnv()
	if err != nil {
		t.Fatal(err)
	}
	if !env.AgentStore || env.RestartCount != 3 {
		t.Fatalf("env %+v: want the agent store, attempt 3", env)
	}
	g, err := Join(env, Options{Backend: "gloo", Device: torch.CPU, Timeout: 30 * time.Second, Log: zerolog.Nop()})
	if err != nil {
		t.Fatal(err)
	}
	v := []float64{float64(env.Rank + 1)}
	if err := g.Sum(v); err != nil || v[0] != 3 {
		t.Fatalf("sum = %v, %v; want 1+2", v, err)
	}
	if err := g.Close(); err != nil {
		t.Fatal(err)
	}
}
